import CaptureSet

/// What a baseline trace file keeps beside it (`<file>.index`, e.g. `baseline/ingest.jsonl.index`)
/// so a replay that agrees with its baseline is checked without reading the baseline's lines: a
/// fingerprint of the trace file it indexes (``ContentFingerprint``), and for each line its length and the
/// ``TraceEventDigest`` of its event. A replayed event whose digest is the next entry's is that
/// line's event; the line is neither read nor parsed.
///
/// The JSON Lines file stays the source of truth: an index whose recorded fingerprint is not the
/// trace file's (the trace was edited, or written by something else) is not used, and the
/// comparison reads the trace as it would without one. The first event whose digest differs
/// sends the comparison back to the trace file at that line, so a difference is reported exactly
/// as without an index. `tether replay --update-baseline` writes both.
///
/// Layout (all integers little-endian):
/// - the 24 bytes `TETHER-BASELINE-INDEX 1\n`;
/// - the trace file's fingerprint as 16 lower-case hex digits, then `\n`;
/// - the number of entries, u64;
/// - per entry (one per trace line, in order): the line's length in bytes with its newline, u32,
///   then the event's digest, u64.
public struct BaselineIndex: Sendable, Equatable {
    /// What an index file's name adds to its trace file's.
    public static let fileSuffix = ".index"
    static let magic = Array("TETHER-BASELINE-INDEX 1\n".utf8)
    static let headerBytes = magic.count + 17 + 8
    static let entryBytes = 12

    /// The ``ContentFingerprint`` of the trace file indexed.
    public var traceFingerprint: UInt64
    /// Each line's length in bytes, its newline included.
    public var lineLengths: [UInt32]
    /// Each line's event digest.
    public var digests: [UInt64]

    /// `value` as 16 lower-case hex digits.
    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The index file of the trace file at `tracePath`.
    public static func path(forTrace tracePath: String) -> String { tracePath + fileSuffix }

    /// An index of the lines described.
    public init(traceFingerprint: UInt64, lineLengths: [UInt32], digests: [UInt64]) {
        self.traceFingerprint = traceFingerprint
        self.lineLengths = lineLengths
        self.digests = digests
    }

    /// The index file's bytes.
    public func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.reserveCapacity(Self.headerBytes + Self.entryBytes * digests.count)
        bytes += Array(Self.hex(traceFingerprint).utf8)
        bytes.append(0x0A)
        func put<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        put(UInt64(digests.count))
        for (length, digest) in zip(lineLengths, digests) {
            put(length)
            put(digest)
        }
        return bytes
    }

    /// Why an index file cannot be used.
    public struct Unusable: Error, Sendable, Equatable, CustomStringConvertible {
        /// The index file.
        public var path: String
        /// What is wrong with it.
        public var reason: String
        /// `path: reason`.
        public var description: String { "\(path): \(reason)" }
    }

    /// Reads index bytes, checked whole: the header, and exactly as many entries as it says.
    public static func decode(_ bytes: [UInt8], path: String) throws(Unusable) -> BaselineIndex {
        guard bytes.count >= headerBytes, bytes.starts(with: magic) else {
            throw Unusable(path: path, reason: "not a baseline index (it does not start with \"TETHER-BASELINE-INDEX 1\")")
        }
        let hex = bytes[magic.count..<(magic.count + 16)]
        guard hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }), bytes[magic.count + 16] == 0x0A,
              let fingerprint = UInt64(String(decoding: hex, as: UTF8.self), radix: 16) else {
            throw Unusable(path: path, reason: "byte \(magic.count): expected the trace's fingerprint as 16 lower-case hex digits and a newline")
        }
        func load<T: FixedWidthInteger>(_ offset: Int, as: T.Type) -> T {
            bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
        }
        let count = load(magic.count + 17, as: UInt64.self)
        let available = UInt64(bytes.count - headerBytes) / UInt64(entryBytes)
        guard count == available, (bytes.count - headerBytes) % entryBytes == 0 else {
            throw Unusable(path: path, reason: "the header says \(count) entries, the file holds \(bytes.count - headerBytes) bytes of entries (\(entryBytes) each)")
        }
        var lengths: [UInt32] = []
        var digests: [UInt64] = []
        lengths.reserveCapacity(Int(count))
        digests.reserveCapacity(Int(count))
        var offset = headerBytes
        for _ in 0..<Int(count) {
            lengths.append(load(offset, as: UInt32.self))
            digests.append(load(offset + 4, as: UInt64.self))
            offset += entryBytes
        }
        return BaselineIndex(traceFingerprint: fingerprint, lineLengths: lengths, digests: digests)
    }

    /// What ``load(forTrace:)`` found.
    public enum Lookup: Sendable, Equatable {
        /// The index is there and describes the trace file as it is.
        case current(BaselineIndex)
        /// The trace file has no index beside it.
        case absent
        /// There is one, and it cannot be used (why): the trace is read without it.
        case unusable(Unusable)
    }

    /// The index beside the trace file at `tracePath`, checked against the file's fingerprint.
    public static func load(forTrace tracePath: String) -> Lookup {
        let indexPath = path(forTrace: tracePath)
        guard FileIO.exists(indexPath) else { return .absent }
        let index: BaselineIndex
        do {
            index = try decode(try FileIO.readAll(indexPath), path: indexPath)
        } catch let error as Unusable {
            return .unusable(error)
        } catch {
            return .unusable(Unusable(path: indexPath, reason: "\(error)"))
        }
        let fingerprint: UInt64
        do {
            fingerprint = try ContentFingerprint.of(file: tracePath)
        } catch {
            return .unusable(Unusable(path: indexPath, reason: "its trace file cannot be read: \(error)"))
        }
        guard fingerprint == index.traceFingerprint else {
            return .unusable(Unusable(path: indexPath, reason: "it indexes another version of \(tracePath) (fingerprint \(hex(index.traceFingerprint)), the file's is \(hex(fingerprint))); `tether replay --update-baseline` writes both anew"))
        }
        return .current(index)
    }

    /// Writes the index of the trace file at `tracePath` beside it, from the lines' lengths and
    /// their events' digests as they were written (``TraceFileWriter``'s ``TraceFileWriter/lineIndex``).
    public static func write(forTrace tracePath: String, lineLengths: [UInt32], digests: [UInt64]) throws(CaptureSetError) {
        let index = BaselineIndex(traceFingerprint: try ContentFingerprint.of(file: tracePath), lineLengths: lineLengths, digests: digests)
        try CaptureSetDirectory.writeAtomically(index.encoded(), to: path(forTrace: tracePath))
    }
}
