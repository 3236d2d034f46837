import BehaviourTrace
import MonkeyC
import MonkeyCTrace
import SessionCore

/// The fields of a `session` trace event, held as SessionCore's own value (the event the core
/// gave, or the host-side file action) rather than a dictionary of texts: the core's event is
/// the record, and its fields are written from it only when the line is written or a field read.
///
/// The line is the one docs/trace-format.md lists, unchanged: ``forEachField(_:)`` gives the
/// fields in key order, as the dictionary they replace was written. Two events are equal when
/// they write the same fields (not when the values they hold are equal): a `timeout` keeps no
/// deadline (it is on the core's clock, whose zero is not the trace's in a live run), and a
/// MonkeyC value is compared as the JSON it writes, so a live trace and a replay still compare
/// as their lines do.
struct SessionEventFields: TracePayloadComparedByWrittenFields {
    /// What the fields are read from.
    enum Source: Sendable, Hashable {
        /// A ``SessionEvent`` handed to the delegate.
        case event(SessionEvent)
        /// `file_bytes_stored`: the host stores `length` bytes at `offset` of the partial file.
        case fileBytesStored(peer: SessionDeviceID, file: FileTransferID, offset: Int, length: Int)
        /// `file_discarded`: the host deletes the partial file.
        case fileDiscarded(peer: SessionDeviceID, file: FileTransferID)
    }

    /// What the fields are read from.
    let source: Source

    /// The fields of `event`. A `timeout`'s deadline is dropped: the line does not carry it.
    init(_ event: SessionEvent) {
        if case .timeout(let timer, _) = event {
            source = .event(.timeout(timer, deadline: .zero))
        } else {
            source = .event(event)
        }
    }

    /// The fields of a host-side file action.
    init(_ source: Source) {
        self.source = source
    }

    /// Every field, keys in ascending order (each case lists its keys sorted; `code` and `error`,
    /// where an error may be, come first).
    func forEachField(_ body: (String, TraceValue) -> Void) {
        visitFields(convertingMonkeyC: true, body)
    }

    /// The field named `key`. A MonkeyC value (`value`, `metadata`) is converted only when it is
    /// the field asked for: the WatchConnectivity facade reads a message's `id` and flags beside
    /// its value, and each read through ``forEachField(_:)`` would convert the value again.
    func field(_ key: String) -> TraceValue? {
        var found: TraceValue?
        visitFields(convertingMonkeyC: key == "value" || key == "metadata") { name, value in
            if name == key { found = value }
        }
        return found
    }

    /// Calls `body` with every field in key order; with `convertingMonkeyC` false, a MonkeyC
    /// value's field is given as `null` instead of its value (for a reader that skips it).
    private func visitFields(convertingMonkeyC: Bool, _ body: (String, TraceValue) -> Void) {
        func id(_ raw: some BinaryInteger) -> TraceValue { .int(Int64(raw)) }
        func monkeyC(_ value: MonkeyCValue) -> TraceValue { convertingMonkeyC ? MonkeyCJSON.traceValue(value) : .null }
        /// `code` is always written (`null` without an error); `error` only with one.
        func error(_ error: SessionError?) {
            body("code", error.map { .int(Int64($0.code.rawValue)) } ?? .null)
            if let error { body("error", .string(error.code.name)) }
        }
        switch source {
        case let .fileBytesStored(peer, file, offset, length):
            body("file", id(file.rawValue))
            body("length", .int(Int64(length)))
            body("offset", .int(Int64(offset)))
            body("peer", .string(peer.description))
        case let .fileDiscarded(peer, file):
            body("file", id(file.rawValue))
            body("peer", .string(peer.description))
        case .event(let event):
            switch event {
            case let .activationDidComplete(state, failure):
                error(failure)
                body("state", .string(state.description))
            case .sessionDidBecomeInactive, .sessionDidDeactivate, .applicationContextUnchanged:
                break
            case let .watchStateDidChange(paired, installed, complication):
                body("complication", .bool(complication))
                body("installed", .bool(installed))
                body("paired", .bool(paired))
            case .reachabilityDidChange(let reachable):
                body("reachable", .bool(reachable))
            case let .handshakeCompleted(peer, epoch, incarnation):
                body("peer", .string(peer.description))
                body("peer_epoch", .int(Int64(epoch)))
                body("peer_incarnation", .int(Int64(incarnation)))
            case .peerReinstalled(let peer):
                body("peer", .string(peer.description))
            case .didReceiveApplicationContext(let value):
                body("value", monkeyC(value))
            case .applicationContextFailed(let failure):
                error(failure)
            case let .didReceiveMessage(message, value, expectsReply):
                body("expects_reply", .bool(expectsReply))
                body("id", id(message.rawValue))
                body("value", monkeyC(value))
            case let .didReceiveMessageData(message, bytes, expectsReply):
                body("data", .string(JSONLiteral.hex(bytes)))
                body("expects_reply", .bool(expectsReply))
                body("id", id(message.rawValue))
            case .messageDelivered(let message), .lateReplyDiscarded(let message):
                body("id", id(message.rawValue))
            case let .didReceiveReply(message, value):
                body("id", id(message.rawValue))
                body("value", monkeyC(value))
            case let .didReceiveReplyData(message, bytes):
                body("data", .string(JSONLiteral.hex(bytes)))
                body("id", id(message.rawValue))
            case let .messageFailed(message, failure):
                error(failure)
                body("id", id(message.rawValue))
            case let .didReceiveUserInfo(transfer, value, current):
                body("complication", .bool(current))
                body("id", id(transfer.rawValue))
                body("value", monkeyC(value))
            case let .userInfoTransferDidFinish(transfer, failure):
                error(failure)
                body("id", id(transfer.rawValue))
            case .didReceiveFile(let file):
                body("file", id(file.id.rawValue))
                body("metadata", file.metadata.map(monkeyC) ?? .null)
                body("peer", .string(file.peer.description))
                body("size", .int(Int64(file.size)))
            case let .fileTransferProgress(file, completed, total):
                body("completed", .int(Int64(completed)))
                body("file", id(file.rawValue))
                body("total", .int(Int64(total)))
            case let .fileTransferDidFinish(file, failure):
                error(failure)
                body("file", id(file.rawValue))
            case .timeout(let timer, _):
                body("what", .string(timer.description))
            case let .violation(kind, detail):
                body("detail", .string(detail))
                body("kind", .string(kind.rawValue))
            }
        }
    }
}
