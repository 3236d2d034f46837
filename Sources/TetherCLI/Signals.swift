import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns SIGINT, SIGTERM and SIGHUP (the terminal went away) into a callback on a dispatch queue instead of killing the process, so
/// long-running commands (`serve`, `record`) can drain and seal what they hold.
///
/// The default handlers are replaced by `SIG_IGN` first, as DispatchSource signal sources require;
/// a second signal after the first restores the default handler's effect by exiting at once with
/// the conventional status for that signal, 128 + its number (130 for SIGINT, 143 for SIGTERM).
///
/// The initialiser returns once the sources are registered: a signal sent between `SIG_IGN` and
/// the registration (which libdispatch completes on another thread after `resume()`) is ignored
/// and lost, so a command that announces it is ready must do so after making this, and then a
/// caller that signals as soon as it reads the announcement is heard.
///
/// `@unchecked Sendable` (the dispatch sources are not marked `Sendable`): `sources` is a `let` set
/// in `init`, dispatch sources may be cancelled from any thread, and the signal count is a `Mutex`.
final class InterruptSignals: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let received = Mutex(0)

    /// Start listening; `handler` runs once, on `queue`, with the signal number of the first signal.
    init(queue: DispatchQueue = DispatchQueue(label: "tether.signals"), handler: @escaping @Sendable (Int32) -> Void) {
        var sources: [any DispatchSourceSignal] = []
        let signals = Self.handled
        for number in signals {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: queue))
        }
        self.sources = sources
        let registered = DispatchSemaphore(value: 0)
        for (source, number) in zip(sources, signals) {
            source.setRegistrationHandler { registered.signal() }
            source.setEventHandler { [unowned self] in
                let count = self.received.withLock { count -> Int in
                    count += 1
                    return count
                }
                if count == 1 {
                    handler(number)
                } else {
                    // The user insists: stop now, with the status an unhandled signal would give.
                    Terminal.writeStderr("\ntether: interrupted again, exiting without draining\n")
                    _exit(128 + number)
                }
            }
            source.resume()
        }
        // Bounded, so a libdispatch that never calls the registration handler cannot hang a
        // command; it has always been well under a millisecond.
        for _ in sources { _ = registered.wait(timeout: .now() + .seconds(5)) }
    }

    /// The signals that stop a long-running command cleanly. SIGHUP is treated as SIGTERM: a
    /// closed terminal or `nohup`-less logout drains and seals instead of losing the tail.
    static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The signal's conventional name (`SIGINT`, `SIGTERM`, `SIGHUP`), or `signal N`.
    static func name(of number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        default: "signal \(number)"
        }
    }

    /// Stop listening and restore the default handlers.
    func cancel() {
        for source in sources { source.cancel() }
        for number in Self.handled { signal(number, SIG_DFL) }
    }
}

/// A one-shot gate for async code: `wait()` returns once `open()` has been called, before or after.
/// Lets a signal handler (on a dispatch queue) wake a command's async `run()`.
final class AsyncSignalLatch: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Open the gate and wake every waiter.
    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Return once the gate is open.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queued = state.withLock { state -> Bool in
                if state.isOpen { return false }
                state.waiters.append(continuation)
                return true
            }
            if !queued { continuation.resume() }
        }
    }
}
