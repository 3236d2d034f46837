/// Block types and option codes of pcapng (draft-ietf-opsawg-pcapng).
enum PcapngBlock {
    static let sectionHeader: UInt32 = 0x0A0D_0D0A
    static let interfaceDescription: UInt32 = 0x0000_0001
    static let simplePacket: UInt32 = 0x0000_0003
    static let nameResolution: UInt32 = 0x0000_0004
    static let interfaceStatistics: UInt32 = 0x0000_0005
    static let enhancedPacket: UInt32 = 0x0000_0006
    static let decryptionSecrets: UInt32 = 0x0000_000A
    static let custom: UInt32 = 0x0000_0BAD
    static let customNoCopy: UInt32 = 0x4000_0BAD
    static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    static let optEndOfOpt: UInt16 = 0
    static let optComment: UInt16 = 1
    static let optCustomUTF8: UInt16 = 2988
    static let optCustomBinary: UInt16 = 2989
    static let optCustomUTF8NoCopy: UInt16 = 19372
    static let optCustomBinaryNoCopy: UInt16 = 19373
    static let shbUserAppl: UInt16 = 4
    static let ifName: UInt16 = 2
    static let ifDescription: UInt16 = 3
    static let ifTsresol: UInt16 = 9
    static let ifTsoffset: UInt16 = 14
    static let epbFlags: UInt16 = 2
    static let isbIfRecv: UInt16 = 4
    static let isbIfDrop: UInt16 = 5
    static let isbOsDrop: UInt16 = 7
}

/// Turns a pcapng interface's timestamp ticks into ns since the Unix epoch.
struct TickConversion: Sendable {
    enum Scale: Sendable {
        /// ns exactly (if_tsresol 9): kept as the bit pattern so that any Int64 round-trips.
        case identity
        case multiply(Int64)
        case divide(UInt64)
        /// 2^-n seconds per tick.
        case powerOfTwo(Int)
    }
    var scale: Scale
    var offsetNs: Int64
    var nanosecondsPerTick: Double

    /// From the raw `if_tsresol` byte (6 when absent).
    init(tsresol: UInt8, offsetSeconds: Int64) {
        offsetNs = saturatingNs(offsetSeconds, times: 1_000_000_000)
        if tsresol & 0x80 == 0 {
            let exponent = Int(tsresol)
            if exponent == 9 {
                scale = .identity
            } else if exponent < 9 {
                var m: Int64 = 1
                for _ in exponent..<9 { m &*= 10 }
                scale = .multiply(m)
            } else {
                var d: UInt64 = 1
                var overflow = false
                for _ in 9..<exponent {
                    let (r, o) = d.multipliedReportingOverflow(by: 10)
                    if o { overflow = true; break }
                    d = r
                }
                scale = .divide(overflow ? 0 : d)
            }
            var perTick = 1e9
            for _ in 0..<exponent { perTick /= 10 }
            nanosecondsPerTick = perTick
        } else {
            let exponent = Int(tsresol & 0x7F)
            scale = .powerOfTwo(exponent)
            var perTick = 1e9
            for _ in 0..<exponent { perTick /= 2 }
            nanosecondsPerTick = perTick
        }
    }

    @inline(__always)
    func nanoseconds(_ ticks: UInt64) -> Int64 {
        let base: Int64
        switch scale {
        case .identity:
            base = Int64(bitPattern: ticks)
        case .multiply(let m):
            base = ticks > UInt64(Int64.max) ? Int64.max : saturatingNs(Int64(ticks), times: m)
        case .divide(let d):
            let q = d == 0 ? 0 : ticks / d
            base = q > UInt64(Int64.max) ? Int64.max : Int64(q)
        case .powerOfTwo(let n):
            // ticks * 1e9 / 2^n in 128 bits, so no tick count can overflow.
            let (high, low) = ticks.multipliedFullWidth(by: 1_000_000_000)
            let q: UInt64
            if n == 0 {
                q = high != 0 ? UInt64.max : low
            } else if n < 64 {
                let shiftedHigh = high >> UInt64(n)
                q = shiftedHigh != 0 ? UInt64.max : (low >> UInt64(n)) | (high << UInt64(64 - n))
            } else {
                q = n >= 128 ? 0 : high >> UInt64(n - 64)
            }
            base = q > UInt64(Int64.max) ? Int64.max : Int64(q)
        }
        if offsetNs == 0 { return base }
        let (s, o) = base.addingReportingOverflow(offsetNs)
        return o ? (offsetNs < 0 ? Int64.min : Int64.max) : s
    }
}

/// Reads pcapng: one or more sections, each a Section Header Block followed by interface, packet,
/// statistics and other blocks, in that section's byte order.
///
/// - Interfaces of every section are numbered globally in ``interfaces`` (a new Section Header
///   resets the per-section interface ids, as the format says); frames are numbered from 1 across
///   the whole file.
/// - Enhanced Packet Blocks give frames with comments, custom options (2988/2989/19372/19373) and
///   `epb_flags`. Simple Packet Blocks belong to interface 0 of their section and carry no
///   timestamp: the frame gets the previous frame's timestamp (0 if it is the first frame).
/// - Interface Statistics Blocks update their interface's ``CaptureInterface/statistics``.
/// - Name Resolution, Decryption Secrets, Custom and unknown blocks are skipped and counted in
///   ``skippedBlockCount``; an unknown block type also gives one `.skippedUnknown` warning.
/// - Interfaces may have different link types, and unknown link types are read like any other.
///
/// Use a reader from one thread at a time. Its stored state is `@exclusivity(unchecked)`, since the
/// runtime checks cost about 40% of the read rate: nothing calls back into a reader while it
/// parses (the `withNextFrame` body runs once parsing is done), so no two accesses overlap.
public final class PcapngReader: CaptureReader {
    public let format = CaptureFormat.pcapng
    public var path: String { input.name }
    @exclusivity(unchecked) public private(set) var interfaces: [CaptureInterface] = []
    @exclusivity(unchecked) public private(set) var warnings: [CaptureWarning] = []
    public var bytesRead: UInt64 { input.offset }
    /// Blocks skipped because they carry nothing a frame needs (NRB, DSB, Custom, unknown types).
    @exclusivity(unchecked) public private(set) var skippedBlockCount = 0
    /// Section Header Blocks seen so far.
    @exclusivity(unchecked) public private(set) var sectionCount = 0

    private let input: ByteInput
    @exclusivity(unchecked) private var bigEndian = false
    @exclusivity(unchecked) private var sectionInterfaces: [Int] = []
    @exclusivity(unchecked) private var conversions: [TickConversion] = []
    @exclusivity(unchecked) private var warnedUnknownTypes: Set<UInt32> = []
    @exclusivity(unchecked) private var blockNumber = 0
    @exclusivity(unchecked) private var frameNumber = 0
    @exclusivity(unchecked) private var lastTimestamp: Int64 = 0
    @exclusivity(unchecked) private var finished = false

    @exclusivity(unchecked) private var currentInterface = 0
    @exclusivity(unchecked) private var currentTimestamp: Int64 = 0
    @exclusivity(unchecked) private var currentOriginal = 0
    @exclusivity(unchecked) private var currentData = UnsafeRawBufferPointer(start: nil, count: 0)
    @exclusivity(unchecked) private var currentComments: [String] = []
    @exclusivity(unchecked) private var currentCustom: [CustomOption] = []
    @exclusivity(unchecked) private var currentFlags: UInt32?

    /// Opens the file at `path`.
    public convenience init(path: String) throws(CaptureError) {
        try self.init(input: ByteInput(path: path))
    }

    /// Reads a file already in memory; `name` is used in messages.
    public convenience init(bytes: [UInt8], name: String = "<memory>") throws(CaptureError) {
        try self.init(input: ByteInput(bytes: bytes, name: name))
    }

    init(input: ByteInput) throws(CaptureError) {
        self.input = input
        if try input.ensure(4), load32(input.pointer, 0, false) != PcapngBlock.sectionHeader {
            throw CaptureError(
                kind: .unrecognizedFormat, file: input.name, offset: 0, recordNumber: 1,
                expected: "a pcapng Section Header Block (0a 0d 0d 0a)", found: hexBytes(input.pointer, count: 4),
                hint: "Open the file with CaptureFile.open, which detects pcap, btsnoop and PacketLogger too.")
        }
    }

    private func error(
        _ kind: CaptureError.Kind, at offset: UInt64, _ expected: String, _ found: String,
        hint: String = "The file is damaged here; every frame before this offset is intact (Wireshark's `editcap -r` can cut the file before it)."
    ) -> CaptureError {
        CaptureError(
            kind: kind, file: input.name, offset: offset, recordNumber: blockNumber, expected: expected,
            found: found, hint: hint)
    }

    private func end(needed: Int) -> Bool {
        finished = true
        if input.available > 0 {
            warnings.append(input.truncationWarning(recordName: "block", number: blockNumber &+ 1, needed: needed))
        }
        return false
    }

    /// Walks the options in `[start, start+count)` of a block at `blockStart`.
    @inline(__always)
    private func forEachOption(
        _ base: UnsafeRawPointer, from start: Int, to limit: Int, blockStart: UInt64,
        _ body: (UInt16, UnsafeRawBufferPointer, Int) throws(CaptureError) -> Void
    ) throws(CaptureError) {
        var at = start
        while at < limit {
            if limit &- at < 4 {
                throw error(.malformed, at: blockStart &+ UInt64(at), "an option header (4 bytes)",
                            "\(limit &- at) bytes left in the block")
            }
            let code = load16(base, at, bigEndian)
            let length = Int(load16(base, at &+ 2, bigEndian))
            if code == PcapngBlock.optEndOfOpt { return }
            let padded = (length &+ 3) & ~3
            if padded > limit &- at &- 4 {
                throw error(.malformed, at: blockStart &+ UInt64(at),
                            "option \(code) to fit in its block (\(limit &- at &- 4) bytes left)",
                            "a length of \(length)")
            }
            try body(code, UnsafeRawBufferPointer(start: base + at + 4, count: length), at)
            at &+= 4 &+ padded
        }
    }

    private func text(_ value: UnsafeRawBufferPointer, at offset: UInt64, what: String) throws(CaptureError) -> String {
        guard let s = String(validating: value, as: UTF8.self) else {
            throw error(.invalidText, at: offset, "\(what) in UTF-8", "bytes that are not UTF-8 (\(hexBytes(Array(value.prefix(16)))))",
                        hint: "Fix the text in the writing tool, or strip the comments with `editcap --discard-all-packet-comments`.")
        }
        return s
    }

    /// Parses blocks until the next frame; `collect` says whether to build comments and options
    /// (the `withNextFrame` path only validates them, so it never allocates).
    private func advance(collect: Bool) throws(CaptureError) -> Bool {
        if finished { return false }
        while true {
            guard try input.ensure(8) else { return end(needed: 8) }
            let blockStart = input.offset
            let type = load32(input.pointer, 0, bigEndian)
            if type == PcapngBlock.sectionHeader {
                guard try input.ensure(12) else { return end(needed: 12) }
                let magic = load32(input.pointer, 8, false)
                if magic == PcapngBlock.byteOrderMagic {
                    bigEndian = false
                } else if magic == PcapngBlock.byteOrderMagic.byteSwapped {
                    bigEndian = true
                } else {
                    blockNumber &+= 1
                    throw error(.malformed, at: blockStart &+ 8, "the byte-order magic 1a 2b 3c 4d (either order)",
                                hexBytes(input.pointer + 8, count: 4))
                }
            } else if sectionCount == 0 {
                blockNumber &+= 1
                throw error(.malformed, at: blockStart, "a Section Header Block (0a 0d 0d 0a) first",
                            "block type 0x\(String(type, radix: 16))")
            }
            let total32 = load32(input.pointer, 4, bigEndian)
            let minimum: UInt32
            switch type {
            case PcapngBlock.sectionHeader: minimum = 28
            case PcapngBlock.interfaceDescription: minimum = 20
            case PcapngBlock.enhancedPacket: minimum = 32
            case PcapngBlock.simplePacket: minimum = 16
            case PcapngBlock.interfaceStatistics: minimum = 24
            default: minimum = 12
            }
            if total32 < minimum || total32 % 4 != 0 || total32 > UInt32(maxRecordLength) {
                blockNumber &+= 1
                throw error(.malformed, at: blockStart &+ 4,
                            "a block length that is a multiple of 4 between \(minimum) and \(maxRecordLength) for block type 0x\(String(type, radix: 16))",
                            "\(total32)")
            }
            let total = Int(total32)
            guard try input.ensure(total) else { return end(needed: total) }
            blockNumber &+= 1
            let p = UnsafeRawPointer(input.pointer)
            let trailer = load32(p, total &- 4, bigEndian)
            if trailer != total32 {
                throw error(.malformed, at: blockStart &+ UInt64(total &- 4),
                            "the trailing block length to repeat the leading one (\(total32))", "\(trailer)")
            }
            switch type {
            case PcapngBlock.sectionHeader:
                try readSectionHeader(p, total: total, at: blockStart)
            case PcapngBlock.interfaceDescription:
                try readInterfaceDescription(p, total: total, at: blockStart)
            case PcapngBlock.enhancedPacket:
                try readEnhancedPacket(p, total: total, at: blockStart, collect: collect)
                input.consume(total)
                return true
            case PcapngBlock.simplePacket:
                try readSimplePacket(p, total: total, at: blockStart)
                input.consume(total)
                return true
            case PcapngBlock.interfaceStatistics:
                try readStatistics(p, total: total, at: blockStart)
            case PcapngBlock.nameResolution, PcapngBlock.decryptionSecrets, PcapngBlock.custom, PcapngBlock.customNoCopy:
                skippedBlockCount &+= 1
            default:
                skippedBlockCount &+= 1
                if warnedUnknownTypes.count < 64, warnedUnknownTypes.insert(type).inserted {
                    warnings.append(CaptureWarning(
                        kind: .skippedUnknown, file: input.name, offset: blockStart,
                        message: "skipped block type 0x\(String(type, radix: 16)) (block \(blockNumber)), which Tether does not know; later blocks of this type are skipped silently"))
                }
            }
            input.consume(total)
        }
    }

    private func readSectionHeader(_ p: UnsafeRawPointer, total: Int, at blockStart: UInt64) throws(CaptureError) {
        let major = load16(p, 12, bigEndian)
        if major != 1 {
            throw error(.malformed, at: blockStart &+ 12, "pcapng major version 1", "version \(major).\(load16(p, 14, bigEndian))",
                        hint: "This pcapng version is not one Tether reads; re-save the file with Wireshark.")
        }
        sectionCount &+= 1
        sectionInterfaces.removeAll(keepingCapacity: true)
        // Section options (comments, user application) are walked to reject damage, not kept.
        try forEachOption(p, from: 24, to: total &- 4, blockStart: blockStart) { _, _, _ throws(CaptureError) in }
    }

    private func readInterfaceDescription(_ p: UnsafeRawPointer, total: Int, at blockStart: UInt64) throws(CaptureError) {
        var interface = CaptureInterface(
            linkType: LinkType(rawValue: UInt32(load16(p, 8, bigEndian))), snapLength: load32(p, 12, bigEndian),
            nanosecondsPerTick: 1000, section: sectionCount &- 1)
        var tsresol: UInt8 = 6
        var tsoffset: Int64 = 0
        try forEachOption(p, from: 16, to: total &- 4, blockStart: blockStart) { code, value, at throws(CaptureError) in
            let optionOffset = blockStart &+ UInt64(at)
            switch code {
            case PcapngBlock.optComment:
                interface.comments.append(try text(value, at: optionOffset, what: "an interface comment"))
            case PcapngBlock.ifName:
                interface.name = try text(value, at: optionOffset, what: "if_name")
            case PcapngBlock.ifDescription:
                interface.description = try text(value, at: optionOffset, what: "if_description")
            case PcapngBlock.ifTsresol:
                if value.count < 1 {
                    throw error(.malformed, at: optionOffset, "an if_tsresol of 1 byte", "an empty option")
                }
                tsresol = value[0]
            case PcapngBlock.ifTsoffset:
                if value.count < 8 {
                    throw error(.malformed, at: optionOffset, "an if_tsoffset of 8 bytes", "\(value.count) bytes")
                }
                tsoffset = Int64(bitPattern: load64(value.baseAddress!, 0, bigEndian))
            default:
                break
            }
        }
        let conversion = TickConversion(tsresol: tsresol, offsetSeconds: tsoffset)
        interface.nanosecondsPerTick = conversion.nanosecondsPerTick
        sectionInterfaces.append(interfaces.count)
        interfaces.append(interface)
        conversions.append(conversion)
    }

    private func globalInterface(_ local: UInt32, at offset: UInt64) throws(CaptureError) -> Int {
        guard local < UInt32(sectionInterfaces.count) else {
            throw error(.unknownInterface, at: offset,
                        "an interface id below \(sectionInterfaces.count) (the interfaces this section described so far)",
                        "interface id \(local)",
                        hint: "The file refers to an interface it never described; it was written wrongly or an Interface Description Block is missing.")
        }
        return sectionInterfaces[Int(local)]
    }

    private func readEnhancedPacket(_ p: UnsafeRawPointer, total: Int, at blockStart: UInt64, collect: Bool) throws(CaptureError) {
        let interface = try globalInterface(load32(p, 8, bigEndian), at: blockStart &+ 8)
        let ticks = UInt64(load32(p, 12, bigEndian)) << 32 | UInt64(load32(p, 16, bigEndian))
        let captured = load32(p, 20, bigEndian)
        let room = total &- 32
        if captured > UInt32(room) {
            throw error(.malformed, at: blockStart &+ 20, "a captured length that fits in the block (at most \(room))", "\(captured)")
        }
        let capturedLength = Int(captured)
        currentInterface = interface
        currentTimestamp = conversions[interface].nanoseconds(ticks)
        currentOriginal = Int(load32(p, 24, bigEndian))
        currentData = UnsafeRawBufferPointer(start: p + 28, count: capturedLength)
        currentFlags = nil
        if collect {
            currentComments.removeAll()
            currentCustom.removeAll()
        }
        let optionsStart = 28 &+ ((capturedLength &+ 3) & ~3)
        try forEachOption(p, from: optionsStart, to: total &- 4, blockStart: blockStart) { code, value, at throws(CaptureError) in
            switch code {
            case PcapngBlock.optComment:
                let comment = try text(value, at: blockStart &+ UInt64(at), what: "a packet comment")
                if collect { currentComments.append(comment) }
            case PcapngBlock.epbFlags:
                if value.count < 4 {
                    throw error(.malformed, at: blockStart &+ UInt64(at), "epb_flags of 4 bytes", "\(value.count) bytes")
                }
                currentFlags = load32(value.baseAddress!, 0, bigEndian)
            case PcapngBlock.optCustomUTF8, PcapngBlock.optCustomBinary,
                 PcapngBlock.optCustomUTF8NoCopy, PcapngBlock.optCustomBinaryNoCopy:
                if value.count < 4 {
                    throw error(.malformed, at: blockStart &+ UInt64(at),
                                "a custom option starting with a 4-byte Private Enterprise Number", "\(value.count) bytes")
                }
                if collect {
                    currentCustom.append(CustomOption(
                        privateEnterpriseNumber: load32(value.baseAddress!, 0, bigEndian),
                        value: Array(value[4...]),
                        isUTF8: code == PcapngBlock.optCustomUTF8 || code == PcapngBlock.optCustomUTF8NoCopy))
                }
            default:
                break
            }
        }
        frameNumber &+= 1
        lastTimestamp = currentTimestamp
    }

    private func readSimplePacket(_ p: UnsafeRawPointer, total: Int, at blockStart: UInt64) throws(CaptureError) {
        guard let interface = sectionInterfaces.first else {
            throw error(.unknownInterface, at: blockStart, "an Interface Description Block before a Simple Packet Block",
                        "a Simple Packet Block in a section with no interface",
                        hint: "The file was written wrongly: a Simple Packet Block belongs to interface 0 of its section.")
        }
        let original = load32(p, 8, bigEndian)
        var captured = min(Int(original), total &- 16)
        let snap = interfaces[interface].snapLength
        if snap > 0 { captured = min(captured, Int(snap)) }
        currentInterface = interface
        currentTimestamp = lastTimestamp
        currentOriginal = Int(original)
        currentData = UnsafeRawBufferPointer(start: p + 12, count: captured)
        currentFlags = nil
        currentComments.removeAll()
        currentCustom.removeAll()
        frameNumber &+= 1
    }

    private func readStatistics(_ p: UnsafeRawPointer, total: Int, at blockStart: UInt64) throws(CaptureError) {
        let interface = try globalInterface(load32(p, 8, bigEndian), at: blockStart &+ 8)
        let ticks = UInt64(load32(p, 12, bigEndian)) << 32 | UInt64(load32(p, 16, bigEndian))
        var stats = interfaces[interface].statistics
        stats.timestampNs = conversions[interface].nanoseconds(ticks)
        try forEachOption(p, from: 20, to: total &- 4, blockStart: blockStart) { code, value, at throws(CaptureError) in
            switch code {
            case PcapngBlock.isbIfRecv, PcapngBlock.isbIfDrop, PcapngBlock.isbOsDrop:
                if value.count < 8 {
                    throw error(.malformed, at: blockStart &+ UInt64(at), "a 64-bit counter in option \(code)", "\(value.count) bytes")
                }
                let n = load64(value.baseAddress!, 0, bigEndian)
                if code == PcapngBlock.isbIfRecv { stats.received = n }
                else if code == PcapngBlock.isbIfDrop { stats.interfaceDropped = n }
                else { stats.osDropped = n }
            default:
                break
            }
        }
        interfaces[interface].statistics = stats
    }

    public func next() throws(CaptureError) -> CaptureFrame? {
        guard try advance(collect: true) else { return nil }
        return CaptureFrame(
            number: frameNumber, interfaceIndex: currentInterface, timestampNs: currentTimestamp,
            originalLength: currentOriginal, data: Array(currentData), comments: currentComments,
            customOptions: currentCustom, flags: currentFlags)
    }

    public func withNextFrame(_ body: (FrameView) throws -> Void) throws -> Bool {
        guard try advance(collect: false) else { return false }
        try body(FrameView(
            number: frameNumber, interfaceIndex: currentInterface, timestampNs: currentTimestamp,
            originalLength: currentOriginal, data: currentData, flags: currentFlags))
        return true
    }
}
