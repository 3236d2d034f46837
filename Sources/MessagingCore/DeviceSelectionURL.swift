/// The URL Garmin Connect Mobile (GCM) opens the companion app with after the user picked
/// devices (iOS: `parseDeviceSelectionResponseFromURL:`).
///
/// Accepted form — the query-item names public example apps show GCM sending:
///
/// ```
/// <app-scheme>://device-select-resp?ciqApp=Connect&ciqBundle=com.garmin.connect.mobile
///     &ciqScheme&ciqSdkVersion=10000&sourceUrlHost
///     &d0ID=A6230408-B526-A5D6-8929-7791342EB4AF&d0Model=fenix%205&d0Name=garsim01
///     &d1ID=…&d1Model=…&d1Name=…
/// ```
///
/// - the host must be `device-select-resp` (any case); the scheme is the app's own and any path,
///   fragment or other query item (`ciq…`, whose value is not even decoded) is ignored;
/// - device `N` (decimal, any order, gaps allowed) is `dNID` (a UUID, required), `dNModel` and
///   `dNName` (percent-encoded UTF-8; empty when absent); devices come out ordered by `N`;
/// - `+` is kept as `+` (URL query items, not form encoding);
/// - no device items at all is a valid, empty selection.
public enum DeviceSelectionURL {
    /// The host GCM uses for a device selection response.
    public static let responseHost = "device-select-resp"

    /// The devices the URL lists, ordered by their index.
    /// - Throws: ``DeviceSelectionURLError`` naming what is wrong.
    public static func parse(_ url: String) throws(DeviceSelectionURLError) -> [IQDevice] {
        let utf8 = Array(url.utf8)
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              utf8[0..<colon].allSatisfy(isSchemeByte), isLetter(utf8[0])
        else { throw .notAURL }
        var rest = utf8[(colon + 1)...]
        guard rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else { throw .notAURL }
        rest = rest.dropFirst(2)
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        let hostEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let host = String(decoding: rest[..<hostEnd], as: UTF8.self)
        guard host.lowercased() == responseHost else { throw .wrongHost(host) }
        guard let question = rest.firstIndex(of: UInt8(ascii: "?")) else { return [] }
        let query = rest[(question + 1)...]

        var seen: Set<String> = []
        var ids: [Int: String] = [:], models: [Int: String] = [:], names: [Int: String] = [:]
        for item in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = item.firstIndex(of: UInt8(ascii: "="))
            let whole = String(decoding: item, as: UTF8.self)
            let name = try percentDecoded(item[..<(equals ?? item.endIndex)], item: whole)
            guard let (index, field) = deviceField(name) else { continue }
            let value = try equals.map { index throws(DeviceSelectionURLError) in try percentDecoded(item[(index + 1)...], item: whole) }
            guard seen.insert(name).inserted else { throw .duplicateQueryItem(name) }
            switch field {
            case "ID": ids[index] = value ?? ""
            case "Model": models[index] = value ?? ""
            default: names[index] = value ?? ""
            }
        }

        let indices = Set(ids.keys).union(models.keys).union(names.keys).sorted()
        var devices: [IQDevice] = []
        var uuids: Set<IQUUID> = []
        for index in indices {
            guard let text = ids[index] else { throw .missingDeviceID(index: index) }
            guard let uuid = IQUUID(text) else { throw .invalidDeviceID(index: index, text) }
            guard uuids.insert(uuid).inserted else { throw .duplicateDevice(uuid) }
            devices.append(IQDevice(uuid: uuid, modelName: models[index] ?? "", friendlyName: names[index] ?? ""))
        }
        return devices
    }

    /// The URL GCM would send for `devices` (index = position), for tests and rigs.
    public static func make(scheme: String, devices: [IQDevice]) -> String {
        var items = ["ciqApp=Connect", "ciqBundle=com.garmin.connect.mobile", "ciqScheme", "ciqSdkVersion=10000", "sourceUrlHost"]
        for (index, device) in devices.enumerated() {
            items.append("d\(index)ID=\(device.uuid.description.uppercased())")
            items.append("d\(index)Model=\(percentEncoded(device.modelName))")
            items.append("d\(index)Name=\(percentEncoded(device.friendlyName))")
        }
        return "\(scheme)://\(responseHost)?" + items.joined(separator: "&")
    }

    /// `dNID`, `dNModel`, `dNName` → (N, field); anything else → nil.
    private static func deviceField(_ name: String) -> (Int, String)? {
        guard name.hasPrefix("d") else { return nil }
        let body = name.dropFirst()
        let digits = body.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 6, let index = Int(digits) else { return nil }
        let field = String(body.dropFirst(digits.count))
        return ["ID", "Model", "Name"].contains(field) ? (index, field) : nil
    }

    /// Decodes `%XX` escapes of part of the query item `item` (named in errors).
    private static func percentDecoded(_ bytes: ArraySlice<UInt8>, item: String) throws(DeviceSelectionURLError) -> String {
        var output: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else {
                    throw .badPercentEncoding(item)
                }
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(byte)
                index += 1
            }
        }
        guard let text = String(validating: output, as: UTF8.self) else {
            throw .invalidUTF8(item)
        }
        return text
    }

    private static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            let isUnreserved = isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            if isUnreserved {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let digits = Array("0123456789ABCDEF")
                output += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
            }
        }
        return output
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a device selection URL cannot be read.
public enum DeviceSelectionURLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `scheme://host…`.
    case notAURL
    /// The host is not `device-select-resp`.
    case wrongHost(String)
    /// A `%` not followed by two hex digits, in this query item.
    case badPercentEncoding(String)
    /// A query item whose decoded bytes are not UTF-8.
    case invalidUTF8(String)
    /// The same `dN…` item twice.
    case duplicateQueryItem(String)
    /// `dNModel` or `dNName` without `dNID`.
    case missingDeviceID(index: Int)
    /// `dNID` that is not a UUID.
    case invalidDeviceID(index: Int, String)
    /// Two devices with one UUID.
    case duplicateDevice(IQUUID)

    /// What was wrong and what was expected.
    public var description: String {
        switch self {
        case .notAURL:
            "expected scheme://device-select-resp?… (the URL Garmin Connect Mobile opens the app with)"
        case .wrongHost(let host):
            "host \"\(host)\" is not device-select-resp; this URL is not a device selection response"
        case .badPercentEncoding(let item):
            "query item \"\(item)\": % must be followed by two hex digits"
        case .invalidUTF8(let item):
            "query item \"\(item)\" does not decode to UTF-8 text"
        case .duplicateQueryItem(let name):
            "query item \(name) appears twice"
        case .missingDeviceID(let index):
            "device \(index) has d\(index)Model or d\(index)Name but no d\(index)ID"
        case let .invalidDeviceID(index, text):
            "d\(index)ID \"\(text)\" is not a UUID (expected 8-4-4-4-12 hex digits)"
        case .duplicateDevice(let uuid):
            "device \(uuid) is listed twice"
        }
    }
}
