import CaptureKit
import Foundation

/// An original value found in a redacted set by the last search: where, and which value, never
/// the value itself.
public struct Survivor: Sendable, Hashable, CustomStringConvertible {
    /// The file, relative to the set.
    public var file: String
    /// The byte offset of the first byte of the value in that file.
    public var offset: Int
    /// The capture frame holding it, when the file is the capture and the value is inside a frame.
    public var frame: Int?
    /// What the value is.
    public var kind: RedactedKind
    /// Which value of its kind, counted from 1 in the order redaction first found them (`address
    /// 2` is the second address of the summary).
    public var ordinal: Int
    /// How it was spelled and where it stands (`raw bytes in the frame`, `hex in a JSON value of
    /// "detail"`).
    public var context: String

    /// One line: `live/x.jsonl at byte 1234: name 1 (as a word in the JSON value of "detail")`.
    public var description: String {
        "\(file) at byte \(offset)\(frame.map { " (frame \($0))" } ?? ""): \(kind.rawValue) \(ordinal) (\(context))"
    }
}

/// The last step of redaction: every byte of every file of the new set searched for every
/// original value, so a value no layer knew about is caught rather than shared.
///
/// - Addresses and keys (16- and 32-octet secrets) are six or more bytes nothing else spells by
///   chance: each is looked for anywhere in every file, as raw bytes in both byte orders and in
///   every hex spelling (upper and lower case, with and without colons, both orders).
/// - Strings (names, PINs, client ids, user names, passwords, accounts) are looked for as a word
///   (not beside a letter, digit or `_`), percent-encoded, JSON-escaped and spelled in hex. Inside
///   capture frames that are not text, one of six bytes or more counts anywhere, a shorter one as
///   a word, and one of fewer than four bytes not at all (it would match by chance). In JSON and
///   YAML a match in a key is not a survivor, nor a JSON or YAML literal (`true`), nor the whole
///   value of a field that holds Tether's own vocabulary (``vocabularyKeys``: a device named
///   `messaging` beside the core `messaging`), nor a YAML path of the set's own files or a
///   scenario's name (it names a baseline folder). File and folder names are not searched.
/// - Passkeys (4 bytes of a small number) and IP addresses (4 bytes) would match by chance
///   everywhere and are not looked for; they are replaced in the fields that hold them.
enum SurvivorSearch {
    /// JSON and YAML keys whose values are Tether's own vocabulary (core, event and call names,
    /// expectation types, results and states): a whole value equal to an original there is that
    /// word, not the value (docs/trace-format.md, docs/expectations.md).
    static let vocabularyKeys: Set<String> = [
        "core", "event", "call", "type", "result", "status", "role", "op", "reason", "cause", "kind", "action",
        "field", "per", "key", "ends_at_field", "which", "state", "writer", "direction",
    ]

    /// One spelling of one original value.
    struct Needle {
        var bytes: [UInt8]
        var boundary: ByteSubstitution.Boundary
        var kind: RedactedKind
        var ordinal: Int
        var form: String
        var isString: Bool
        /// Where in non-text frame data it counts: anywhere, as a word, or not at all.
        var binary: ByteSubstitution.Boundary?
        /// A string of fewer than four bytes: a survivor only as the whole of a JSON or YAML value
        /// (as a word it would match ordinary text by chance).
        var wholeOnly: Bool = false
    }

    /// Every spelling of every value of `map` the search looks for.
    static func needles(_ map: RedactionMap) -> [Needle] {
        var needles: [Needle] = []
        var ordinals: [RedactedKind: Int] = [:]
        for entry in map.entries {
            let ordinal = (ordinals[entry.kind] ?? 0) + 1
            ordinals[entry.kind] = ordinal
            switch entry.kind {
            case .address, .key:
                let wire = entry.original, reversed = Array(entry.original.reversed())
                needles.append(Needle(bytes: wire, boundary: .none, kind: entry.kind, ordinal: ordinal, form: "raw bytes", isString: false, binary: ByteSubstitution.Boundary.none))
                needles.append(Needle(bytes: reversed, boundary: .none, kind: entry.kind, ordinal: ordinal, form: "raw bytes, reversed", isString: false, binary: ByteSubstitution.Boundary.none))
                for (order, label) in [(reversed, "hex"), (wire, "hex, reversed")] {
                    for upper in [true, false] {
                        for separator in [":", ""] where entry.kind == .address || separator.isEmpty {
                            needles.append(Needle(bytes: Array(Hex.spell(order, upper: upper, separator: separator).utf8), boundary: .none,
                                                  kind: entry.kind, ordinal: ordinal, form: label, isString: false, binary: ByteSubstitution.Boundary.none))
                        }
                    }
                }
            case .name, .pin, .clientID, .username, .password, .account:
                let value = entry.original
                let binary: ByteSubstitution.Boundary? = value.count >= 6 ? ByteSubstitution.Boundary.none : value.count >= 4 ? .word : nil
                guard value.count >= 4 else {
                    needles.append(Needle(bytes: value, boundary: .word, kind: entry.kind, ordinal: ordinal, form: "as a whole value",
                                          isString: true, binary: nil, wholeOnly: true))
                    continue
                }
                needles.append(Needle(bytes: value, boundary: .word, kind: entry.kind, ordinal: ordinal, form: "as a word", isString: true, binary: binary))
                for upper in [false, true] {
                    needles.append(Needle(bytes: Array(Hex.spell(value, upper: upper, separator: "").utf8), boundary: .hexWord,
                                          kind: entry.kind, ordinal: ordinal, form: "spelled in hex", isString: true, binary: .hexWord))
                }
                let encoded = Percent.encode(value)
                if encoded != value {
                    needles.append(Needle(bytes: encoded, boundary: .word, kind: entry.kind, ordinal: ordinal, form: "percent-encoded", isString: true, binary: nil))
                }
                let escaped = JSONText.escape(value)
                if escaped != value {
                    needles.append(Needle(bytes: escaped, boundary: .word, kind: entry.kind, ordinal: ordinal, form: "JSON-escaped", isString: true, binary: nil))
                }
            case .passkey, .ip:
                continue
            }
        }
        return needles.filter { !$0.bytes.isEmpty }
    }

    /// Every occurrence of any needle in `bytes` (start offsets), boundaries not yet checked.
    static func occurrences(of needles: [Needle], in bytes: [UInt8]) -> [(offset: Int, needle: Int)] {
        var byFirst = [[Int]](repeating: [], count: 256)
        for (index, needle) in needles.enumerated() { byFirst[Int(needle.bytes[0])].append(index) }
        var found: [(Int, Int)] = []
        bytes.withUnsafeBufferPointer { buffer in
            let count = buffer.count
            for i in 0..<count {
                let candidates = byFirst[Int(buffer[i])]
                if candidates.isEmpty { continue }
                for index in candidates {
                    let needle = needles[index].bytes
                    guard i + needle.count <= count else { continue }
                    var equal = true
                    for k in 1..<max(1, needle.count) where buffer[i + k] != needle[k] { equal = false; break }
                    if equal { found.append((i, index)) }
                }
            }
        }
        return found
    }

    /// Whether `needle` at `offset` of `bytes` stands as its boundary asks.
    static func allowed(_ needle: [UInt8], _ boundary: ByteSubstitution.Boundary, in bytes: [UInt8], at offset: Int) -> Bool {
        ByteSubstitution(needle, needle, boundary: boundary).allows(bytes, at: offset)
    }

    // MARK: Files

    /// Searches every regular file under `folder`; `capture` is the capture file's path relative
    /// to it (read block by block, so a match is placed in its frame).
    static func search(folder: String, capture: String, map: RedactionMap) throws(RedactionError) -> [Survivor] {
        let needles = needles(map)
        guard !needles.isEmpty else { return [] }
        guard let enumerator = FileManager.default.enumerator(atPath: folder) else {
            throw .file(path: folder, reason: "cannot list the new set's files for the last search")
        }
        var survivors: [Survivor] = []
        var files: [String] = []
        while let relative = enumerator.nextObject() as? String { files.append(relative) }
        for relative in files.sorted() {
            let path = folder + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .file(path: path, reason: "cannot be read for the last search")
            }
            let bytes = [UInt8](data)
            if relative == capture {
                survivors += searchCapture(bytes, file: relative, needles: needles)
            } else {
                survivors += searchText(bytes, file: relative, mode: TextRedaction.mode(forFile: relative), needles: needles)
            }
        }
        return survivors
    }

    /// A text file (or a text frame's bytes, `base` giving their offset in the file).
    static func searchText(
        _ bytes: [UInt8], file: String, mode: TextRedaction.Mode, needles: [Needle], base: Int = 0, frame: Int? = nil
    ) -> [Survivor] {
        let matches = occurrences(of: needles, in: bytes).filter { allowed(needles[$0.needle].bytes, needles[$0.needle].boundary, in: bytes, at: $0.offset) }
        guard !matches.isEmpty else { return [] }
        let place: (Int, Int, Needle) -> String?
        switch mode {
        case .prose:
            place = { _, _, needle in needle.wholeOnly ? nil : needle.form + " in the text" }
        case .json:
            let tokens = JSONText.strings(in: bytes)
            place = { offset, length, needle in
                // The first string ending after `offset` (the strings are in order).
                var low = 0, high = tokens.count
                while low < high {
                    let middle = (low + high) / 2
                    if tokens[middle].range.upperBound <= offset { low = middle + 1 } else { high = middle }
                }
                let index = low
                guard index < tokens.count, tokens[index].range.lowerBound <= offset, offset + length <= tokens[index].range.upperBound else {
                    // Outside every string: a number, a literal, punctuation.
                    return needle.isString ? nil : needle.form + " outside the JSON strings"
                }
                let token = tokens[index]
                if token.isKey { return needle.isString ? nil : needle.form + " in a JSON key" }
                let key = token.key.map { "\"\($0)\"" } ?? "the top level"
                let whole = token.range == offset..<(offset + length)
                if needle.wholeOnly, !whole { return nil }
                if needle.isString, whole, let name = token.key, vocabularyKeys.contains(name) { return nil }
                return "\(needle.form) in the JSON value of \(key)"
            }
        case .yaml:
            let document = YAMLText.scan(bytes)
            let fields = YAMLText.values(of: "field", in: document, bytes: bytes)
            place = { offset, length, needle in
                let range = offset..<(offset + length)
                if document.keys.contains(where: { $0.overlaps(range) }) { return needle.isString ? nil : needle.form + " in a YAML key" }
                if document.comments.contains(where: { $0.overlaps(range) }) { return needle.wholeOnly ? nil : needle.form + " in a YAML comment" }
                guard let scalar = document.scalars.first(where: { $0.range.lowerBound <= offset && range.upperBound <= $0.range.upperBound }) else {
                    return needle.wholeOnly ? nil : needle.form + " in the YAML text"
                }
                let key = scalar.key.map { "\"\($0)\"" } ?? "the top level"
                if needle.isString {
                    let whole = scalar.isWhole && scalar.range == range
                    if needle.wholeOnly, !whole { return nil }
                    if whole, scalar.style == .plain, YAMLText.isNonString(needle.bytes) { return nil }
                    if whole, let name = scalar.key, vocabularyKeys.contains(name) { return nil }
                    // An expectation's `value` compared with a vocabulary `field` (`field: result`).
                    if whole, scalar.key == "value", let field = fields[scalar.mapping], vocabularyKeys.contains(field) { return nil }
                    // The set's own file paths (`baselines: messaging: baseline/messaging.jsonl`), and
                    // scenario names, which name baseline folders (`link-drop-mid-send`).
                    if scalar.parent == "baselines" || scalar.key == "capture_file" || scalar.parent == "live_traces_sha256" { return nil }
                    if scalar.key == "name", scalar.parent == "scenarios" { return nil }
                }
                return "\(needle.form) in the YAML value of \(key)"
            }
        }
        var survivors: [Survivor] = []
        for (offset, index) in matches {
            let needle = needles[index]
            guard let context = place(offset, needle.bytes.count, needle) else { continue }
            survivors.append(Survivor(file: file, offset: base + offset, frame: frame, kind: needle.kind, ordinal: needle.ordinal, context: context))
        }
        return survivors
    }

    /// A pcapng file as ``PcapngWriter`` writes it: frames of text link types are searched as
    /// JSON, other frames as binary data, every other byte (block headers, comments, interface
    /// names) as text. Bytes the block walk cannot place are searched as text too.
    static func searchCapture(_ bytes: [UInt8], file: String, needles: [Needle]) -> [Survivor] {
        var survivors: [Survivor] = []
        var frames: [(range: Range<Int>, linkType: LinkType, number: Int)] = []
        PcapngBlocks.walk(bytes) { range, linkType, number in frames.append((range, linkType, number)) }
        var covered: [Range<Int>] = []
        for (range, linkType, number) in frames {
            let data = Array(bytes[range])
            covered.append(range)
            if linkType == .user0 || linkType == .user1 {
                survivors += searchText(data, file: file, mode: .json, needles: needles, base: range.lowerBound, frame: number)
                continue
            }
            survivors += searchBinary(data, file: file, needles: needles, base: range.lowerBound, frame: number, place: "in the frame's data")
        }
        // Everything outside the frames' data: block headers, options (comments), interface names.
        var gaps: [Range<Int>] = []
        var at = 0
        for range in covered.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound > at { gaps.append(at..<range.lowerBound) }
            at = max(at, range.upperBound)
        }
        if at < bytes.count { gaps.append(at..<bytes.count) }
        for gap in gaps {
            survivors += searchBinary(Array(bytes[gap]), file: file, needles: needles, base: gap.lowerBound, frame: nil,
                                      place: "in a block of the file (a comment, an interface name)")
        }
        return survivors.sorted { $0.offset < $1.offset }
    }

    /// Bytes that are not text: each needle counts as its ``Needle/binary`` boundary says.
    static func searchBinary(_ data: [UInt8], file: String, needles: [Needle], base: Int, frame: Int?, place: String) -> [Survivor] {
        var survivors: [Survivor] = []
        for (offset, index) in occurrences(of: needles, in: data) {
            let needle = needles[index]
            guard let boundary = needle.binary, allowed(needle.bytes, boundary, in: data, at: offset) else { continue }
            survivors.append(Survivor(file: file, offset: base + offset, frame: frame, kind: needle.kind,
                                      ordinal: needle.ordinal, context: "\(needle.form) \(place)"))
        }
        return survivors
    }
}

/// The blocks of a pcapng file, walked without trusting any length (pcapng, IETF
/// draft-ietf-opsawg-pcapng §4).
enum PcapngBlocks {
    /// Calls `frame` with each packet's data range, its interface's link type and its number
    /// (from 1, as the reader numbers them). A block whose length does not fit ends the walk.
    static func walk(_ b: [UInt8], frame: (Range<Int>, LinkType, Int) -> Void) {
        var at = 0
        var littleEndian = true
        var linkTypes: [LinkType] = []
        var number = 0
        func u32(_ i: Int) -> Int? {
            guard i >= 0, i + 4 <= b.count else { return nil }
            let v = littleEndian
                ? UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
                : UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
            return Int(v)
        }
        func u16(_ i: Int) -> Int? {
            guard i >= 0, i + 2 <= b.count else { return nil }
            return littleEndian ? Int(b[i]) | Int(b[i + 1]) << 8 : Int(b[i]) << 8 | Int(b[i + 1])
        }
        while at + 12 <= b.count {
            if b[at..<(at + 4)].elementsEqual([0x0A, 0x0D, 0x0D, 0x0A]) {
                littleEndian = b[at + 8] == 0x4D
                linkTypes = []
            }
            guard let type = u32(at), let length = u32(at + 4), length >= 12, length % 4 == 0, at + length <= b.count else { return }
            switch type {
            case 1:
                if let linkType = u16(at + 8) { linkTypes.append(LinkType(rawValue: UInt32(linkType))) }
            case 6:
                if let interface = u32(at + 8), let captured = u32(at + 20), interface < linkTypes.count, at + 28 + captured <= at + length {
                    number += 1
                    frame((at + 28)..<(at + 28 + captured), linkTypes[interface], number)
                }
            case 3:
                if let original = u32(at + 8), !linkTypes.isEmpty, length >= 16 {
                    number += 1
                    frame((at + 12)..<(at + 12 + min(original, length - 16)), linkTypes[0], number)
                }
            default:
                break
            }
            at += length
        }
    }
}
