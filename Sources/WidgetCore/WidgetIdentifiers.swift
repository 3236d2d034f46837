/// Which process a ``WidgetCore`` plays.
public enum WidgetRole: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The host app: writes the settings and the has-content flag, opens when the widget asks,
    /// manages which devices and scenes are on the widget. MQTT client id `host-{account}`.
    case host
    /// The widget (Today extension): reads the settings, answers the system's refresh requests,
    /// asks for the host app to be opened, shows devices and scenes, sets properties, fires scenes.
    /// MQTT client id `widget-{account}`.
    case widget

    /// `host` or `widget`.
    public var description: String { rawValue }
}

/// The id of one cloud API request: the `"id"` of its request and response payloads
/// (docs/widget-mqtt.md). Text `IIIIIIII-N`: the core's incarnation (8 lower-case hex digits, drawn
/// from the random source when the core is created) and a sequence number from 1, so a response to
/// a request of an earlier process of the same client is recognised as such.
public struct WidgetRequestID: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The id as it travels.
    public var rawValue: String

    /// Wraps an id.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `request 9f3a01c2-3`.
    public var description: String { "request \(rawValue)" }
}

/// The id of one open-host-app request of the widget; it names the request's and the result's files
/// in the container. Same text form as ``WidgetRequestID`` (the two share the sequence).
public struct WidgetOpenURLID: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The id as it appears in file names and files.
    public var rawValue: String

    /// Wraps an id.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `open-url 9f3a01c2-4`.
    public var description: String { "open-url \(rawValue)" }

    /// Whether `text` can be an id: 1 to 64 characters of `A–Z a–z 0–9 - _` (it becomes part of a
    /// file name).
    public static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}

/// The id the core gives one refresh request of the system (`widgetPerformUpdate`), from 1 in
/// call order within a process.
public struct WidgetRefreshID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The number.
    public var rawValue: UInt32

    /// Wraps a number.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// Refreshes order by number (call order).
    public static func < (lhs: WidgetRefreshID, rhs: WidgetRefreshID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `refresh 3`.
    public var description: String { "refresh \(rawValue)" }
}
