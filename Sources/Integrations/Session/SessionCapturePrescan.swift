import ReplayKit
import CaptureKit
import CaptureSet
import SessionCore

/// What replay must know about a session-link capture before it starts, for responder mode: every
/// session-link frame of either side, in capture order, with its frame number and virtual time.
public struct SessionCapturePrescan: Sendable {
    /// One frame on the session link.
    public struct LinkFrame: Sendable, Hashable {
        /// Its frame number.
        public var frame: Int
        /// Its virtual time.
        public var timeNs: Int64
        /// `true` for the phone's write, `false` for the watch's notification.
        public var fromPhone: Bool
        /// The ATT value.
        public var bytes: [UInt8]
    }

    /// Every session-link frame, in capture order.
    public var frames: [LinkFrame] = []
    /// The virtual times of the capture's own link drops (Disconnection Complete), in order.
    public var linkDrops: [Int64] = []

    /// An empty prescan.
    public init() {}

    /// Reads the capture once, dissecting its BLE interfaces as replay does.
    public static func scan(capturePath: String, interfaces: [ManifestInterface], gattHandles: [ManifestGATTHandle]) throws(CaptureError) -> SessionCapturePrescan {
        var walk = try PrescanReader(capturePath: capturePath, interfaces: interfaces, gattHandles: gattHandles)
        var result = SessionCapturePrescan()
        while let frame = try walk.next() {
            guard frame.isBLE() else { continue }
            let timeNs = frame.timeNs
            let dissected = walk.dissect(frame)
            if case .disconnected? = dissected.linkChange { result.linkDrops.append(timeNs) }
            for record in dissected.att {
                // Classified as seen by a phone host; direction is not needed to tell the sides apart:
                // writes are the phone's, notifications the watch's.
                switch record.pdu {
                case .writeCommand(_, let bytes), .writeRequest(_, let bytes):
                    guard record.descriptorUUID == nil, record.characteristicUUID == SessionLinkUUIDs.write else { break }
                    result.frames.append(LinkFrame(frame: frame.number, timeNs: timeNs, fromPhone: true, bytes: bytes))
                case .handleValueNotification(_, let bytes):
                    guard record.characteristicUUID == SessionLinkUUIDs.notify else { break }
                    result.frames.append(LinkFrame(frame: frame.number, timeNs: timeNs, fromPhone: false, bytes: bytes))
                default:
                    break
                }
            }
        }
        return result
    }
}
