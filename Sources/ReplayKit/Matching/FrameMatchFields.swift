import BehaviourTrace

/// The fields of `frame_emitted` and `frame_unsent`: `bytes` (hex), `device` and `packet`, held as
/// the matcher has them. Every frame a BLE core writes makes one, so the hex text is written only
/// when the event is (``TraceJSONWriter`` asks ``forEachField(_:)``), and no dictionary is built.
struct FrameBytesFields: TracePayload {
    /// The channel (device) the frame went to.
    var device: String
    /// The frame's bytes, written as hex.
    var bytes: [UInt8]
    /// The frame decoded by the link's decoder.
    var packet: String

    var fieldCount: Int { 3 }

    func field(_ key: String) -> TraceValue? {
        switch key {
        case "bytes": return .string(JSONLiteral.hex(bytes))
        case "device": return .string(device)
        case "packet": return .string(packet)
        default: return nil
        }
    }

    func forEachField(_ body: (String, TraceValue) -> Void) {
        body("bytes", .string(JSONLiteral.hex(bytes)))
        body("device", .string(device))
        body("packet", .string(packet))
    }
}

/// The fields of `frame_matched`: `device`, `frame`, and `reordered` (`true`) only when the pair
/// matched across a swap.
struct FrameMatchedFields: TracePayload {
    /// The channel (device).
    var device: String
    /// The captured frame's number (0 when it has none).
    var frame: Int64
    /// Whether the pair matched out of order.
    var reordered: Bool

    var fieldCount: Int { reordered ? 3 : 2 }

    func field(_ key: String) -> TraceValue? {
        switch key {
        case "device": return .string(device)
        case "frame": return .int(frame)
        case "reordered": return reordered ? .bool(true) : nil
        default: return nil
        }
    }

    func forEachField(_ body: (String, TraceValue) -> Void) {
        body("device", .string(device))
        body("frame", .int(frame))
        if reordered { body("reordered", .bool(true)) }
    }
}
