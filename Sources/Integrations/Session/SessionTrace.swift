import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import MonkeyC
import SessionCore

/// SessionCore's actions as `session` trace events: the one mapping both replay and the live
/// hosts use, so their traces compare with `tether diff`. docs/trace-format.md lists the events.
///
/// Event names are WatchConnectivity's delegate callbacks in snake case (`did_receive_message`,
/// `user_info_transfer_did_finish`…); errors carry `code` (the `WCError` number) and `error` (its
/// name). Frames the core writes are `frame_emitted` on the channel `link`.
public enum SessionTrace {
    /// The trace's core name.
    public static let core: TraceName = "session"
    /// The core's own events in the trace, declared once: an event is named by one of these
    /// rather than by a literal interned each time it is written.
    public enum Names {
        /// `activation_did_complete`.
        public static let activationDidComplete: TraceName = "activation_did_complete"
        /// `application_context_failed`.
        public static let applicationContextFailed: TraceName = "application_context_failed"
        /// `application_context_unchanged`.
        public static let applicationContextUnchanged: TraceName = "application_context_unchanged"
        /// `did_receive_application_context`.
        public static let didReceiveApplicationContext: TraceName = "did_receive_application_context"
        /// `did_receive_file`.
        public static let didReceiveFile: TraceName = "did_receive_file"
        /// `did_receive_message`.
        public static let didReceiveMessage: TraceName = "did_receive_message"
        /// `did_receive_message_data`.
        public static let didReceiveMessageData: TraceName = "did_receive_message_data"
        /// `did_receive_reply`.
        public static let didReceiveReply: TraceName = "did_receive_reply"
        /// `did_receive_reply_data`.
        public static let didReceiveReplyData: TraceName = "did_receive_reply_data"
        /// `did_receive_user_info`.
        public static let didReceiveUserInfo: TraceName = "did_receive_user_info"
        /// `file_bytes_stored`.
        public static let fileBytesStored: TraceName = "file_bytes_stored"
        /// `file_discarded`.
        public static let fileDiscarded: TraceName = "file_discarded"
        /// `file_transfer_did_finish`.
        public static let fileTransferDidFinish: TraceName = "file_transfer_did_finish"
        /// `file_transfer_progress`.
        public static let fileTransferProgress: TraceName = "file_transfer_progress"
        /// `handshake_completed`.
        public static let handshakeCompleted: TraceName = "handshake_completed"
        /// `late_reply_discarded`.
        public static let lateReplyDiscarded: TraceName = "late_reply_discarded"
        /// `link_not_found`: the live host found no peer to link with.
        public static let linkNotFound: TraceName = "link_not_found"
        /// `message_delivered`.
        public static let messageDelivered: TraceName = "message_delivered"
        /// `message_failed`.
        public static let messageFailed: TraceName = "message_failed"
        /// `peer_reinstalled`.
        public static let peerReinstalled: TraceName = "peer_reinstalled"
        /// `reachability_did_change`.
        public static let reachabilityDidChange: TraceName = "reachability_did_change"
        /// `session_did_become_inactive`.
        public static let sessionDidBecomeInactive: TraceName = "session_did_become_inactive"
        /// `session_did_deactivate`.
        public static let sessionDidDeactivate: TraceName = "session_did_deactivate"
        /// `timeout`.
        public static let timeout: TraceName = "timeout"
        /// `user_info_transfer_did_finish`.
        public static let userInfoTransferDidFinish: TraceName = "user_info_transfer_did_finish"
        /// `violation`.
        public static let violation: TraceName = "violation"
        /// `watch_state_did_change`.
        public static let watchStateDidChange: TraceName = "watch_state_did_change"

        /// Every name above, in the order declared: the integration's `emittedEvents` is made from
        /// this list, so a name is spelled once.
        public static let all: [TraceName] = [
            activationDidComplete, applicationContextFailed, applicationContextUnchanged,
            didReceiveApplicationContext, didReceiveFile, didReceiveMessage, didReceiveMessageData,
            didReceiveReply, didReceiveReplyData, didReceiveUserInfo, fileBytesStored, fileDiscarded,
            fileTransferDidFinish, fileTransferProgress, handshakeCompleted, lateReplyDiscarded, linkNotFound,
            messageDelivered, messageFailed, peerReinstalled, reachabilityDidChange, sessionDidBecomeInactive,
            sessionDidDeactivate, timeout, userInfoTransferDidFinish, violation, watchStateDidChange]
    }

    /// The frame matcher's channel: one session link per capture.
    public static let channel = "link"

    /// The trace events for one action (`persist` has none: it is the host's business).
    public static func events(for action: SessionAction, timeNs: Int64) -> [TraceEvent] {
        switch action {
        case .write(let bytes):
            return [FrameMatcher.emittedEvent(core: SessionTrace.core, channel: channel, bytes: bytes, packet: describeFrame(bytes), timeNs: timeNs)]
        case let .writeIncomingFile(peer, id, offset, bytes):
            return [TraceEvent(timeNs: timeNs, core: core, event: Names.fileBytesStored, payload: SessionEventFields(
                .fileBytesStored(peer: peer, file: id, offset: offset, length: bytes.count)))]
        case let .discardIncomingFile(peer, id):
            return [TraceEvent(timeNs: timeNs, core: core, event: Names.fileDiscarded, payload: SessionEventFields(
                .fileDiscarded(peer: peer, file: id)))]
        case .persist:
            return []
        case .event(let event):
            return [self.event(event, timeNs: timeNs)]
        }
    }

    /// One core event as a trace event: named by ``name(of:)``, its fields the event itself
    /// (``SessionEventFields``), written as docs/trace-format.md lists them.
    public static func event(_ event: SessionEvent, timeNs: Int64) -> TraceEvent {
        TraceEvent(timeNs: timeNs, core: core, event: name(of: event), payload: SessionEventFields(event))
    }

    /// The trace name of a core event: WatchConnectivity's delegate callback in snake case.
    public static func name(of event: SessionEvent) -> TraceName {
        switch event {
        case .activationDidComplete: Names.activationDidComplete
        case .sessionDidBecomeInactive: Names.sessionDidBecomeInactive
        case .sessionDidDeactivate: Names.sessionDidDeactivate
        case .watchStateDidChange: Names.watchStateDidChange
        case .reachabilityDidChange: Names.reachabilityDidChange
        case .handshakeCompleted: Names.handshakeCompleted
        case .peerReinstalled: Names.peerReinstalled
        case .didReceiveApplicationContext: Names.didReceiveApplicationContext
        case .applicationContextUnchanged: Names.applicationContextUnchanged
        case .applicationContextFailed: Names.applicationContextFailed
        case .didReceiveMessage: Names.didReceiveMessage
        case .didReceiveMessageData: Names.didReceiveMessageData
        case .messageDelivered: Names.messageDelivered
        case .didReceiveReply: Names.didReceiveReply
        case .didReceiveReplyData: Names.didReceiveReplyData
        case .messageFailed: Names.messageFailed
        case .lateReplyDiscarded: Names.lateReplyDiscarded
        case .didReceiveUserInfo: Names.didReceiveUserInfo
        case .userInfoTransferDidFinish: Names.userInfoTransferDidFinish
        case .didReceiveFile: Names.didReceiveFile
        case .fileTransferProgress: Names.fileTransferProgress
        case .fileTransferDidFinish: Names.fileTransferDidFinish
        case .timeout: Names.timeout
        case .violation: Names.violation
        }
    }

    /// One line for a session-link frame, as `inspect` and the frame matcher show it: the control
    /// item for a whole control frame, else the frame header; a compact frame (byte 0 with bit 7,
    /// page version 3) with what it carries itself (its id and offset need the link's earlier frames).
    public static func describeFrame(_ bytes: [UInt8]) -> String {
        if let first = bytes.first, first & SessionLink.compactMarker != 0 {
            do throws(SessionFrameError) {
                let fields = try SessionFrameContext.compactFields(bytes)
                let bits = String(fields.offsetBits, radix: 16)
                return "compact \(fields.channel) id tag \(fields.idTag) \(fields.flags) offset bits 0x\(bits), \(fields.bytes.count) bytes"
            } catch {
                return "malformed compact frame: \(error)"
            }
        }
        let frame: SessionFrame
        do throws(SessionFrameError) {
            frame = try SessionFrame.decode(bytes)
        } catch {
            return "malformed frame: \(error)"
        }
        guard frame.channel == .control, frame.flags.contains(.first), frame.flags.contains(.last) else {
            return frame.description
        }
        do throws(SessionFrameError) {
            return try SessionControl.decode(frame.bytes).description
        } catch {
            return "\(frame.description): malformed control item: \(error)"
        }
    }
}
