import CaptureKit
import MQTT

/// Why some bytes could not be dissected further: the layer that refused them and what was wrong,
/// as a value a program can match (``Kind``) as well as a sentence (``description``).
///
/// Dissectors return this as a value (a frame carries its problems in
/// ``DissectedFrame/problems``); it is never thrown across a frame (it conforms to `Error` only to
/// ride in `Result`), because one bad frame must not stop a capture from being read.
public struct DissectionProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, with what each kind of problem needs to be told.
    public enum Kind: Sendable, Hashable {
        /// The bytes break the layer's layout: at `offset` the layer needed `expected` and found
        /// `found`. `offset` is a frame offset, or one within `context` when that is set (e.g. "the
        /// L2CAP PDU on handle 0x0040 reassembled from ACL fragments").
        case layout(offset: Int, expected: String, found: String, context: String?)
        /// An MQTT control packet that does not decode (`error` has the offset within the packet);
        /// `stopsStream` when the stream's framing was lost with it, so the rest of that direction
        /// of the connection is not read as MQTT.
        case mqttPacket(MQTTDecodeError, stopsStream: Bool)
        /// An MQTT control packet of `length` bytes, longer than the `limit` the dissector holds
        /// across segments: passed over, the stream read on after it.
        case mqttPacketTooLong(length: Int, limit: Int)
        /// An MQTT 5 PUBLISH naming a Topic Alias never set on its direction of the connection
        /// (§3.3.2.3.4): the packet decodes, its topic is unknown.
        case mqttTopicAliasUnset(alias: UInt16)
        /// `lostBytes` bytes of a TCP stream, just before relative sequence `relativeSequence`,
        /// were never captured; reassembly resumes after them. `stopsMQTT` when the direction was
        /// being read as MQTT, which it no longer is.
        case tcpBytesNotCaptured(lostBytes: Int, relativeSequence: UInt32, stopsMQTT: Bool)
        /// A record that must be UTF-8 JSON text (an API call record, an App Group event) holds
        /// `byteCount` bytes that are not UTF-8.
        case notUTF8(byteCount: Int)
        /// The frame's link type is not one Tether dissects.
        case linkTypeNotDissected(LinkType)
    }

    /// The protocol layer that refused the bytes, e.g. `IPv4`, `ACL`, `HCI Event LE Meta`,
    /// `MQTT`, `API call record`.
    public var layer: String
    /// What was wrong.
    public var kind: Kind

    /// A problem of `layer`.
    public init(layer: String, kind: Kind) {
        self.layer = layer
        self.kind = kind
    }

    /// The bytes break `layer`'s layout at `offset` (see ``Kind/layout(offset:expected:found:context:)``).
    public init(layer: String, offset: Int, expected: String, found: String, context: String? = nil) {
        self.init(layer: layer, kind: .layout(offset: offset, expected: expected, found: found, context: context))
    }

    /// The sentence `tether inspect` shows, naming the layer, where, what was expected and what
    /// was found: `IPv4: at frame offset 14: expected 20 bytes of IPv4 header; found only 6
    /// bytes left`.
    public var description: String {
        switch kind {
        case .layout(let offset, let expected, let found, let context):
            let place = context.map { "offset \(offset) of \($0)" } ?? "frame offset \(offset)"
            return "\(layer): at \(place): expected \(expected); found \(found)"
        case .mqttPacket(let error, let stopsStream):
            return stopsStream ? "\(error); the rest of this direction is not read as MQTT" : error.description
        case .mqttPacketTooLong(let length, let limit):
            return "\(layer): a packet of \(length) bytes, longer than the \(limit) bytes the dissector holds; passed over"
        case .mqttTopicAliasUnset(let alias):
            return "\(layer): Topic Alias \(alias) was never set on this direction of the connection (§3.3.2.3.4)"
        case .tcpBytesNotCaptured(let lostBytes, let relativeSequence, let stopsMQTT):
            return "\(layer): \(lostBytes) bytes before relative sequence \(relativeSequence) were never captured; the stream resumes after them"
                + (stopsMQTT ? ", and MQTT is no longer read on this direction" : "")
        case .notUTF8(let byteCount):
            return "\(layer): expected UTF-8 JSON text, found \(byteCount) bytes that are not UTF-8"
        case .linkTypeNotDissected(let linkType):
            return "link type \(linkType) is not dissected by Tether"
        }
    }

    /// The kind's name for scripts (`tether inspect --json`): `layout`, `mqtt_packet`,
    /// `mqtt_packet_too_long`, `mqtt_topic_alias_unset`, `tcp_bytes_not_captured`, `not_utf8`,
    /// `link_type_not_dissected`.
    public var kindName: String {
        switch kind {
        case .layout: "layout"
        case .mqttPacket: "mqtt_packet"
        case .mqttPacketTooLong: "mqtt_packet_too_long"
        case .mqttTopicAliasUnset: "mqtt_topic_alias_unset"
        case .tcpBytesNotCaptured: "tcp_bytes_not_captured"
        case .notUTF8: "not_utf8"
        case .linkTypeNotDissected: "link_type_not_dissected"
        }
    }

    /// Where a problem with an offset lies: the offset and what it counts within (`nil`: the
    /// frame). `nil` for the kinds without one.
    public var place: (offset: Int, context: String?)? {
        switch kind {
        case .layout(let offset, _, _, let context): (offset, context)
        case .mqttPacket(let error, _): (error.offset, "the MQTT packet")
        default: nil
        }
    }

    /// The usual case: a header or field runs past the captured bytes.
    static func short(_ layer: String, at offset: Int, need: Int, what: String, have: Int, context: String? = nil) -> DissectionProblem {
        DissectionProblem(
            layer: layer, offset: offset, expected: "\(need) bytes of \(what)",
            found: "only \(max(have, 0)) bytes left", context: context)
    }

    /// Moves a layout problem's offset by `distance` (a layer's offsets counted from its own
    /// start, moved to its caller's); other kinds have no offset to move.
    mutating func moveOffset(by distance: Int) {
        guard case .layout(let offset, let expected, let found, let context) = kind else { return }
        kind = .layout(offset: offset + distance, expected: expected, found: found, context: context)
    }

    /// A layout problem whose offset counts within `place`, made a frame offset by adding
    /// `start`, where that place begins in the frame; any other problem is left as it is.
    mutating func rebase(from place: String, toFrameOffset start: Int) {
        guard case .layout(let offset, let expected, let found, let context?) = kind, context == place else { return }
        kind = .layout(offset: offset + start, expected: expected, found: found, context: nil)
    }
}
