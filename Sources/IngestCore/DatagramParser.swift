/// Parses datagrams for ``IngestCore``: two fast paths for the data messages a plugin sends
/// all the time, and the general reader for everything else.
///
/// 1. ``ShapeTemplate``: when the datagram is laid out like one of the last data datagrams the
///    scanner read (the same bytes around its time and payloads, names and types included), its
///    time and payloads are found by comparing those bytes, and its names and types are the layout's.
/// 2. ``DataMessageScanner``: a single pass over a data message of the common form (one-letter
///    members, plain ASCII strings), which becomes the new template.
/// 3. The strings found are decoded — sample time, base64 straight into ``ParsedDatagram``'s
///    payload buffer, payload by its type, names and types from the layout or ``EntryTextCache`` — with no
///    error text and no allocation but for values that need one (text, opaque bytes).
///
/// When a fast path steps aside (another kind of message or layout, or anything at all that is
/// wrong), the general reader (``MotionMessage/parseWithGeneralReader(_:texts:)``) parses the
/// datagram from the start: every rejection, with its reason, offset and expectation, comes from
/// it alone, and the fast paths accept only what it accepts, with the same result
/// (`ParserFastPathTests` checks both on mutated datagrams).
///
/// Public only as an SPI, for `TetherBench parse-plugin`, which times parsing without streams.
@_spi(Benchmarks)
public struct DatagramParser: Sendable {
    /// The last datagram's result; valid after ``parse(_:)`` returns.
    private(set) var output = ParsedDatagram()
    private var texts = EntryTextCache()
    private var template = ShapeTemplate()
    private var spans: [Range<Int>] = []
    private var order: [Int] = []

    /// How many datagrams each path has taken (the fast paths count accepted datagrams, the
    /// general reader every datagram it parsed): lets the tests show that the paths they compare
    /// were taken at all.
    struct PathCounts: Sendable, Hashable {
        var template = 0
        var scanner = 0
        var general = 0
    }
    private(set) var pathCounts = PathCounts()

    /// Whether the template fast path runs (benchmarks turn it off to time the others).
    @_spi(Benchmarks) public var usesTemplate = true
    /// Whether the scanner fast path runs; without it (and the template) only the general reader does.
    @_spi(Benchmarks) public var usesScanner = true

    /// A parser with nothing cached.
    @_spi(Benchmarks) public init() {}

    /// Parses one datagram into ``output``. The caller has already checked its size.
    mutating func parse(_ datagram: UnsafeRawBufferPointer) throws(MotionMessage.Rejection) {
        if usesTemplate, let layout = template.match(datagram, spans: &spans) {
            // A datagram laid out as a layout whose strings do not decode is the general reader's
            // to refuse: the scanner would find the same strings.
            if Self.decodeData(datagram, spans: spans, entryCount: template.layouts[layout].entryCount, layout: layout,
                               template: template, texts: &texts, into: &output) {
                output.layoutIdentity = template.layouts[layout].identity
                pathCounts.template &+= 1
                return
            }
        } else if usesScanner, let entryCount = DataMessageScanner.scan(datagram, spans: &spans, order: &order),
                  Self.decodeData(datagram, spans: spans, entryCount: entryCount, layout: nil, template: template, texts: &texts, into: &output) {
            pathCounts.scanner &+= 1
            if usesTemplate { template.record(datagram, spans: spans, order: order, entryCount: entryCount) }
            return
        }
        pathCounts.general &+= 1
        output.layoutIdentity = 0
        output.set(try MotionMessage.parseWithGeneralReader(datagram, texts: &texts))
    }

    /// Parses one datagram; returns its number of data points (0 for an accepted message of
    /// another kind) or -1 when it is rejected.
    @_spi(Benchmarks) public mutating func pointCount(parsing datagram: UnsafeRawBufferPointer) -> Int {
        do throws(MotionMessage.Rejection) {
            try parse(datagram)
        } catch {
            return -1
        }
        if case .data = output.kind { return output.entries.count }
        return 0
    }

    /// Decodes the strings a fast path found into `output`; false when any of them is not what
    /// the general reader would accept (it then says why). With `layout` (the template path), the
    /// entries' names and types are that layout's; without, they are read from their slots.
    private static func decodeData(
        _ datagram: UnsafeRawBufferPointer, spans: [Range<Int>], entryCount: Int, layout: Int?, template: ShapeTemplate,
        texts: inout EntryTextCache, into output: inout ParsedDatagram
    ) -> Bool {
        @inline(__always) func text(_ slot: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: datagram[spans[slot]])
        }
        guard case .success(let timeNs) = SampleTime.parseNanoseconds(text(0)) else { return false }
        // Worked on as locals: the closure below may not reach into `output` while it holds the buffer.
        var payloadBytes: [UInt8] = []
        var entries: [ParsedDatagram.Entry] = []
        swap(&payloadBytes, &output.payloadBytes)
        swap(&entries, &output.entries)
        defer {
            swap(&payloadBytes, &output.payloadBytes)
            swap(&entries, &output.entries)
        }
        if payloadBytes.count < datagram.count {
            payloadBytes = [UInt8](repeating: 0, count: max(datagram.count, 1024))
        }
        // The last datagram's entries are overwritten in place: no array work per datagram. When
        // it matched the same layout, its names and types are already these, and stay.
        let fixed = layout.map { template.layouts[$0] }
        let textsHeld = fixed.map { output.layoutIdentity == $0.identity && entries.count == entryCount } ?? false
        // From here the entries are being rewritten: whatever they held, they no longer hold a
        // layout's texts until the caller says they do (a datagram refused halfway leaves them mixed).
        output.layoutIdentity = 0
        if entries.count != entryCount {
            if entries.count > entryCount {
                entries.removeLast(entries.count &- entryCount)
            } else {
                entries.append(contentsOf: repeatElement(
                    ParsedDatagram.Entry(name: "", type: "", value: .float64(0), payload: 0..<0), count: entryCount &- entries.count))
            }
        }
        let kinds = fixed?.kinds
        let names = textsHeld ? nil : fixed?.names
        let types = textsHeld ? nil : fixed?.types
        let decoded = payloadBytes.withUnsafeMutableBytes { buffer -> Bool in
            entries.withUnsafeMutableBufferPointer { entries -> Bool in
                let out = buffer.baseAddress!
                var used = 0
                for entry in 0..<entryCount {
                    let first = 1 &+ 3 &* entry
                    let kind: PayloadKind
                    if let kinds {
                        kind = kinds[entry]
                        if let names, let types {
                            entries[entry].name = names[entry]
                            entries[entry].type = types[entry]
                        }
                    } else {
                        let type = texts.type(text(first &+ 1), slot: 2 &* entry &+ 1)
                        kind = type.kind
                        entries[entry].type = type.text
                        entries[entry].name = texts.string(text(first), slot: 2 &* entry)
                    }
                    let length: Int
                    let value: DataValue
                    if kind == .float64 || kind == .int64, let word = Base64.decodeWord(text(first &+ 2)) {
                        // The common entry: eight bytes, decoded as one word and stored at once.
                        (out + used).storeBytes(of: word.bigEndian, as: UInt64.self)
                        length = 8
                        value = kind == .float64 ? .float64(Double(bitPattern: word)) : .int64(Int64(bitPattern: word))
                    } else {
                        guard let decoded = Base64.decode(text(first &+ 2), into: out + used),
                              let decodedValue = DataValue.decodeIfValid(kind: kind, payload: UnsafeRawBufferPointer(start: out + used, count: decoded))
                        else { return false }
                        length = decoded
                        value = decodedValue
                    }
                    entries[entry].value = value
                    entries[entry].payload = Range(uncheckedBounds: (used, used &+ length))
                    used &+= length
                }
                return true
            }
        }
        guard decoded else { return false }
        output.kind = .data(timeNs: timeNs)
        return true
    }
}
