// The App Group container's file layout (docs/widget-core.md, "The container"): which files exist,
// who writes them, and their JSON. Every file is one canonical JSON object written atomically.

/// The files of the App Group container that Tether's widget channel uses. Names outside this
/// layout (the app's own files, the writers' temporary files starting with `.`) are ignored.
///
/// | file | written by | removed by | JSON |
/// |---|---|---|---|
/// | `settings.json` | host | nobody | `{"settings":{…},"version":N}` |
/// | `has-content.json` | host | nobody | `{"hasContent":true,"version":N}` |
/// | `open-url-request.<id>.json` | widget | host (answered), widget (timed out) | `{"id":"<id>","url":"…"}` |
/// | `open-url-result.<id>.json` | host | widget | `{"id":"<id>","opened":true}` |
///
/// `version` is the host's write counter, shared by its two files: every write takes the next
/// number, so a reader can tell newer from older whatever order it hears of changes in.
public enum WidgetContainerLayout {
    /// The host's settings for the widget.
    public static let settingsFile = "settings.json"
    /// The host's has-content flag.
    public static let hasContentFile = "has-content.json"
    /// Prefix of the widget's open-host-app requests: `open-url-request.<id>.json`.
    public static let openURLRequestPrefix = "open-url-request."
    /// Prefix of the host's answers: `open-url-result.<id>.json`.
    public static let openURLResultPrefix = "open-url-result."
    /// Suffix of every file of the layout.
    public static let fileSuffix = ".json"

    /// `open-url-request.<id>.json`.
    public static func openURLRequestFile(_ id: WidgetOpenURLID) -> String {
        openURLRequestPrefix + id.rawValue + fileSuffix
    }

    /// `open-url-result.<id>.json`.
    public static func openURLResultFile(_ id: WidgetOpenURLID) -> String {
        openURLResultPrefix + id.rawValue + fileSuffix
    }
}

/// A container file name of the layout, parsed.
enum ContainerFile: Sendable, Hashable {
    case settings
    case hasContent
    case openURLRequest(WidgetOpenURLID)
    case openURLResult(WidgetOpenURLID)
    /// A name with a layout prefix whose id is not valid.
    case badName(String)

    /// `nil` for names outside the layout.
    init?(name: String) {
        if name == WidgetContainerLayout.settingsFile {
            self = .settings
        } else if name == WidgetContainerLayout.hasContentFile {
            self = .hasContent
        } else if let id = Self.id(in: name, prefix: WidgetContainerLayout.openURLRequestPrefix) {
            self = id.map { .openURLRequest($0) } ?? .badName(name)
        } else if let id = Self.id(in: name, prefix: WidgetContainerLayout.openURLResultPrefix) {
            self = id.map { .openURLResult($0) } ?? .badName(name)
        } else {
            return nil
        }
    }

    /// `nil` when the name does not have the prefix; `.some(nil)` when its id is not valid.
    static func id(in name: String, prefix: String) -> WidgetOpenURLID?? {
        guard name.hasPrefix(prefix) else { return nil }
        let rest = name.dropFirst(prefix.count)
        guard rest.hasSuffix(WidgetContainerLayout.fileSuffix) else { return .some(nil) }
        let text = String(rest.dropLast(WidgetContainerLayout.fileSuffix.count))
        return WidgetOpenURLID.isValid(text) ? .some(WidgetOpenURLID(rawValue: text)) : .some(nil)
    }
}

/// The JSON of each container file: encoders for the writers, strict decoders for the readers
/// (the wrong shape is a malformed file, whatever else it holds).
enum ContainerCodec {
    static func settings(version: UInt64, settings: WidgetJSON) -> [UInt8] {
        WidgetJSON.object(["settings": settings, "version": .int(Int64(version))]).encoded()
    }

    static func hasContent(version: UInt64, hasContent: Bool) -> [UInt8] {
        WidgetJSON.object(["hasContent": .bool(hasContent), "version": .int(Int64(version))]).encoded()
    }

    static func openURLRequest(_ request: WidgetOpenURLRequest) -> [UInt8] {
        WidgetJSON.object(["id": .string(request.id.rawValue), "url": .string(request.url)]).encoded()
    }

    static func openURLResult(id: WidgetOpenURLID, opened: Bool) -> [UInt8] {
        WidgetJSON.object(["id": .string(id.rawValue), "opened": .bool(opened)]).encoded()
    }

    /// A file's object with exactly `keys`, or why not.
    static func object(_ bytes: [UInt8], name: String, keys: Set<String>) -> Result<[String: WidgetJSON], ContainerProblem> {
        let value: WidgetJSON
        do {
            value = try WidgetJSON.parse(bytes)
        } catch {
            return .failure(ContainerProblem("\(name) (\(bytes.count) bytes) is not JSON: \(error); was it written without write-then-rename?"))
        }
        guard let members = value.objectValue else {
            return .failure(ContainerProblem("\(name) holds a JSON \(value.typeName), not an object"))
        }
        guard Set(members.keys) == keys else {
            return .failure(ContainerProblem("\(name) has the keys \(members.keys.sorted()); the layout gives it exactly \(keys.sorted())"))
        }
        return .success(members)
    }

    static func version(_ value: WidgetJSON?, name: String) -> Result<UInt64, ContainerProblem> {
        guard let number = value?.intValue, number >= 1 else {
            return .failure(ContainerProblem("\(name): \"version\" must be an integer ≥ 1, found \(value?.text ?? "nothing")"))
        }
        return .success(UInt64(number))
    }

    static func decodeSettings(_ bytes: [UInt8]) -> Result<(version: UInt64, settings: WidgetJSON), ContainerProblem> {
        let name = WidgetContainerLayout.settingsFile
        return object(bytes, name: name, keys: ["settings", "version"]).flatMap { members in
            version(members["version"], name: name).flatMap { version in
                guard let settings = members["settings"], settings.objectValue != nil else {
                    return .failure(ContainerProblem("\(name): \"settings\" must be an object, found a \(members["settings"]?.typeName ?? "nothing")"))
                }
                return .success((version, settings))
            }
        }
    }

    static func decodeHasContent(_ bytes: [UInt8]) -> Result<(version: UInt64, hasContent: Bool), ContainerProblem> {
        let name = WidgetContainerLayout.hasContentFile
        return object(bytes, name: name, keys: ["hasContent", "version"]).flatMap { members in
            version(members["version"], name: name).flatMap { version in
                guard let flag = members["hasContent"]?.boolValue else {
                    return .failure(ContainerProblem("\(name): \"hasContent\" must be a boolean"))
                }
                return .success((version, flag))
            }
        }
    }

    static func decodeOpenURLRequest(_ bytes: [UInt8], id: WidgetOpenURLID) -> Result<WidgetOpenURLRequest, ContainerProblem> {
        let name = WidgetContainerLayout.openURLRequestFile(id)
        return object(bytes, name: name, keys: ["id", "url"]).flatMap { members in
            guard members["id"]?.stringValue == id.rawValue else {
                return .failure(ContainerProblem("\(name): \"id\" must be \"\(id.rawValue)\" as the file name says, found \(members["id"]?.text ?? "nothing")"))
            }
            guard let url = members["url"]?.stringValue, WidgetURL.isValid(url) else {
                return .failure(ContainerProblem("\(name): \"url\" must be a URL with a scheme, found \(members["url"]?.text ?? "nothing")"))
            }
            return .success(WidgetOpenURLRequest(id: id, url: url))
        }
    }

    static func decodeOpenURLResult(_ bytes: [UInt8], id: WidgetOpenURLID) -> Result<Bool, ContainerProblem> {
        let name = WidgetContainerLayout.openURLResultFile(id)
        return object(bytes, name: name, keys: ["id", "opened"]).flatMap { members in
            guard members["id"]?.stringValue == id.rawValue else {
                return .failure(ContainerProblem("\(name): \"id\" must be \"\(id.rawValue)\" as the file name says, found \(members["id"]?.text ?? "nothing")"))
            }
            guard let opened = members["opened"]?.boolValue else {
                return .failure(ContainerProblem("\(name): \"opened\" must be a boolean"))
            }
            return .success(opened)
        }
    }
}

/// Why a container file was refused: the violation's detail.
struct ContainerProblem: Error, Sendable, Hashable {
    var detail: String

    init(_ detail: String) {
        self.detail = detail
    }
}

/// The check on URLs the widget asks the host to open.
enum WidgetURL {
    /// A scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`, RFC 3986), a `:`, then at least
    /// one more character; no control characters or spaces.
    static func isValid(_ url: String) -> Bool {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon + 1 < bytes.count else { return false }
        guard isLetter(bytes[0]) else { return false }
        for byte in bytes[1..<colon] where !(isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                                              || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")) {
            return false
        }
        return bytes.allSatisfy { $0 > 0x20 && $0 != 0x7F }
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
