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
    }

    /// The frame matcher's channel: one session link per capture.
    public static let channel = "link"

    /// The trace events for one action (`persist` has none: it is the host's business).
    public static func events(for action: SessionAction, timeNs: Int64) -> [TraceEvent] {
        func make(_ name: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
            TraceEvent(timeNs: timeNs, core: SessionTrace.core, event: name, fields: fields)
        }
        switch action {
        case .write(let bytes):
            return [FrameMatcher.emittedEvent(core: SessionTrace.core, channel: channel, bytes: bytes, packet: describeFrame(bytes), timeNs: timeNs)]
        case let .writeIncomingFile(peer, id, offset, bytes):
            return [make(Names.fileBytesStored, [
                "peer": .string(peer.description), "file": .int(Int64(id.rawValue)),
                "offset": .int(Int64(offset)), "length": .int(Int64(bytes.count)),
            ])]
        case let .discardIncomingFile(peer, id):
            return [make(Names.fileDiscarded, ["peer": .string(peer.description), "file": .int(Int64(id.rawValue))])]
        case .persist:
            return []
        case .event(let event):
            return [self.event(event, timeNs: timeNs)]
        }
    }

    /// One core event as a trace event.
    public static func event(_ event: SessionEvent, timeNs: Int64) -> TraceEvent {
        func make(_ name: TraceName, _ fields: [String: TraceValue] = [:]) -> TraceEvent {
            TraceEvent(timeNs: timeNs, core: SessionTrace.core, event: name, fields: fields)
        }
        func withError(_ fields: [String: TraceValue], _ error: SessionError?) -> [String: TraceValue] {
            var fields = fields
            fields["code"] = error.map { .int(Int64($0.code.rawValue)) } ?? .null
            if let error { fields["error"] = .string(error.code.name) }
            return fields
        }
        switch event {
        case let .activationDidComplete(state, error):
            return make(Names.activationDidComplete, withError(["state": .string(state.description)], error))
        case .sessionDidBecomeInactive:
            return make(Names.sessionDidBecomeInactive)
        case .sessionDidDeactivate:
            return make(Names.sessionDidDeactivate)
        case let .watchStateDidChange(paired, installed, complication):
            return make(Names.watchStateDidChange, ["paired": .bool(paired), "installed": .bool(installed), "complication": .bool(complication)])
        case .reachabilityDidChange(let reachable):
            return make(Names.reachabilityDidChange, ["reachable": .bool(reachable)])
        case let .handshakeCompleted(peer, epoch, incarnation):
            return make(Names.handshakeCompleted, [
                "peer": .string(peer.description), "peer_epoch": .int(Int64(epoch)), "peer_incarnation": .int(Int64(incarnation)),
            ])
        case .peerReinstalled(let peer):
            return make(Names.peerReinstalled, ["peer": .string(peer.description)])
        case .didReceiveApplicationContext(let value):
            return make(Names.didReceiveApplicationContext, ["value": MonkeyCJSON.traceValue(value)])
        case .applicationContextUnchanged:
            return make(Names.applicationContextUnchanged)
        case .applicationContextFailed(let error):
            return make(Names.applicationContextFailed, withError([:], error))
        case let .didReceiveMessage(id, value, expectsReply):
            return make(Names.didReceiveMessage, ["id": .int(Int64(id.rawValue)), "value": MonkeyCJSON.traceValue(value), "expects_reply": .bool(expectsReply)])
        case let .didReceiveMessageData(id, bytes, expectsReply):
            return make(Names.didReceiveMessageData, ["id": .int(Int64(id.rawValue)), "data": .string(JSONLiteral.hex(bytes)), "expects_reply": .bool(expectsReply)])
        case .messageDelivered(let id):
            return make(Names.messageDelivered, ["id": .int(Int64(id.rawValue))])
        case let .didReceiveReply(id, value):
            return make(Names.didReceiveReply, ["id": .int(Int64(id.rawValue)), "value": MonkeyCJSON.traceValue(value)])
        case let .didReceiveReplyData(id, bytes):
            return make(Names.didReceiveReplyData, ["id": .int(Int64(id.rawValue)), "data": .string(JSONLiteral.hex(bytes))])
        case let .messageFailed(id, error):
            return make(Names.messageFailed, withError(["id": .int(Int64(id.rawValue))], error))
        case .lateReplyDiscarded(let id):
            return make(Names.lateReplyDiscarded, ["id": .int(Int64(id.rawValue))])
        case let .didReceiveUserInfo(id, value, current):
            return make(Names.didReceiveUserInfo, ["id": .int(Int64(id.rawValue)), "value": MonkeyCJSON.traceValue(value), "complication": .bool(current)])
        case let .userInfoTransferDidFinish(id, error):
            return make(Names.userInfoTransferDidFinish, withError(["id": .int(Int64(id.rawValue))], error))
        case .didReceiveFile(let file):
            return make(Names.didReceiveFile, [
                "peer": .string(file.peer.description), "file": .int(Int64(file.id.rawValue)), "size": .int(Int64(file.size)),
                "metadata": file.metadata.map(MonkeyCJSON.traceValue) ?? .null,
            ])
        case let .fileTransferProgress(id, completed, total):
            return make(Names.fileTransferProgress, ["file": .int(Int64(id.rawValue)), "completed": .int(Int64(completed)), "total": .int(Int64(total))])
        case let .fileTransferDidFinish(id, error):
            return make(Names.fileTransferDidFinish, withError(["file": .int(Int64(id.rawValue))], error))
        case .timeout(let timer, _):
            // The deadline is on the core's clock, whose zero is not the trace's in a live run; in
            // replay the event's own `t_ns` is the deadline.
            return make(Names.timeout, ["what": .string(timer.description)])
        case let .violation(kind, detail):
            return make(Names.violation, ["kind": .string(kind.rawValue), "detail": .string(detail)])
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
