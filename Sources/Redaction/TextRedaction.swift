import CaptureSet

/// The text layer: values named in a manifest's core sections and in API-call records (JSON),
/// found by their keys, and the same map applied to every text of a set (manifest, baselines,
/// live traces, API-call and App Group frames, packet comments) in the places that hold values,
/// never in keys: a device named `messaging` leaves the core `messaging` as it is.
enum TextRedaction {
    /// Keys whose values are Bluetooth device addresses.
    static let addressKeys: Set<String> = ["address", "peer", "bd_addr"]
    /// Keys whose string values are redacted, and as what.
    static let stringKeys: [String: RedactedKind] = [
        "account": .account, "client_id": .clientID, "username": .username, "password": .password,
    ]

    /// `F0:F0:F0:F0:F0:F1` → its wire bytes (least significant first), or nil.
    static func parseAddress(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes.reversed()
    }

    /// Registers what a manifest's core sections and device list name.
    static func discover(manifest: CaptureSetManifest, into map: inout RedactionMap, keepNames: Bool) {
        if !keepNames {
            for device in manifest.devices { map.string(.name, Array(device.name.utf8)) }
        }
        // An annotation's author is a person, whatever `--keep-names` keeps.
        for annotation in manifest.annotations {
            if let author = annotation.author, !author.isEmpty { map.string(.name, Array(author.utf8)) }
        }
        for section in manifest.sections { walk(section.value, key: nil, inDevices: false, map: &map, keepNames: keepNames) }
    }

    private static func walk(_ tree: ManifestTree, key: String?, inDevices: Bool, map: inout RedactionMap, keepNames: Bool) {
        switch tree {
        case .scalar(let text, _, _):
            guard let key else { return }
            register(key: key, value: text, inDevices: inDevices, map: &map, keepNames: keepNames)
        case .sequence(let items, _):
            for item in items { walk(item, key: nil, inDevices: inDevices || key == "devices", map: &map, keepNames: keepNames) }
        case .mapping(let pairs, _):
            for (k, v) in pairs { walk(v, key: k, inDevices: inDevices, map: &map, keepNames: keepNames) }
        }
    }

    private static func register(key: String, value: String, inDevices: Bool, map: inout RedactionMap, keepNames: Bool) {
        if addressKeys.contains(key), let wire = parseAddress(value) {
            map.address(wire: wire)
        } else if let kind = stringKeys[key], !value.isEmpty {
            map.string(kind, Array(value.utf8))
        } else if key == "name", inDevices, !keepNames, !value.isEmpty {
            map.string(.name, Array(value.utf8))
        }
    }

    /// Registers the values of one API-call record (a JSON object), found by key: `"peer":"…"`,
    /// `"account":"…"` and the like. Not a JSON parser: bytes that are not JSON register only
    /// the keys they happen to spell, and nothing here traps on any input.
    static func discover(record bytes: [UInt8], into map: inout RedactionMap, keepNames: Bool) {
        for key in addressKeys.union(stringKeys.keys).sorted() {
            let pattern = Array("\"\(key)\":\"".utf8)
            var i = 0
            while i + pattern.count <= bytes.count {
                guard bytes[i..<(i + pattern.count)].elementsEqual(pattern) else { i += 1; continue }
                let start = i + pattern.count
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
                if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                    register(key: key, value: String(decoding: bytes[start..<end], as: UTF8.self), inDevices: false, map: &map, keepNames: keepNames)
                }
                i = max(end, i + 1)
            }
        }
    }

    /// Keys whose value, as a whole, is a value redaction replaces (a device name, an annotation's
    /// author, an MQTT credential, the widget account), in JSON and YAML alike.
    static let valueKeys: Set<String> = [
        "name", "device_name", "nick_name", "local_name", "peer_name", "author",
        "account", "client_id", "username", "password",
    ]
    /// Keys whose values are URLs: a device name stands in them as the value of a query
    /// parameter whose name ends in `name` (`d0Name=watch-1`).
    static let urlKeys: Set<String> = ["url", "uri", "href"]
    /// YAML keys whose values are prose, in which every value redaction replaces is replaced as a
    /// word (an expectation's `name` is prose too).
    static let proseKeys: Set<String> = ["title", "description", "text", "note", "notes", "comment"]
    /// The kinds the capture's MQTT packets carry as words (in topics and payloads), so the traces
    /// that summarize those packets carry them as words too.
    static let mqttKinds: Set<RedactedKind> = [.clientID, .username, .password, .account]
    /// The kinds that are strings (replaced as words, whole values, or spelled in hex).
    static let stringKinds: Set<RedactedKind> = [.name, .pin, .clientID, .username, .password, .account]

    /// How a text is read.
    enum Mode: Sendable {
        /// Any text: every value as a word, wherever it stands.
        case prose
        /// JSON or JSON Lines: never in keys; see ``rewrite(_:table:as:)``.
        case json
        /// YAML: never in keys; see ``rewrite(_:table:as:)``.
        case yaml
    }

    /// The substitutions of a map, computed once.
    struct Table {
        /// Addresses and keys in every spelling, dotted IPv4 addresses: replaced wherever they
        /// stand, keys included (they are never a word of the set's own vocabulary).
        var anywhere: [(RedactedKind, [ByteSubstitution])]
        /// Every string kind as a word, percent-encoded, JSON-escaped and spelled in hex.
        var words: [(RedactedKind, [ByteSubstitution])]
        /// The MQTT kinds as words (and their other spellings).
        var mqttWords: [(RedactedKind, [ByteSubstitution])]
        /// Every string kind spelled in hex only (a payload a trace spells).
        var hexWords: [(RedactedKind, [ByteSubstitution])]
        /// A string value as a whole → its kind and placeholder.
        var whole: [[UInt8]: (RedactedKind, [UInt8])]

        init(_ map: RedactionMap) {
            func byKind(_ kinds: [RedactedKind], _ keep: (ByteSubstitution) -> Bool = { _ in true }) -> [(RedactedKind, [ByteSubstitution])] {
                kinds.map { ($0, map.substitutions(of: [$0]).filter(keep)) }.filter { !$0.1.isEmpty }
            }
            let strings = RedactedKind.allCases.filter { TextRedaction.stringKinds.contains($0) }
            anywhere = byKind([.address, .key, .ip])
            words = byKind(strings)
            mqttWords = byKind(strings.filter { TextRedaction.mqttKinds.contains($0) })
            hexWords = byKind(strings) { $0.boundary == .hexWord }
            whole = [:]
            for entry in map.entries where TextRedaction.stringKinds.contains(entry.kind) {
                whole[entry.original] = (entry.kind, entry.placeholder)
            }
        }
    }

    private static func apply(_ groups: [(RedactedKind, [ByteSubstitution])], to bytes: inout [UInt8], counts: inout [RedactedKind: Int]) {
        for (kind, substitutions) in groups {
            let n = ByteSubstitution.apply(substitutions, to: &bytes)
            if n > 0 { counts[kind, default: 0] += n }
        }
    }

    /// Applies `table` to a text; returns the count per kind. Every mode first replaces addresses,
    /// keys (and with `--ip` dotted IPv4 addresses) in every spelling wherever they stand. Then:
    ///
    /// - `.prose`: every string value as a word.
    /// - `.json`: never in an object key. A string value that as a whole is a registered value is
    ///   replaced when its key holds such values (``valueKeys``: `"name":"watch-1"`, not
    ///   `"core":"messaging"`); MQTT values also as words inside any string value (topics,
    ///   packet summaries), names as a URL's name parameters (``urlKeys``,
    ///   ``rewriteQueryNames(_:table:)``); every string value spelled in hex inside any string value.
    /// - `.yaml`: never in a mapping key. A scalar as a whole under ``valueKeys`` (and an
    ///   expectation's `value` when its `field` is one of them); every value as
    ///   a word in prose (``proseKeys``, an expectation's `name`, comments); MQTT values as words
    ///   in any scalar, names as a URL's name parameters, hex spellings in any scalar.
    static func rewrite(_ bytes: inout [UInt8], table: Table, as mode: Mode) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        apply(table.anywhere, to: &bytes, counts: &counts)
        switch mode {
        case .prose:
            apply(table.words, to: &bytes, counts: &counts)
        case .json:
            let tokens = JSONText.strings(in: bytes)
            var edits: [(Range<Int>, [UInt8])] = []
            var elsewhere: [Range<Int>] = []
            for token in tokens where !token.isKey && !token.range.isEmpty {
                if let key = token.key, valueKeys.contains(key), let value = JSONText.decode(bytes[token.range]),
                   let (kind, placeholder) = table.whole[value] {
                    edits.append((token.range, JSONText.escape(placeholder)))
                    counts[kind, default: 0] += 1
                } else if let key = token.key, urlKeys.contains(key) {
                    var value = Array(bytes[token.range])
                    var local = rewriteQueryNames(&value, table: table)
                    apply(table.mqttWords + table.hexWords, to: &value, counts: &local)
                    if !local.isEmpty {
                        edits.append((token.range, value))
                        for (kind, n) in local { counts[kind, default: 0] += n }
                    }
                } else {
                    elsewhere.append(token.range)
                }
            }
            // MQTT values as words and every value spelled in hex, inside the other string values:
            // one pass over the text, taking only matches inside one of them (the same length, so
            // the ranges of `edits` stay where they are).
            if !elsewhere.isEmpty {
                func inside(_ start: Int, _ length: Int) -> Bool {
                    var low = 0, high = elsewhere.count
                    while low < high {
                        let middle = (low + high) / 2
                        if elsewhere[middle].upperBound <= start { low = middle + 1 } else { high = middle }
                    }
                    return low < elsewhere.count && elsewhere[low].lowerBound <= start && start + length <= elsewhere[low].upperBound
                }
                for (kind, substitutions) in table.mqttWords + table.hexWords {
                    let n = ByteSubstitution.apply(substitutions, to: &bytes, where: inside)
                    if n > 0 { counts[kind, default: 0] += n }
                }
            }
            bytes = applying(edits, to: bytes)
        case .yaml:
            let document = YAMLText.scan(bytes)
            // An expectation's `value` holds what its `field` holds (`field: name`, `value: watch-1`).
            let fields = YAMLText.values(of: "field", in: document, bytes: bytes)
            var edits: [(Range<Int>, [UInt8])] = []
            for range in document.comments {
                var text = Array(bytes[range])
                var local: [RedactedKind: Int] = [:]
                apply(table.words, to: &text, counts: &local)
                if !local.isEmpty { edits.append((range, text)); for (kind, n) in local { counts[kind, default: 0] += n } }
            }
            for scalar in document.scalars where !scalar.range.isEmpty {
                let raw = bytes[scalar.range]
                let key = scalar.key ?? ""
                let prose = proseKeys.contains(key) || (key == "name" && scalar.parent == "expectations")
                let holdsValues = valueKeys.contains(key) || (key == "value" && fields[scalar.mapping].map(valueKeys.contains) == true)
                if scalar.isWhole, holdsValues, !prose, let value = YAMLText.decode(raw, style: scalar.style),
                   let (kind, placeholder) = table.whole[value] {
                    edits.append((scalar.range, yamlScalar(placeholder, style: scalar.style)))
                    counts[kind, default: 0] += 1
                    continue
                }
                var value = Array(raw)
                var local: [RedactedKind: Int] = [:]
                if prose {
                    apply(table.words, to: &value, counts: &local)
                } else {
                    if urlKeys.contains(key) { local = rewriteQueryNames(&value, table: table) }
                    apply(table.mqttWords + table.hexWords, to: &value, counts: &local)
                }
                if !local.isEmpty {
                    edits.append((scalar.range, value))
                    for (kind, n) in local { counts[kind, default: 0] += n }
                }
            }
            bytes = applying(edits, to: bytes)
        }
        return counts
    }

    /// In a URL, the value of each query parameter whose name ends in `name` (any case) that is,
    /// percent-decoded, a registered value as a whole: replaced by its placeholder, percent-encoded.
    /// Other parameters stay, even when a word of theirs is a name (`d0Model=Connect%20IQ…`).
    static func rewriteQueryNames(_ url: inout [UInt8], table: Table) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        guard let query = url.firstIndex(of: UInt8(ascii: "?")) else { return counts }
        var out = Array(url[...query])
        var at = query + 1
        while at <= url.count {
            var end = at
            while end < url.count, url[end] != UInt8(ascii: "&"), url[end] != UInt8(ascii: "#") { end += 1 }
            var parameter = Array(url[at..<end])
            if let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
               String(decoding: parameter[..<equals], as: UTF8.self).lowercased().hasSuffix("name"),
               let value = Percent.decode(parameter[(equals + 1)...]), let (kind, placeholder) = table.whole[value] {
                parameter = Array(parameter[...equals]) + Percent.encode(placeholder)
                counts[kind, default: 0] += 1
            }
            out += parameter
            if end < url.count { out.append(url[end]) }
            if end < url.count, url[end] == UInt8(ascii: "#") {
                out += url[(end + 1)...]
                break
            }
            at = end + 1
        }
        if !counts.isEmpty { url = out }
        return counts
    }

    /// A placeholder written in a scalar's style: a plain one that YAML would read as a boolean,
    /// null or number is quoted.
    private static func yamlScalar(_ placeholder: [UInt8], style: YAMLText.Style) -> [UInt8] {
        if style == .plain, YAMLText.isNonString(placeholder) { return [UInt8(ascii: "'")] + placeholder + [UInt8(ascii: "'")] }
        return placeholder
    }

    /// `bytes` with each range replaced (ranges in order, not overlapping).
    private static func applying(_ edits: [(Range<Int>, [UInt8])], to bytes: [UInt8]) -> [UInt8] {
        guard !edits.isEmpty else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var at = 0
        for (range, replacement) in edits.sorted(by: { $0.0.lowerBound < $1.0.lowerBound }) where range.lowerBound >= at && range.upperBound <= bytes.count {
            out += bytes[at..<range.lowerBound]
            out += replacement
            at = range.upperBound
        }
        out += bytes[at...]
        return out
    }

    /// Applies `table` to a string read as prose (a packet or interface comment, an interface name).
    static func rewrite(_ text: String, table: Table) -> (String, [RedactedKind: Int]) {
        var bytes = Array(text.utf8)
        let counts = rewrite(&bytes, table: table, as: .prose)
        return (String(decoding: bytes, as: UTF8.self), counts)
    }

    /// How a file of a set is read, by its name.
    static func mode(forFile path: String) -> Mode {
        let lower = path.lowercased()
        if lower.hasSuffix(".jsonl") || lower.hasSuffix(".json") || lower.hasSuffix(".ndjson") { return .json }
        if lower.hasSuffix(".yaml") || lower.hasSuffix(".yml") { return .yaml }
        return .prose
    }
}
