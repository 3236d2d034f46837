import BehaviourTrace
import Foundation
import Synchronization

/// What an SDK facade (`TetherConnectIQ`, `TetherWatchConnectivity`) talks to: a core running
/// on a recording (`TetherTesting`'s `ReplaySession`) or against the device (a live host). The
/// facade turns the app's SDK calls into the core's API-call records and the core's trace events
/// into the SDK's delegate callbacks; it never learns which host it has, which is what lets the
/// app's code not tell a recording from the device.
///
/// Threading: a host delivers every event, and runs every posted piece of work, on the thread
/// that drives it (the test's thread in replay, the host's loop live), one at a time, in the
/// order of its (virtual) clock. A call posted from inside a callback reaches the core after the
/// input that caused the callback has been handled, at the same instant.
public protocol AppLoopHost: AnyObject, Sendable {
    /// The instant the host has reached: virtual time since the recording's first frame in
    /// replay, time since the host started live.
    var now: Duration { get }
    /// Queues one API call for `core`: an `api-calls` record (`call` and its arguments, without
    /// `core`), as docs/capture-set.md lists them. It reaches the core at the current instant,
    /// after the input being handled, in the order posted; its `api_call` (or `api_error`) event
    /// comes back through ``observe(core:_:)``.
    func post(core: String, record: [String: TraceValue])
    /// Queues work the facade does itself at the current instant (a completion the SDK gives
    /// without asking the core, such as a refused payload), in order with the posted calls.
    func post(_ work: @escaping () -> Void)
    /// The cores running behind this host (`messaging`, `session`…): a facade whose core is not
    /// among them warns once instead of posting calls nobody takes.
    var cores: [String] { get }
    /// Calls `handler` with every trace event `core` writes from now on, as it is written.
    func observe(core: TraceName, _ handler: @escaping (TraceEvent) -> Void)
    /// Writes one event of the app's own (core `app`: the facade's calls and the callbacks it
    /// delivered) to the host's trace, at ``now``.
    func recordAppEvent(_ event: TraceName, fields: [String: TraceValue])
    /// Notes something the app did that the host cannot answer as the device would (a call the
    /// recording has no answer for, a callback with no delegate): one line, kept in the host's
    /// warnings and written to its trace as an `app` `warning` event.
    func warn(_ text: String)
    /// The one facade object of `key` for this host, made by `make` the first time: what
    /// `ConnectIQ.sharedInstance()` and `WCSession.default` return while this host is current.
    func facade<Facade: AnyObject & Sendable>(_ key: String, make: () -> Facade) -> Facade
    /// What the host knows of its recording or device that an SDK learns outside the link:
    /// `connectiq.device_selection_url`, the URL Garmin Connect Mobile opened the app with;
    /// `nil` for a key it does not know.
    func hostFact(_ key: String) -> String?
}

/// The host the SDK facades' shared instances are bound to: `ConnectIQ.sharedInstance()` and
/// `WCSession.default` answer for the current host's session.
///
/// Which host is current, first match wins: the one bound to the running task
/// (``withHost(_:operation:)``), else the one made current on this thread, else the one made
/// current last on any thread. Test runners run tests in parallel, one thread per synchronous
/// test: a session made current in one test is not seen by another running beside it. An async
/// test that may resume on another thread binds its session to its task with
/// `ReplaySession.withCurrent { … }` instead.
public enum AppLoop {
    private static let last = Mutex<(any AppLoopHost)?>(nil)
    private static let threadKey = "tether.AppLoop.currentHost"

    /// The host bound to the running task, when one is.
    @TaskLocal public static var taskHost: (any AppLoopHost)?

    /// The host that is current here (see ``AppLoop``); `nil` before any.
    public static var currentHost: (any AppLoopHost)? {
        if let host = taskHost { return host }
        if let bound = Thread.current.threadDictionary[threadKey] as? ThreadBinding { return bound.host }
        return last.withLock { $0 }
    }

    /// Makes `host` current on this thread, and for threads that have none of their own.
    public static func makeCurrent(_ host: any AppLoopHost) {
        Thread.current.threadDictionary[threadKey] = ThreadBinding(host: host)
        last.withLock { $0 = host }
    }

    /// Runs `operation` with `host` current for the running task and the tasks it starts.
    public static func withHost<Result>(_ host: any AppLoopHost, operation: () throws -> Result) rethrows -> Result {
        try $taskHost.withValue(host, operation: operation)
    }

    /// Unbinds `host` wherever this thread or the process-wide fallback has it.
    public static func resign(_ host: any AppLoopHost) {
        if let bound = Thread.current.threadDictionary[threadKey] as? ThreadBinding, bound.host === host {
            Thread.current.threadDictionary[threadKey] = nil
        }
        last.withLock { if $0 === host { $0 = nil } }
    }

    /// A host in a thread's dictionary (which holds objects).
    private final class ThreadBinding: NSObject {
        let host: any AppLoopHost
        init(host: any AppLoopHost) { self.host = host }
    }
}

/// What every host keeps for the facades bound to it: each facade's one object, and who
/// observes which core's events. A host owns one and forwards ``AppLoopHost/observe(core:_:)``
/// and ``AppLoopHost/facade(_:make:)`` to it, and hands it every event it writes.
///
/// The host delivers events on its driving thread, but the app may reach a facade first from any
/// thread (`ConnectIQ.sharedInstance()` in a task on Swift's pool, while a run delivers events), so
/// the tables are behind a lock. `@unchecked Sendable`: both tables are read and written under
/// `lock` only. It is recursive because a facade's initialiser, run by ``facade(_:make:)`` under
/// the lock, registers its observer; handlers are called outside it, so a handler may call back in.
public final class AppLoopBindings: @unchecked Sendable {
    private let lock = NSRecursiveLock()
    private var observers: [TraceName: [(TraceEvent) -> Void]] = [:]
    private var facades: [String: AnyObject] = [:]

    /// No facade yet.
    public init() {}

    /// Calls `handler` with each of `core`'s events from now on.
    public func observe(core: TraceName, _ handler: @escaping (TraceEvent) -> Void) {
        lock.withLock { observers[core, default: []].append(handler) }
    }

    /// Hands `event` to its core's observers, in the order they registered.
    public func deliver(_ event: TraceEvent) {
        guard let handlers = lock.withLock({ observers[event.core] }) else { return }
        for handler in handlers { handler(event) }
    }

    /// The one facade of `key`, made by `make` the first time (once, whichever thread asks first).
    public func facade<Facade: AnyObject & Sendable>(_ key: String, make: () -> Facade) -> Facade {
        lock.withLock {
            if let made = facades[key] as? Facade { return made }
            let made = make()
            facades[key] = made
            return made
        }
    }
}
