/// A JSON-like value written in a manifest: the arguments of a hand-written API call, a message.
///
/// Integers and non-integers stay apart (`3` is ``int(_:)``, `3.0` is ``double(_:)``), as in the
/// behaviour trace, because a Monkey C message distinguishes them.
public enum ManifestValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([ManifestValue])
    case object([String: ManifestValue])

    /// Reads any YAML scalar, sequence or mapping.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let i = try? c.decode(Int64.self) { self = .int(i); return }
        if let d = try? c.decode(Double.self) { self = .double(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let a = try? c.decode([ManifestValue].self) { self = .array(a); return }
        if let o = try? c.decode([String: ManifestValue].self) { self = .object(o); return }
        throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected a scalar, a list or a mapping")
    }

    /// Writes the value as the YAML it was read from.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// JSON-like text, keys sorted.
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): d.description
        case .string(let s): "\"\(s)\""
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .object(let o): "{" + o.keys.sorted().map { "\"\($0)\": \(o[$0]!.description)" }.joined(separator: ", ") + "}"
        }
    }
}

/// One app API call written by hand in a manifest, for a capture that was not recorded with its
/// calls (an imported btsnoop or PacketLogger file): `t_ms` after the capture's first frame, the
/// call's name and its arguments, exactly the keys a recorded API-call frame holds
/// (docs/capture-set.md lists them).
public struct ManifestAPICall: Sendable, Hashable, Codable {
    /// Milliseconds after the capture's first frame at which the app made the call.
    public var tMs: Double
    /// The core the call is for (`messaging` when absent).
    public var core: String
    /// The call's name: `send`, `app_status`, `register_app`…
    public var call: String
    /// Every other key.
    public var arguments: [String: ManifestValue]

    /// Describe one call.
    public init(tMs: Double, core: String = "messaging", call: String, arguments: [String: ManifestValue] = [:]) {
        self.tMs = tMs
        self.core = core
        self.call = call
        self.arguments = arguments
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Reads `{t_ms, call, core?, …arguments}`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        tMs = try c.decode(Double.self, forKey: Key(stringValue: "t_ms"))
        call = try c.decode(String.self, forKey: Key(stringValue: "call"))
        core = try c.decodeIfPresent(String.self, forKey: Key(stringValue: "core")) ?? "messaging"
        var arguments: [String: ManifestValue] = [:]
        for key in c.allKeys where !["t_ms", "call", "core"].contains(key.stringValue) {
            arguments[key.stringValue] = try c.decode(ManifestValue.self, forKey: key)
        }
        self.arguments = arguments
    }

    /// Writes the keys in sorted order after `t_ms`, `core` and `call`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(tMs, forKey: Key(stringValue: "t_ms"))
        try c.encode(core, forKey: Key(stringValue: "core"))
        try c.encode(call, forKey: Key(stringValue: "call"))
        for key in arguments.keys.sorted() {
            try c.encode(arguments[key]!, forKey: Key(stringValue: key))
        }
    }
}

/// How replay compares what a core writes with what the capture holds.
public enum FrameMatchingMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// The peer's frames are fed at their captured instants; every frame the core emits is compared
    /// with the next captured frame of its own side; the first difference is reported.
    case strict
    /// The peer's answers are delivered in reply to the core's matching requests, after the
    /// captured delay, so a core that sends in another rhythm still gets answers. Emitted frames
    /// are still compared, and differences reported, but they do not stop the answers.
    case responder
    /// No comparison: the peer's frames are fed at their captured instants and nothing is checked.
    case off
}

