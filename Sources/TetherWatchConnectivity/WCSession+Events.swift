import BehaviourTrace
import MonkeyCTrace
import Foundation

/// The core's `session` events turned into the state the app reads and the callbacks it gets.
/// Runs on the host's driving thread, one event at a time; state is updated under the lock
/// first, then the callback is called with the lock released.
extension WCSession {
    func handle(_ event: TraceEvent) {
        switch event.event {
        case "api_call", "api_error":
            answer(event)
        case "api_record_malformed":
            // The host could not read a record the facade made (a facade bug): the call it was
            // is the oldest awaiting one.
            malformed(event)
        case "activation_did_complete":
            activationDidComplete(event)
        case "session_did_become_inactive":
            write { $0.activationState = .inactive }
            toDelegate("sessionDidBecomeInactive(_:)", [:]) { $0.sessionDidBecomeInactive(self) }
        case "session_did_deactivate":
            write { $0.activationState = .notActivated }
            toDelegate("sessionDidDeactivate(_:)", [:]) { $0.sessionDidDeactivate(self) }
        case "watch_state_did_change":
            let paired = event.bool("paired"), installed = event.bool("installed"), complication = event.bool("complication")
            write { state in
                if let paired { state.isPaired = paired }
                if let installed { state.isWatchAppInstalled = installed }
                if let complication { state.isComplicationEnabled = complication }
            }
            toDelegate("sessionWatchStateDidChange(_:)", [
                "paired": paired.map { .bool($0) } ?? .null, "installed": installed.map { .bool($0) } ?? .null,
                "complication": complication.map { .bool($0) } ?? .null,
            ]) { $0.sessionWatchStateDidChange(self) }
        case "reachability_did_change":
            guard let reachable = event.bool("reachable") else { return malformedField(event, "reachable") }
            write { $0.isReachable = reachable }
            toDelegate("sessionReachabilityDidChange(_:)", ["reachable": .bool(reachable)]) { $0.sessionReachabilityDidChange(self) }
        case "did_receive_application_context":
            let context = payload(event)
            write { $0.receivedApplicationContext = context }
            toDelegate("session(_:didReceiveApplicationContext:)", [:]) { $0.session(self, didReceiveApplicationContext: context) }
        case "application_context_failed":
            // No WatchConnectivity callback reports it: the app learns nothing, so the run says it.
            currentHost?.warn("the application context was not delivered: \(event.errorText) (WatchConnectivity has no callback for this)")
        case "did_receive_message":
            receiveMessage(event)
        case "did_receive_message_data":
            receiveMessageData(event)
        case "message_delivered":
            guard let id = event.int("id") else { return malformedField(event, "id") }
            // A message without a reply handler is done when delivered; one with a reply handler
            // waits for its reply.
            write { state in
                if let handlers = state.messages[id], handlers.reply == nil { state.messages[id] = nil }
            }
        case "did_receive_reply", "did_receive_reply_data":
            receiveReply(event)
        case "message_failed":
            guard let id = event.int("id") else { return malformedField(event, "id") }
            let handlers = write { $0.messages.removeValue(forKey: id) }
            guard let handlers else {
                currentHost?.warn("message \(id) failed (\(event.errorText)) but the app sent no message \(id) through WCSession")
                return
            }
            deliverError(handlers, id: id, event.wcError ?? WCError(.genericError, detail: "message_failed without a code"))
        case "did_receive_user_info":
            let userInfo = payload(event)
            toDelegate("session(_:didReceiveUserInfo:)", [
                "id": event.field("id") ?? .null, "complication": event.field("complication") ?? .null,
            ]) { $0.session(self, didReceiveUserInfo: userInfo) }
        case "user_info_transfer_did_finish":
            guard let id = event.int("id") else { return malformedField(event, "id") }
            let transfer = read { $0.userInfoTransfers.first { $0.id == id } }
            guard let transfer else {
                currentHost?.warn("user info transfer \(id) finished but it is not one the app made through this WCSession")
                return
            }
            finish(transfer, error: event.wcError)
        case "did_receive_file":
            receiveFile(event)
        case "file_transfer_progress":
            guard let id = event.int("file") else { return malformedField(event, "file") }
            guard let transfer = read({ $0.fileTransfers.first { $0.id == id } }) else { return }
            let completed = event.int("completed") ?? 0, total = event.int("total") ?? transfer.progress.totalUnitCount
            transfer.progress.totalUnitCount = total
            transfer.progress.completedUnitCount = completed
            recordCallback("progress", ["file": .int(id), "completed": .int(completed), "total": .int(total)])
        case "file_transfer_did_finish":
            guard let id = event.int("file") else { return malformedField(event, "file") }
            guard let transfer = read({ $0.fileTransfers.first { $0.id == id } }) else {
                currentHost?.warn("file transfer \(id) finished but it is not one the app made through this WCSession")
                return
            }
            finish(transfer, error: event.wcError)
        default:
            // Link-level events (frames, handshakes, timeouts) have no WatchConnectivity face.
            break
        }
    }

    // MARK: answers to the facade's calls

    private func answer(_ event: TraceEvent) {
        guard case .string(let call)? = event.field("call"), Self.facadeCalls.contains(call) else { return }
        guard let awaited = popAwaited(call) else {
            currentHost?.warn("the core answered a `\(call)` call the app did not make through this WCSession")
            return
        }
        if event.event == .apiError {
            refused(awaited, event)
        } else {
            accepted(awaited, event)
        }
    }

    /// The oldest awaiting call; when its name is not `call` (the host answered out of order,
    /// which it promises not to), a warning and the oldest call of that name instead.
    private func popAwaited(_ call: String) -> AwaitedCall? {
        let (found, headName) = write { state -> (AwaitedCall?, String?) in
            guard let head = state.awaiting.first else { return (nil, nil) }
            if head.call == call { return (state.awaiting.removeFirst(), nil) }
            guard let index = state.awaiting.firstIndex(where: { $0.call == call }) else { return (nil, head.call) }
            return (state.awaiting.remove(at: index), head.call)
        }
        if let headName {
            currentHost?.warn("the core answered `\(call)` while the oldest call awaiting an answer was `\(headName)`")
        }
        return found
    }

    private func accepted(_ awaited: AwaitedCall, _ event: TraceEvent) {
        switch awaited.binding {
        case .activate, .updateContext, .reply:
            break
        case .message(let handlers):
            guard let id = event.int("id") else { return malformedField(event, "id") }
            write { $0.messages[id] = handlers }
        case .userInfo(let transfer):
            guard let id = event.int("id") else { return malformedField(event, "id") }
            if let remaining = event.int("remaining") {
                write { $0.remainingComplicationUserInfoTransfers = Int(remaining) }
            }
            if transfer.bind(id: id) {
                post(call: "cancel_user_info", ["id": .int(id)], binding: .cancelUserInfo(transfer))
            }
        case .file(let transfer):
            guard let id = event.int("file") else { return malformedField(event, "file") }
            if transfer.bind(id: id) {
                post(call: "cancel_file", ["id": .int(id)], binding: .cancelFile(transfer))
            }
        case .cancelUserInfo(let transfer):
            // The core reports nothing more for a cancelled transfer, so it ends here.
            transfer.end()
            write { $0.userInfoTransfers.removeAll { $0 === transfer } }
        case .cancelFile(let transfer):
            transfer.end()
            write { $0.fileTransfers.removeAll { $0 === transfer } }
        }
    }

    private func refused(_ awaited: AwaitedCall, _ event: TraceEvent) {
        let error = event.wcError ?? WCError(.genericError, detail: event.string("detail"))
        switch awaited.binding {
        case .activate:
            let state = activationState
            toDelegate("session(_:activationDidCompleteWith:error:)", [
                "state": .string(state.eventName), "code": .int(Int64(error.code.rawValue)), "error": .string(error.code.name),
            ]) { $0.session(self, activationDidCompleteWith: state, error: error) }
        case .updateContext(let previous):
            write { $0.applicationContext = previous }
            currentHost?.warn("updateApplicationContext(_:) was refused by the core after it returned: \(error) "
                + "(on iOS it would have thrown; applicationContext is back to the previous one)")
        case .message(let handlers):
            deliverError(handlers, id: nil, error)
        case .reply:
            currentHost?.warn("the app's reply was refused by the core: \(error)")
        case .userInfo(let transfer):
            finish(transfer, error: error)
        case .file(let transfer):
            finish(transfer, error: error)
        case .cancelUserInfo, .cancelFile:
            currentHost?.warn("a transfer's cancel() was refused by the core: \(error)")
        }
    }

    private func malformed(_ event: TraceEvent) {
        let awaited = write { $0.awaiting.isEmpty ? nil : $0.awaiting.removeFirst() }
        let detail = event.string("detail") ?? "no detail"
        currentHost?.warn("the host could not read the facade's `\(awaited?.call ?? "unknown")` record: \(detail)")
        guard let awaited else { return }
        refused(awaited, TraceEvent(timeNs: event.timeNs, core: event.core, event: "api_error", fields: [
            "call": .string(awaited.call), "code": .int(Int64(WCError.Code.genericError.rawValue)),
            "error": .string(WCError.Code.genericError.name), "detail": .string(detail),
        ]))
    }

    // MARK: events

    private func activationDidComplete(_ event: TraceEvent) {
        guard let name = event.string("state"), let state = WCSessionActivationState(eventName: name) else {
            return malformedField(event, "state")
        }
        let error = event.wcError
        write { $0.activationState = state }
        toDelegate("session(_:activationDidCompleteWith:error:)", [
            "state": .string(state.eventName), "code": event.field("code") ?? .null,
        ]) { $0.session(self, activationDidCompleteWith: state, error: error) }
    }

    private func receiveMessage(_ event: TraceEvent) {
        guard let id = event.int("id") else { return malformedField(event, "id") }
        let message = payload(event)
        if event.bool("expects_reply") ?? false {
            let replyHandler = makeReplyHandler(id: id)
            toDelegate("session(_:didReceiveMessage:replyHandler:)", ["id": .int(id)]) {
                $0.session(self, didReceiveMessage: message, replyHandler: replyHandler)
            }
        } else {
            toDelegate("session(_:didReceiveMessage:)", ["id": .int(id)]) { $0.session(self, didReceiveMessage: message) }
        }
    }

    private func receiveMessageData(_ event: TraceEvent) {
        guard let id = event.int("id") else { return malformedField(event, "id") }
        guard let hex = event.string("data"), let bytes = MonkeyCJSON.decodeHex(hex) else { return malformedField(event, "data") }
        let data = Data(bytes)
        if event.bool("expects_reply") ?? false {
            let replyHandler = makeDataReplyHandler(id: id)
            toDelegate("session(_:didReceiveMessageData:replyHandler:)", ["id": .int(id), "data": .string(hex)]) {
                $0.session(self, didReceiveMessageData: data, replyHandler: replyHandler)
            }
        } else {
            toDelegate("session(_:didReceiveMessageData:)", ["id": .int(id), "data": .string(hex)]) {
                $0.session(self, didReceiveMessageData: data)
            }
        }
    }

    private func receiveReply(_ event: TraceEvent) {
        guard let id = event.int("id") else { return malformedField(event, "id") }
        let handlers = write { $0.messages.removeValue(forKey: id) }
        guard let handlers, let reply = handlers.reply else {
            currentHost?.warn("a reply to message \(id) arrived but the app sent no message \(id) with a reply handler through this WCSession")
            return
        }
        switch (reply, event.event) {
        case (.dictionary(let handler), "did_receive_reply"):
            let value = payload(event)
            recordCallback("replyHandler", ["id": .int(id), "value": event.field("value") ?? .null])
            handler(value)
        case (.data(let handler), "did_receive_reply_data"):
            guard let hex = event.string("data"), let bytes = MonkeyCJSON.decodeHex(hex) else { return malformedField(event, "data") }
            recordCallback("replyHandler", ["id": .int(id), "data": .string(hex)])
            handler(Data(bytes))
        default:
            // The watch answered a dictionary message with data or the other way round: the
            // framework would not deliver it to a handler of the other type.
            currentHost?.warn("message \(id) (\(handlers.api)) got a reply of the other kind (\(event.event)); it was not delivered")
        }
    }

    private func receiveFile(_ event: TraceEvent) {
        guard let id = event.int("file") else { return malformedField(event, "file") }
        var metadata: [String: Any]?
        if let field = event.field("metadata"), field != .null {
            metadata = payload(event, key: "metadata")
        }
        // The trace has the file's size, not its bytes: the app gets an empty file of that name
        // (see WCSessionFile).
        let directory = scratchDirectory.appendingPathComponent("received", isDirectory: true)
        let url = directory.appendingPathComponent("file-\(id)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data().write(to: url)
        } catch {
            currentHost?.warn("received file \(id): cannot create \(url.path) for the app: \(error)")
        }
        let file = WCSessionFile(fileURL: url, metadata: metadata)
        toDelegate("session(_:didReceive:)", ["file": .int(id), "size": event.field("size") ?? .null]) {
            $0.session(self, didReceive: file)
        }
    }

    // MARK: helpers

    /// An event's dictionary field as the app's `[String: Any]`; problems are warned about.
    private func payload(_ event: TraceEvent, key: String = "value") -> [String: Any] {
        let (value, problems) = Payload.dictionary(event.field(key))
        for problem in problems {
            currentHost?.warn("\(event.event) at \(event.timeNs) ns: \(key): \(problem)")
        }
        return value
    }

    private func malformedField(_ event: TraceEvent, _ key: String) {
        currentHost?.warn("\(event.event) at \(event.timeNs) ns has no usable `\(key)`; the app was not told")
    }
}

extension TraceEvent {
    func int(_ key: String) -> Int64? {
        if case .int(let value)? = field(key) { return value }
        return nil
    }

    func bool(_ key: String) -> Bool? {
        if case .bool(let value)? = field(key) { return value }
        return nil
    }

    func string(_ key: String) -> String? {
        if case .string(let value)? = field(key) { return value }
        return nil
    }

    /// The error an event's `code`/`error`/`detail` fields describe; `nil` for success.
    var wcError: WCError? {
        WCError(eventCode: int("code"), name: string("error"), detail: string("detail"))
    }

    /// `7012 messageReplyTimedOut` or `no error`.
    var errorText: String {
        guard let code = int("code") else { return "no error code" }
        return "\(code) \(string("error") ?? "")"
    }
}
