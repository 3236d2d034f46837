import AppLoop
import BehaviourTrace
import Foundation
import MonkeyC
import MonkeyCTrace
import SessionCore
import Synchronization

/// `WCSession.activationState`'s values, with the framework's raw values.
public enum WCSessionActivationState: Int, Sendable, Hashable {
    /// The session is not activated: nothing can be sent.
    case notActivated = 0
    /// The phone is switching watches: received content is still delivered, nothing new is sent.
    case inactive = 1
    /// The session is activated.
    case activated = 2

    /// The state a `session` event's `state` field names.
    init?(eventName: String) {
        switch eventName {
        case "notActivated": self = .notActivated
        case "inactive": self = .inactive
        case "activated": self = .activated
        default: return nil
        }
    }

    /// The name traces write (`activated`).
    var eventName: String {
        switch self {
        case .notActivated: "notActivated"
        case .inactive: "inactive"
        case .activated: "activated"
        }
    }
}

/// WatchConnectivity's session, iOS side, as Swift sees it, backed by SessionCore through an
/// `AppLoop` host: the app's calls become the core's API-call records (core `session`), and the
/// core's events become the delegate's callbacks, the handlers' calls and the state the app reads.
///
/// The state the app reads synchronously (``activationState``, ``isReachable``, ``isPaired``…)
/// is what the facade has seen in the core's events, updated before the matching callback is
/// called; it is never asked of the core, which lives behind the host and answers only in events.
///
/// Every call the app makes and every callback delivered is written to the host's trace as an
/// `app` event (`app_call`, `callback`, with `sdk: WatchConnectivity` and the Swift name in `api`),
/// so a replay's trace shows the app's side next to the core's.
///
/// `@unchecked Sendable`: every mutable field is in `state`, read and written only under `lock` (released
/// before any callback or handler runs, so an app calling back in does not deadlock); `host` is a weak
/// reference set once in `init`.
public final class WCSession: @unchecked Sendable {
    /// The session of the current host (`AppLoop.currentHost`): one per host, made the first time.
    ///
    /// With no current host (no `ReplaySession.makeCurrent()` and no live host), a detached
    /// session that answers as a device without WatchConnectivity: `activate()` reports
    /// `.notActivated` with `WCError.sessionNotSupported` to the delegate at once, sends fail with
    /// that error at once, `updateApplicationContext` throws it, transfers are returned already
    /// ended with no callback; nothing traps and nothing is recorded (there is no trace to write).
    public class var `default`: WCSession {
        guard let host = AppLoop.currentHost else { return detached }
        return host.facade("WCSession") { WCSession(host: host) }
    }

    private static let detached = WCSession(host: nil)

    /// Always true: the facade stands for an iPhone, where WatchConnectivity is supported.
    public class func isSupported() -> Bool { true }

    /// The API name of this SDK in the `app` events.
    static let sdk = "WatchConnectivity"

    private weak var host: (any AppLoopHost)?
    private let lock = NSLock()
    private var state = State()
    /// Tells this session's files apart from another's in the same process (parallel tests).
    private let serial: Int

    private static let serials = Mutex(0)

    /// A session bound to `host`, observing its `session` core; `nil`: the detached session
    /// (see ``default``). Apps use ``default``; this is for hosts and tests that hold a host
    /// that is not current.
    public init(host: (any AppLoopHost)?) {
        self.host = host
        serial = Self.serials.withLock { serials in
            serials += 1
            return serials
        }
        guard let host else { return }
        if !host.cores.contains("session") {
            host.warn("WCSession: the host runs \(host.cores.isEmpty ? "no core" : "only \(host.cores.joined(separator: ", "))"), not core session; "
                + "WatchConnectivity calls will get no answers (replay a set recorded with `tether live session --role phone`)")
        }
        host.observe(core: "session") { [weak self] event in
            self?.handle(event)
        }
    }

    // MARK: state

    struct State {
        weak var delegate: (any WCSessionDelegate)?
        var activationState: WCSessionActivationState = .notActivated
        var isPaired = false
        var isWatchAppInstalled = false
        var isComplicationEnabled = false
        var isReachable = false
        var remainingComplicationUserInfoTransfers = SessionConfiguration().complicationTransfersPerWindow
        var applicationContext: [String: Any] = [:]
        var receivedApplicationContext: [String: Any] = [:]
        /// Calls posted to the core, oldest first, awaiting their `api_call` or `api_error`.
        var awaiting: [AwaitedCall] = []
        /// Sent messages by the core's id, until their reply, delivery or failure.
        var messages: [Int64: MessageHandlers] = [:]
        /// Received messages the app has replied to (the reply handler works once).
        var replied: Set<Int64> = []
        var userInfoTransfers: [WCSessionUserInfoTransfer] = []
        var fileTransfers: [WCSessionFileTransfer] = []
        var watchDirectory: URL?
    }

    /// A posted call and what its answer binds to.
    struct AwaitedCall {
        var call: String
        var binding: Binding
    }

    enum Binding {
        case activate
        case updateContext(previous: [String: Any])
        case message(MessageHandlers)
        case reply(id: Int64)
        case userInfo(WCSessionUserInfoTransfer)
        case cancelUserInfo(WCSessionUserInfoTransfer)
        case file(WCSessionFileTransfer)
        case cancelFile(WCSessionFileTransfer)
    }

    /// What the app gave `sendMessage` / `sendMessageData`.
    struct MessageHandlers {
        enum Reply {
            case dictionary(([String: Any]) -> Void)
            case data((Data) -> Void)
        }
        var api: String
        var reply: Reply?
        var error: ((any Error) -> Void)?
    }

    /// The calls this facade makes: `api_call`/`api_error` events of other calls (the host's
    /// own `start`, `set_paired`) are not answers to it.
    static let facadeCalls: Set<String> = [
        "activate", "update_context", "send_message", "send_message_data", "reply", "reply_data",
        "transfer_user_info", "transfer_complication", "cancel_user_info", "transfer_file", "cancel_file",
    ]

    func read<T>(_ body: (State) -> T) -> T {
        lock.withLock { body(state) }
    }

    func write<T>(_ body: (inout State) -> T) -> T {
        lock.withLock { body(&state) }
    }

    // MARK: properties

    /// The object the session's callbacks go to, held weakly as WatchConnectivity holds it:
    /// keep your own reference to it.
    public var delegate: (any WCSessionDelegate)? {
        get { read { $0.delegate } }
        set { write { $0.delegate = newValue } }
    }

    /// The state the last activation event left.
    public var activationState: WCSessionActivationState { read { $0.activationState } }
    /// Whether a watch is paired, as the last `sessionWatchStateDidChange` said.
    public var isPaired: Bool { read { $0.isPaired } }
    /// Whether the watch app is installed on the paired watch.
    public var isWatchAppInstalled: Bool { read { $0.isWatchAppInstalled } }
    /// Whether the app's complication is on the active watch face.
    public var isComplicationEnabled: Bool { read { $0.isComplicationEnabled } }
    /// Whether the watch app can be messaged now (`sendMessage` needs it).
    public var isReachable: Bool { read { $0.isReachable } }
    /// Complication transfers left in the current budget, as the core last reported it (the
    /// core's default budget until the first `transferCurrentComplicationUserInfo`).
    public var remainingComplicationUserInfoTransfers: Int { read { $0.remainingComplicationUserInfoTransfers } }
    /// The last context the app gave ``updateApplicationContext(_:)`` (restored to the one before
    /// when the core refuses a new one).
    public var applicationContext: [String: Any] { read { $0.applicationContext } }
    /// The watch's last context received.
    public var receivedApplicationContext: [String: Any] { read { $0.receivedApplicationContext } }
    /// User info transfers queued or under way, oldest first.
    public var outstandingUserInfoTransfers: [WCSessionUserInfoTransfer] { read { $0.userInfoTransfers } }
    /// File transfers queued or under way, oldest first.
    public var outstandingFileTransfers: [WCSessionFileTransfer] { read { $0.fileTransfers } }
    /// Always false: the facade hands each item to the delegate the instant its event arrives,
    /// so nothing waits for delivery.
    public var hasContentPending: Bool { false }

    /// A directory for files shared with the watch app, while the session is activated with the
    /// watch app installed (`nil` otherwise, as on iOS). A per-session folder in the temporary
    /// directory, made on first use; a failure to make it is warned about, and the URL is still
    /// returned so the app's own file error says what went wrong.
    public var watchDirectoryURL: URL? {
        let (usable, existing) = read { ($0.activationState == .activated && $0.isPaired && $0.isWatchAppInstalled, $0.watchDirectory) }
        guard usable else { return nil }
        if let existing { return existing }
        let url = scratchDirectory.appendingPathComponent("watch", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            host?.warn("WCSession.watchDirectoryURL: cannot create \(url.path): \(error)")
        }
        write { $0.watchDirectory = url }
        return url
    }

    /// This session's folder for files it makes (received files, the watch directory).
    var scratchDirectory: URL {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("TetherWatchConnectivity-\(ProcessInfo.processInfo.processIdentifier)-\(serial)", isDirectory: true)
    }

    // MARK: calls

    /// Starts the session; the outcome comes to `session(_:activationDidCompleteWith:error:)`.
    ///
    /// iOS raises an exception when no delegate is set; the facade warns instead and still
    /// activates, so the run shows what the app would then have missed.
    public func activate() {
        recordCall("activate()", [:])
        guard let host else {
            deliverDetachedActivation()
            return
        }
        if delegate == nil {
            host.warn("WCSession.activate() was called with no delegate: WatchConnectivity raises an exception for this on iOS; set `delegate` before activating")
        }
        post(call: "activate", [:], binding: .activate)
    }

    /// Sends the app's latest state; the watch gets only the last one sent.
    /// - Throws: `WCError.sessionNotActivated` before activation, `.payloadUnsupportedTypes`
    ///   for a value that is not a property-list type, `.sessionNotSupported` with no host. The
    ///   core's own refusals (too large, not paired…) come after this returns and cannot be
    ///   thrown: they are warnings, and ``applicationContext`` goes back to the previous one.
    public func updateApplicationContext(_ applicationContext: [String: Any]) throws(WCError) {
        let converted: Result<MonkeyCValue, PayloadError>
        do throws(PayloadError) {
            converted = .success(try Payload.monkeyC(applicationContext))
        } catch {
            converted = .failure(error)
        }
        recordCall("updateApplicationContext(_:)", ["context": converted.traceValue])
        guard host != nil else { throw WCError(.sessionNotSupported, detail: "no AppLoop host is current") }
        guard activationState != .notActivated else {
            throw WCError(.sessionNotActivated, detail: "updateApplicationContext(_:) before activation completed")
        }
        let value: MonkeyCValue
        switch converted {
        case .success(let made): value = made
        case .failure(let problem): throw problem.wcError
        }
        let previous = write { state -> [String: Any] in
            let previous = state.applicationContext
            state.applicationContext = applicationContext
            return previous
        }
        post(call: "update_context", ["context": MonkeyCJSON.traceValue(value)], binding: .updateContext(previous: previous))
    }

    /// Sends a message the watch app gets at once; `replyHandler` gets its reply (give `nil`
    /// when none is expected), `errorHandler` why it failed.
    public func sendMessage(_ message: [String: Any], replyHandler: (([String: Any]) -> Void)?, errorHandler: ((any Error) -> Void)? = nil) {
        let api = "sendMessage(_:replyHandler:errorHandler:)"
        let converted: Result<MonkeyCValue, PayloadError>
        do throws(PayloadError) {
            converted = .success(try Payload.monkeyC(message))
        } catch {
            converted = .failure(error)
        }
        recordCall(api, ["message": converted.traceValue, "expects_reply": .bool(replyHandler != nil)])
        let handlers = MessageHandlers(api: api, reply: replyHandler.map { .dictionary($0) }, error: errorHandler)
        switch converted {
        case .failure(let problem):
            refuseMessage(handlers, problem.wcError)
        case .success(let value):
            sendMessage(handlers, call: "send_message",
                        ["message": MonkeyCJSON.traceValue(value), "expects_reply": .bool(replyHandler != nil)])
        }
    }

    /// Sends bytes the watch app gets at once; `replyHandler` gets its reply bytes.
    public func sendMessageData(_ data: Data, replyHandler: ((Data) -> Void)?, errorHandler: ((any Error) -> Void)? = nil) {
        let api = "sendMessageData(_:replyHandler:errorHandler:)"
        let hex = JSONLiteral.hex([UInt8](data))
        recordCall(api, ["data": .string(hex), "expects_reply": .bool(replyHandler != nil)])
        let handlers = MessageHandlers(api: api, reply: replyHandler.map { .data($0) }, error: errorHandler)
        sendMessage(handlers, call: "send_message_data", ["data": .string(hex), "expects_reply": .bool(replyHandler != nil)])
    }

    private func sendMessage(_ handlers: MessageHandlers, call: String, _ record: [String: TraceValue]) {
        guard host != nil else {
            refuseMessage(handlers, WCError(.sessionNotSupported, detail: "no AppLoop host is current"))
            return
        }
        guard activationState != .notActivated else {
            refuseMessage(handlers, WCError(.sessionNotActivated, detail: "\(handlers.api) before activation completed"))
            return
        }
        post(call: call, record, binding: .message(handlers))
    }

    /// The error handler called with `error` without asking the core: through the host's queue,
    /// so it comes after the call returned, as the framework's would; at once when detached.
    private func refuseMessage(_ handlers: MessageHandlers, _ error: WCError) {
        guard let host else {
            deliverError(handlers, id: nil, error)
            return
        }
        host.post { [weak self] in self?.deliverError(handlers, id: nil, error) }
    }

    /// Queues a dictionary for the watch app, delivered in order even when it is not running.
    @discardableResult
    public func transferUserInfo(_ userInfo: [String: Any] = [:]) -> WCSessionUserInfoTransfer {
        transfer(userInfo, complication: false)
    }

    /// Queues a dictionary for the watch's complication, ahead of other user info; it uses one
    /// of ``remainingComplicationUserInfoTransfers``.
    @discardableResult
    public func transferCurrentComplicationUserInfo(_ userInfo: [String: Any] = [:]) -> WCSessionUserInfoTransfer {
        transfer(userInfo, complication: true)
    }

    private func transfer(_ userInfo: [String: Any], complication: Bool) -> WCSessionUserInfoTransfer {
        let api = complication ? "transferCurrentComplicationUserInfo(_:)" : "transferUserInfo(_:)"
        let converted: Result<MonkeyCValue, PayloadError>
        do throws(PayloadError) {
            converted = .success(try Payload.monkeyC(userInfo))
        } catch {
            converted = .failure(error)
        }
        recordCall(api, ["user_info": converted.traceValue])
        guard let host else {
            return WCSessionUserInfoTransfer(userInfo: userInfo, isCurrentComplicationInfo: complication, session: nil, transferring: false)
        }
        let transfer = WCSessionUserInfoTransfer(userInfo: userInfo, isCurrentComplicationInfo: complication, session: self, transferring: true)
        write { $0.userInfoTransfers.append(transfer) }
        switch converted {
        case .failure(let problem):
            host.post { [weak self] in self?.finish(transfer, error: problem.wcError) }
        case .success(let value):
            post(call: complication ? "transfer_complication" : "transfer_user_info",
                 ["user_info": MonkeyCJSON.traceValue(value)], binding: .userInfo(transfer))
        }
        return transfer
    }

    /// Queues a file for the watch app: its bytes are read now and sent in the background.
    /// A file that cannot be read finishes with `WCError.fileAccessDenied`.
    @discardableResult
    public func transferFile(_ file: URL, metadata: [String: Any]?) -> WCSessionFileTransfer {
        var convertedMetadata: Result<MonkeyCValue, PayloadError>?
        if let metadata {
            do throws(PayloadError) {
                convertedMetadata = .success(try Payload.monkeyC(metadata))
            } catch {
                convertedMetadata = .failure(error)
            }
        }
        let bytes: Result<[UInt8], WCError>
        do {
            bytes = .success([UInt8](try Data(contentsOf: file)))
        } catch {
            bytes = .failure(WCError(.fileAccessDenied, detail: "cannot read \(file.path): \(error)"))
        }
        var fields: [String: TraceValue] = ["file": .string(file.lastPathComponent)]
        if case .success(let read) = bytes { fields["size"] = .int(Int64(read.count)) }
        if let convertedMetadata { fields["metadata"] = convertedMetadata.traceValue }
        recordCall("transferFile(_:metadata:)", fields)
        let described = WCSessionFile(fileURL: file, metadata: metadata)
        guard let host else { return WCSessionFileTransfer(file: described, session: nil, transferring: false) }
        let transfer = WCSessionFileTransfer(file: described, session: self, transferring: true)
        write { $0.fileTransfers.append(transfer) }
        var record: [String: TraceValue] = [:]
        switch (bytes, convertedMetadata) {
        case (.failure(let error), _):
            host.post { [weak self] in self?.finish(transfer, error: error) }
            return transfer
        case (.success, .failure(let problem)?):
            host.post { [weak self] in self?.finish(transfer, error: problem.wcError) }
            return transfer
        case (.success(let read), let metadata):
            record["content"] = .object(["hex": .string(JSONLiteral.hex(read))])
            transfer.progress.totalUnitCount = Int64(read.count)
            if case .success(let value)? = metadata { record["metadata"] = MonkeyCJSON.traceValue(value) }
        }
        post(call: "transfer_file", record, binding: .file(transfer))
        return transfer
    }

    // MARK: cancels and replies (called by the transfer objects and reply handlers)

    func cancelUserInfoTransfer(_ transfer: WCSessionUserInfoTransfer, id: Int64?) {
        recordCall("WCSessionUserInfoTransfer.cancel()", ["id": id.map { .int($0) } ?? .null])
        // Without an id the transfer is still on its way to the core: `bind` sends the cancel.
        guard let id else { return }
        post(call: "cancel_user_info", ["id": .int(id)], binding: .cancelUserInfo(transfer))
    }

    func cancelFileTransfer(_ transfer: WCSessionFileTransfer, id: Int64?) {
        recordCall("WCSessionFileTransfer.cancel()", ["file": id.map { .int($0) } ?? .null])
        guard let id else { return }
        post(call: "cancel_file", ["id": .int(id)], binding: .cancelFile(transfer))
    }

    private func reply(to id: Int64, with reply: [String: Any]) {
        let converted: Result<MonkeyCValue, PayloadError>
        do throws(PayloadError) {
            converted = .success(try Payload.monkeyC(reply))
        } catch {
            converted = .failure(error)
        }
        recordCall("replyHandler", ["id": .int(id), "reply": converted.traceValue])
        guard claimReply(id) else { return }
        switch converted {
        case .failure(let problem):
            host?.warn("the reply to message \(id) was not sent: \(problem.description) (WCError 7010 payloadUnsupportedTypes)")
        case .success(let value):
            post(call: "reply", ["id": .int(id), "reply": MonkeyCJSON.traceValue(value)], binding: .reply(id: id))
        }
    }

    private func reply(to id: Int64, with data: Data) {
        let hex = JSONLiteral.hex([UInt8](data))
        recordCall("replyHandler", ["id": .int(id), "data": .string(hex)])
        guard claimReply(id) else { return }
        post(call: "reply_data", ["id": .int(id), "data": .string(hex)], binding: .reply(id: id))
    }

    /// True the first time the app replies to `id`; a second reply is warned about and dropped.
    private func claimReply(_ id: Int64) -> Bool {
        let first = write { $0.replied.insert(id).inserted }
        if !first { host?.warn("the reply handler of message \(id) was called more than once; only the first reply is sent") }
        return first
    }

    // MARK: posting and recording

    func post(call: String, _ record: [String: TraceValue], binding: Binding) {
        guard let host else { return }
        var record = record
        record["call"] = .string(call)
        // Both under the one lock: the core's answers are matched to the waiting calls in order,
        // so the waiting list and the host's queue must hold the calls in one order, even when
        // the app calls from two threads at once (a callback and a task on Swift's pool).
        write { state in
            state.awaiting.append(AwaitedCall(call: call, binding: binding))
            host.post(core: "session", record: record)
        }
    }

    func recordCall(_ api: String, _ fields: [String: TraceValue]) {
        var fields = fields
        fields["sdk"] = .string(Self.sdk)
        fields["api"] = .string(api)
        host?.recordAppEvent(.appCall, fields: fields)
    }

    func recordCallback(_ api: String, _ fields: [String: TraceValue]) {
        var fields = fields
        fields["sdk"] = .string(Self.sdk)
        fields["api"] = .string(api)
        host?.recordAppEvent(.appCallback, fields: fields)
    }

    /// Records the callback and calls the delegate with it, outside the lock; warns when there
    /// is no delegate to take it.
    func toDelegate(_ api: String, _ fields: [String: TraceValue], _ body: (any WCSessionDelegate) -> Void) {
        guard let delegate else {
            host?.warn("\(api) had no delegate to go to (WCSession.delegate is nil or was released)")
            return
        }
        recordCallback(api, fields)
        body(delegate)
    }

    private func deliverDetachedActivation() {
        delegate?.session(self, activationDidCompleteWith: .notActivated,
                          error: WCError(.sessionNotSupported, detail: "no AppLoop host is current: make a ReplaySession current first"))
    }

    // MARK: delivering (used by the event handling in WCSession+Events.swift)

    func deliverError(_ handlers: MessageHandlers, id: Int64?, _ error: WCError) {
        guard let handler = handlers.error else { return }
        var fields: [String: TraceValue] = ["code": .int(Int64(error.code.rawValue)), "error": .string(error.code.name)]
        if let id { fields["id"] = .int(id) }
        recordCallback("errorHandler", fields)
        handler(error)
    }

    func finish(_ transfer: WCSessionUserInfoTransfer, error: WCError?) {
        transfer.end()
        write { $0.userInfoTransfers.removeAll { $0 === transfer } }
        toDelegate("session(_:didFinish:error:)", [
            "transfer": .string(transfer.isCurrentComplicationInfo ? "complication" : "user_info"),
            "id": transfer.id.map { .int($0) } ?? .null,
            "code": error.map { .int(Int64($0.code.rawValue)) } ?? .null,
        ]) { $0.session(self, didFinish: transfer, error: error) }
    }

    func finish(_ transfer: WCSessionFileTransfer, error: WCError?) {
        transfer.end()
        write { $0.fileTransfers.removeAll { $0 === transfer } }
        toDelegate("session(_:didFinish:error:)", [
            "transfer": .string("file"),
            "file": transfer.id.map { .int($0) } ?? .null,
            "code": error.map { .int(Int64($0.code.rawValue)) } ?? .null,
        ]) { $0.session(self, didFinish: transfer, error: error) }
    }

    func makeReplyHandler(id: Int64) -> ([String: Any]) -> Void {
        { [weak self] reply in self?.reply(to: id, with: reply) }
    }

    func makeDataReplyHandler(id: Int64) -> (Data) -> Void {
        { [weak self] data in self?.reply(to: id, with: data) }
    }

    /// The host, for the event handling's warnings.
    var currentHost: (any AppLoopHost)? { host }
}

extension Result where Success == MonkeyCValue, Failure == PayloadError {
    /// What the trace shows of an argument: the value, or why it was refused.
    var traceValue: TraceValue {
        switch self {
        case .success(let value): MonkeyCJSON.traceValue(value)
        case .failure(let problem): .object(["refused": .string(problem.description)])
        }
    }
}
