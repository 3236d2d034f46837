import CaptureSet

/// The text layer: values named in a manifest's core sections and in API-call records (JSON),
/// found by their keys, and the same map applied to every text of a set (manifest, baselines,
/// live traces, API-call and App Group frames, packet comments).
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

    /// The substitutions of a map, computed once per kind.
    struct Table {
        var text: [(RedactedKind, [ByteSubstitution])]
        init(_ map: RedactionMap) {
            text = RedactedKind.allCases.map { ($0, map.substitutions(of: [$0])) }.filter { !$0.1.isEmpty }
        }
    }

    /// Applies `table` to a text (or any bytes spelled as text); returns the count per kind.
    static func rewrite(_ bytes: inout [UInt8], table: Table) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        for (kind, substitutions) in table.text {
            let n = ByteSubstitution.apply(substitutions, to: &bytes)
            if n > 0 { counts[kind] = n }
        }
        return counts
    }

    /// Applies `table` to a string.
    static func rewrite(_ text: String, table: Table) -> (String, [RedactedKind: Int]) {
        var bytes = Array(text.utf8)
        let counts = rewrite(&bytes, table: table)
        return (String(decoding: bytes, as: UTF8.self), counts)
    }
}
