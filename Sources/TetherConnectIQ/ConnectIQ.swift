import AppLoop
import BehaviourTrace
import MessagingCore
import MonkeyC
import MonkeyCFoundation
import MonkeyCTrace

/// The Connect IQ Mobile SDK's root object (`ConnectIQ`), with the methods and names Swift sees
/// on iOS, backed by MessagingCore through the current ``AppLoop`` host: a ``ReplaySession`` in
/// tests (the recorded watch answers what the core sends), a live host against a real watch.
///
/// Every call returns at once, as on the phone; results come later, on the host's thread, in the
/// order of its clock. Each call and each callback is written to the host's trace as an `app`
/// event, so `tether diff` compares two versions of the app on one recording.
///
/// `@unchecked Sendable`: every mutable field is in `state`, read and written only under `lock`; the
/// app's delegates and blocks kept there (not Sendable) are called outside it, on the host's thread.
public final class ConnectIQ: @unchecked Sendable {
    private let host: (any AppLoopHost)?
    /// Recursive: a registration decides whether it is the first (or the last) and posts its call
    /// in one critical section (``post(_:_:awaiting:)`` takes the lock again), so two threads
    /// registering and unregistering at once reach the core in the order the facade's state says.
    private let lock = NSRecursiveLock()
    private var state = State()

    /// The calls posted to the core that wait for its `api_call` (or `api_error`) event, which
    /// gives them their id.
    private enum Awaiting {
        case send(app: IQApp, progress: IQSendMessageProgress?, completion: IQSendMessageCompletion?)
        case appStatus(app: IQApp, completion: ((IQAppStatus?) -> Void)?)
        case openApp(app: IQApp, completion: IQSendMessageCompletion?)
        case other(String)

        var call: String {
            switch self {
            case .send: "send"
            case .appStatus: "app_status"
            case .openApp: "open_app"
            case .other(let call): call
            }
        }
    }

    private struct State {
        var devices: [String: IQDevice] = [:]
        var deviceDelegates: [(device: String, delegate: any IQDeviceEventDelegate)] = []
        var statuses: [String: IQDeviceStatus] = [:]
        var appDelegates: [(app: IQApp, delegate: any IQAppMessageDelegate)] = []
        var listeners: [IQApp: Int] = [:]
        var appsByListener: [Int: IQApp] = [:]
        var nextListener = 1
        var awaiting: [Awaiting] = []
        var sends: [Int64: (app: IQApp, progress: IQSendMessageProgress?, completion: IQSendMessageCompletion?)] = [:]
        var appStatusRequests: [Int64: (app: IQApp, completion: ((IQAppStatus?) -> Void)?)] = [:]
        var openRequests: [Int64: (app: IQApp, completion: IQSendMessageCompletion?)] = [:]
        var warnedNoCore = false
    }

    /// The calls of the app that MessagingCore records as `api_call` events.
    private static let postedCalls: Set<String> = [
        "device_list", "register_device", "unregister_device", "unregister_all_devices", "register_app", "unregister_app",
        "app_status", "send", "open_app",
    ]

    init(host: (any AppLoopHost)?) {
        self.host = host
        host?.observe(core: "messaging") { [weak self] event in self?.handle(event) }
    }

    /// The instance bound to the current host (`ReplaySession.makeCurrent()`, a live session).
    /// Without one, an instance whose calls do nothing but fail: sends complete with
    /// `Failure_DeviceNotAvailable`.
    public class func sharedInstance() -> ConnectIQ! {
        guard let host = AppLoop.currentHost else { return detached }
        return host.facade("ConnectIQ") { ConnectIQ(host: host) }
    }

    private static let detached = ConnectIQ(host: nil)

    // MARK: initialisation and Garmin Connect Mobile

    /// Initialises the SDK with the app's URL scheme. In the loop it only records the call: the
    /// recording stands for Garmin Connect Mobile.
    public func initialize(withUrlScheme urlScheme: String!, uiOverrideDelegate delegate: (any IQUIOverrideDelegate)!) {
        record("initialize(withUrlScheme:uiOverrideDelegate:)", ["url_scheme": .string(urlScheme ?? "")])
    }

    /// Initialises the SDK with the app's universal-link host; records the call.
    public func initialize(withUniversalLinks urlHost: String!, uiOverrideDelegate delegate: (any IQUIOverrideDelegate)!) {
        record("initialize(withUniversalLinks:uiOverrideDelegate:)", ["url_host": .string(urlHost ?? "")])
    }

    /// Opens the App Store page of Garmin Connect Mobile; records the call.
    public func showAppStoreForConnectMobile() {
        record("showAppStoreForConnectMobile()", [:])
    }

    /// Opens Garmin Connect Mobile's device selection; records the call. In the loop the answer
    /// is the recorded URL: hand `ReplaySession.deviceSelectionURL` to the app's URL handler, as
    /// iOS would hand it GCM's URL.
    public func showConnectIQDeviceSelection() {
        record("showConnectIQDeviceSelection()", [:])
    }

    /// The devices Garmin Connect Mobile's URL lists, as `IQDevice`s; the device list is also
    /// handed to the core (the `device_list` call). An unreadable URL gives an empty list and a
    /// warning naming what is wrong.
    public func parseDeviceSelectionResponse(from url: URL!) -> [Any]! {
        let text = url?.absoluteString ?? ""
        record("parseDeviceSelectionResponse(from:)", ["url": .string(text)])
        let parsed: [IQDevice]
        do throws(DeviceSelectionURLError) {
            parsed = try DeviceSelectionURL.parse(text).map { entry in
                IQDevice(id: UUID(uuidString: entry.uuid.description), modelName: entry.modelName, friendlyName: entry.friendlyName)
            }
        } catch {
            host?.warn("parseDeviceSelectionResponse(from: \(text)): \(error); no devices")
            return []
        }
        lock.withLock {
            for device in parsed { state.devices[device.recordText.lowercased()] = device }
        }
        post("device_list", ["url": .string(text)])
        return parsed
    }

    /// Opens the Connect IQ store page of `app`; records the call.
    public func showConnectIQStore(for app: IQApp!) {
        record("showConnectIQStore(for:)", app.map(Self.fields) ?? [:])
    }

    // MARK: devices

    /// Reports `device`'s connection status to `delegate` from now on.
    public func register(forDeviceEvents device: IQDevice!, delegate: (any IQDeviceEventDelegate)!) {
        guard let device, let delegate else { return misuse("register(forDeviceEvents:delegate:)", "a nil device or delegate") }
        let key = Self.key(device)
        record("register(forDeviceEvents:delegate:)", ["device": .string(key)])
        lock.withLock {
            let first = !state.deviceDelegates.contains { $0.device == key }
            if state.devices[key] == nil { state.devices[key] = device }
            state.deviceDelegates.append((key, delegate))
            if first { post("register_device", ["device": .string(key)]) }
        }
    }

    /// Stops reporting `device` to `delegate`.
    public func unregister(forDeviceEvents device: IQDevice!, delegate: (any IQDeviceEventDelegate)!) {
        guard let device, let delegate else { return misuse("unregister(forDeviceEvents:delegate:)", "a nil device or delegate") }
        let key = Self.key(device)
        record("unregister(forDeviceEvents:delegate:)", ["device": .string(key)])
        lock.withLock {
            let had = state.deviceDelegates.contains { $0.device == key }
            state.deviceDelegates.removeAll { $0.device == key && $0.delegate === delegate }
            if had && !state.deviceDelegates.contains(where: { $0.device == key }) { post("unregister_device", ["device": .string(key)]) }
        }
    }

    /// Stops reporting every device to `delegate`.
    public func unregister(forAllDeviceEvents delegate: (any IQDeviceEventDelegate)!) {
        guard let delegate else { return misuse("unregister(forAllDeviceEvents:)", "a nil delegate") }
        record("unregister(forAllDeviceEvents:)", [:])
        lock.withLock {
            let before = Set(state.deviceDelegates.map(\.device))
            state.deviceDelegates.removeAll { $0.delegate === delegate }
            for device in before.subtracting(state.deviceDelegates.map(\.device)).sorted() {
                post("unregister_device", ["device": .string(device)])
            }
        }
    }

    /// `device`'s last reported status; `invalidDevice` when no delegate is registered for it.
    public func getDeviceStatus(_ device: IQDevice!) -> IQDeviceStatus {
        guard let device else { return .invalidDevice }
        let key = Self.key(device)
        let status = lock.withLock { () -> IQDeviceStatus in
            guard state.deviceDelegates.contains(where: { $0.device == key }) else { return .invalidDevice }
            return state.statuses[key] ?? .notConnected
        }
        record("getDeviceStatus(_:)", ["device": .string(key), "status": .string(status.traceName)])
        return status
    }

    // MARK: apps

    /// Asks whether `app` is installed; `completion` gets its status, or `nil` when the device
    /// is not connected or does not answer within the command timeout.
    public func getAppStatus(_ app: IQApp!, completion: ((IQAppStatus?) -> Void)!) {
        guard let app else { return misuse("getAppStatus(_:completion:)", "a nil app") }
        record("getAppStatus(_:completion:)", Self.fields(app))
        post("app_status", Self.fields(app), awaiting: .appStatus(app: app, completion: completion))
    }

    /// Delivers `app`'s messages to `delegate` from now on. Several delegates of one app each get
    /// every message, in the order they registered.
    public func register(forAppMessages app: IQApp!, delegate: (any IQAppMessageDelegate)!) {
        guard let app, let delegate else { return misuse("register(forAppMessages:delegate:)", "a nil app or delegate") }
        record("register(forAppMessages:delegate:)", Self.fields(app))
        lock.withLock {
            state.appDelegates.append((app, delegate))
            guard state.listeners[app] == nil else { return }
            let listener = state.nextListener
            state.nextListener += 1
            state.listeners[app] = listener
            state.appsByListener[listener] = app
            var fields = Self.fields(app)
            fields["listener"] = .int(Int64(listener))
            post("register_app", fields)
        }
    }

    /// Stops delivering `app`'s messages to `delegate`.
    public func unregister(forAppMessages app: IQApp!, delegate: (any IQAppMessageDelegate)!) {
        guard let app, let delegate else { return misuse("unregister(forAppMessages:delegate:)", "a nil app or delegate") }
        record("unregister(forAppMessages:delegate:)", Self.fields(app))
        lock.withLock {
            state.appDelegates.removeAll { $0.app == app && $0.delegate === delegate }
            if let released = releaseListenerIfUnused(app) { postUnregisterApp(app, listener: released) }
        }
    }

    /// Stops delivering every app's messages to `delegate`.
    public func unregister(forAllAppMessages delegate: (any IQAppMessageDelegate)!) {
        guard let delegate else { return misuse("unregister(forAllAppMessages:)", "a nil delegate") }
        record("unregister(forAllAppMessages:)", [:])
        lock.withLock {
            let apps = state.appDelegates.filter { $0.delegate === delegate }.map(\.app)
            state.appDelegates.removeAll { $0.delegate === delegate }
            for app in Set(apps).sorted(by: { $0.description < $1.description }) {
                if let listener = releaseListenerIfUnused(app) { postUnregisterApp(app, listener: listener) }
            }
        }
    }

    /// Sends `message` to `app`: `progress` at least once with the bytes sent of the total, then
    /// `completion` exactly once. A message of a type Monkey C cannot carry completes with
    /// `Failure_UnsupportedType` without reaching the watch.
    public func sendMessage(_ message: Any!, to app: IQApp!, progress: IQSendMessageProgress!, completion: IQSendMessageCompletion!) {
        guard let app else { return misuse("sendMessage(_:to:progress:completion:)", "a nil app") }
        let value: MonkeyCValue
        do throws(UnsupportedValue) {
            value = try MessageValues.monkeyC(message as Any)
        } catch {
            var fields = Self.fields(app)
            fields["refused"] = .string(error.description)
            record("sendMessage(_:to:progress:completion:)", fields)
            host?.post { [weak self] in self?.deliverCompletion(completion, .failure_UnsupportedType, app: app, send: nil) }
            return
        }
        var fields = Self.fields(app)
        fields["message"] = MonkeyCJSON.traceValue(value)
        record("sendMessage(_:to:progress:completion:)", fields)
        guard host != nil else {
            return deliverCompletion(completion, .failure_DeviceNotAvailable, app: app, send: nil)
        }
        post("send", fields, awaiting: .send(app: app, progress: progress, completion: completion))
    }

    /// Asks the watch to open `app`; `completion` gets `Success` when the prompt was shown,
    /// `Failure_PromptNotDisplayed` or `Failure_AppAlreadyRunning` otherwise.
    public func openAppRequest(_ app: IQApp!, completion: IQSendMessageCompletion!) {
        guard let app else { return misuse("openAppRequest(_:completion:)", "a nil app") }
        record("openAppRequest(_:completion:)", Self.fields(app))
        post("open_app", Self.fields(app), awaiting: .openApp(app: app, completion: completion))
    }

    /// Sends an image to `app`. The SDK documents it as not working; here it completes with
    /// `Failure_Unknown` and a warning.
    public func sendImage(_ bitmap: Data!, to app: IQApp!, progress: IQSendMessageProgress!, completion: IQSendMessageCompletion!) {
        record("sendImage(_:to:progress:completion:)", app.map(Self.fields) ?? [:])
        host?.warn("sendImage(_:to:progress:completion:) is not modelled (the SDK documents it as not working); it completes with Failure_Unknown")
        host?.post { [weak self] in self?.deliverCompletion(completion, .failure_Unknown, app: app, send: nil) }
    }

    // MARK: the core's events

    private func handle(_ event: TraceEvent) {
        switch event.event {
        case "api_call", "api_error":
            guard case .string(let call)? = event.field("call"), Self.postedCalls.contains(call) else { return }
            acknowledge(call, event)
        case "device_status":
            guard case .string(let device)? = event.field("device"), case .string(let name)? = event.field("status"),
                  let status = IQDeviceStatus(traceName: name) else { return }
            let (known, delegates) = lock.withLock { () -> (IQDevice?, [any IQDeviceEventDelegate]) in
                state.statuses[device] = status
                return (state.devices[device], state.deviceDelegates.filter { $0.device == device }.map(\.delegate))
            }
            let target = known ?? IQDevice(id: UUID(uuidString: device), modelName: "", friendlyName: "")
            for delegate in delegates {
                callback("deviceStatusChanged(_:status:)", ["device": .string(device), "status": .string(name)])
                delegate.deviceStatusChanged(Optional(target), status: status)
                delegate.deviceStatusChanged(target, status: status)
            }
        case "progress":
            guard case .int(let send)? = event.field("send"), case .int(let sent)? = event.field("sent"),
                  case .int(let total)? = event.field("total") else { return }
            guard let handlers = lock.withLock({ state.sends[send] }) else { return }
            callback("progress", ["send": .int(send), "sent": .int(sent), "total": .int(total)])
            handlers.progress?(UInt32(clamping: sent), UInt32(clamping: total))
        case "completion":
            guard case .int(let send)? = event.field("send"), case .string(let name)? = event.field("result") else { return }
            guard let handlers = lock.withLock({ state.sends.removeValue(forKey: send) }) else { return }
            deliverCompletion(handlers.completion, IQSendMessageResult(traceName: name) ?? .failure_Unknown, app: handlers.app, send: send)
        case "app_status":
            guard case .int(let request)? = event.field("request"),
                  let waiting = lock.withLock({ state.appStatusRequests.removeValue(forKey: request) }) else { return }
            var status: IQAppStatus?
            if case .bool(let installed)? = event.field("installed") {
                var version: UInt16 = 0
                if case .int(let number)? = event.field("version") { version = UInt16(clamping: number) }
                status = IQAppStatus(isInstalled: installed, version: version)
            }
            callback("getAppStatus completion", ["request": .int(request), "installed": status.map { .bool($0.isInstalled) } ?? .null])
            waiting.completion?(status)
        case "open_app":
            guard case .int(let request)? = event.field("request"), case .string(let name)? = event.field("result"),
                  let waiting = lock.withLock({ state.openRequests.removeValue(forKey: request) }) else { return }
            callback("openAppRequest completion", ["request": .int(request), "result": .string(name)])
            waiting.completion?(IQSendMessageResult(traceName: name) ?? .failure_Unknown)
        case "message_received":
            guard case .int(let listener)? = event.field("listener"), let raw = event.field("value") else { return }
            let (app, delegates) = lock.withLock { () -> (IQApp?, [any IQAppMessageDelegate]) in
                guard let app = state.appsByListener[Int(listener)] else { return (nil, []) }
                return (app, state.appDelegates.filter { $0.app == app }.map(\.delegate))
            }
            guard let app else { return }
            let message: Any
            do throws(MonkeyCJSONError) {
                let (value, problems) = MessageValues.foundation(try MonkeyCJSON.monkeyCValue(raw))
                for problem in problems { host?.warn("a message from \(app): \(problem)") }
                message = value
            } catch {
                host?.warn("a message from \(app) could not be turned back into a value: \(error.description)")
                return
            }
            for delegate in delegates {
                var fields = Self.fields(app)
                fields["message"] = raw
                callback("receivedMessage(_:from:)", fields)
                delegate.receivedMessage(Optional(message), from: Optional(app))
                delegate.receivedMessage(message, from: app)
            }
        default:
            break
        }
    }

    /// The core took (or refused) the call at the head of the queue: bind its id.
    private func acknowledge(_ call: String, _ event: TraceEvent) {
        let refused = event.event == .apiError
        let head = lock.withLock { () -> Awaiting? in
            guard let first = state.awaiting.first else { return nil }
            guard first.call == call else { return nil }
            state.awaiting.removeFirst()
            return first
        }
        guard let head else {
            // Not one of the app's: a call the recording still delivers (a manifest's hand-written
            // calls of an imported set, say). The app should hear that it ran beside its own.
            host?.warn("ConnectIQ: the core took a \(call) call the app did not make" + (refused ? ", and refused it" : ""))
            return
        }
        let detail: String = if case .string(let error)? = event.field("error") { error } else { "refused" }
        switch head {
        case .send(let app, let progress, let completion):
            if refused || event.field("send") == nil {
                host?.warn("sendMessage(_:to:progress:completion:) to \(app): the core refused it: \(detail)")
                let result: IQSendMessageResult = detail.contains("serialized") ? .failure_UnsupportedType : .failure_DeviceNotAvailable
                deliverCompletion(completion, result, app: app, send: nil)
            } else if case .int(let send)? = event.field("send") {
                lock.withLock { state.sends[send] = (app, progress, completion) }
            }
        case .appStatus(let app, let completion):
            if refused { host?.warn("getAppStatus(_:completion:) for \(app): the core refused it: \(detail)") }
            guard !refused, case .int(let request)? = event.field("request") else {
                callback("getAppStatus completion", ["installed": .null])
                completion?(nil)
                return
            }
            lock.withLock { state.appStatusRequests[request] = (app, completion) }
        case .openApp(let app, let completion):
            if refused { host?.warn("openAppRequest(_:completion:) for \(app): the core refused it: \(detail)") }
            guard !refused, case .int(let request)? = event.field("request") else {
                callback("openAppRequest completion", ["result": .string("Failure_DeviceNotAvailable")])
                completion?(.failure_DeviceNotAvailable)
                return
            }
            lock.withLock { state.openRequests[request] = (app, completion) }
        case .other:
            if refused { host?.warn("ConnectIQ: the core refused \(call): \(detail)") }
        }
    }

    private func deliverCompletion(_ completion: IQSendMessageCompletion?, _ result: IQSendMessageResult, app: IQApp?, send: Int64?) {
        var fields = app.map(Self.fields) ?? [:]
        fields["result"] = .string(NSStringFromSendMessageResult(result))
        if let send { fields["send"] = .int(send) }
        callback("sendMessage completion", fields)
        completion?(result)
    }

    // MARK: helpers

    /// A listener the app no longer uses, released (called under the lock).
    private func releaseListenerIfUnused(_ app: IQApp) -> Int? {
        guard !state.appDelegates.contains(where: { $0.app == app }), let listener = state.listeners.removeValue(forKey: app) else { return nil }
        state.appsByListener[listener] = nil
        return listener
    }

    private func postUnregisterApp(_ app: IQApp, listener: Int) {
        var fields = Self.fields(app)
        fields["listener"] = .int(Int64(listener))
        post("unregister_app", fields)
    }

    /// Posts `call` to the host, its entry (`awaiting`, or one that only names the call) queued
    /// for the core's answer.
    private func post(_ call: String, _ arguments: [String: TraceValue], awaiting: Awaiting? = nil) {
        let entry = awaiting ?? .other(call)
        guard let host else {
            // Detached (no host bound): a call with a completion waits for one, as it always
            // did; a call with none is dropped, not queued for an answer that never comes.
            if let awaiting { lock.withLock { state.awaiting.append(awaiting) } }
            return
        }
        if !host.cores.contains("messaging") {
            let warn = lock.withLock { () -> Bool in
                defer { state.warnedNoCore = true }
                return !state.warnedNoCore
            }
            if warn {
                host.warn("ConnectIQ: this session replays no Connect IQ link (cores: \(host.cores.joined(separator: ", "))); "
                    + "record the phone's side with `tether live messaging --record` to run Connect IQ code against it")
            }
        }
        var record = arguments
        record["call"] = .string(call)
        // Both under the one lock: the core answers calls in the order the host took them, and the
        // answers are matched to the waiting entries in theirs, so the two orders must be one even
        // when the app calls from two threads at once (a callback and a task on Swift's pool).
        lock.withLock {
            state.awaiting.append(entry)
            host.post(core: "messaging", record: record)
        }
    }

    private func record(_ api: String, _ fields: [String: TraceValue]) {
        var fields = fields
        fields["sdk"] = .string("ConnectIQ")
        fields["api"] = .string(api)
        host?.recordAppEvent(.appCall, fields: fields)
    }

    private func callback(_ api: String, _ fields: [String: TraceValue]) {
        var fields = fields
        fields["sdk"] = .string("ConnectIQ")
        fields["api"] = .string(api)
        host?.recordAppEvent(.appCallback, fields: fields)
    }

    private func misuse(_ api: String, _ what: String) {
        host?.warn("ConnectIQ.\(api) was called with \(what); the SDK ignores such a call")
    }

    private static func key(_ device: IQDevice) -> String { device.recordText.lowercased() }

    private static func fields(_ app: IQApp) -> [String: TraceValue] {
        ["app": .string(app.uuid.uuidString.lowercased()), "device": .string(key(app.device))]
    }
}

/// The block the SDK calls with a send's progress (`IQSendMessageProgress`).
public typealias IQSendMessageProgress = (_ sentBytes: UInt32, _ totalBytes: UInt32) -> Void
/// The block the SDK calls once a send or open-app request ends (`IQSendMessageCompletion`).
public typealias IQSendMessageCompletion = (_ result: IQSendMessageResult) -> Void

