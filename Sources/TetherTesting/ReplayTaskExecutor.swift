import DequeModule
import Dispatch
import Synchronization

/// A `TaskExecutor` whose jobs run on the thread driving a ``ReplaySession``, inside its runs, at
/// the virtual instant they became ready: app code started on it is as deterministic as the
/// session itself.
///
/// ```swift
/// let session = try ReplaySession(replaying: "Captures/ciq-clean")
/// session.makeCurrent()
/// let poller = StatusPoller(clock: session.clock)      // the app's own code, which sleeps on a clock
/// Task(executorPreference: session.taskExecutor) { await poller.loop() }
/// try session.run()                                     // the poller's calls land at exact instants
/// ```
///
/// Why it exists: a task woken by ``ReplaySession/clock`` on Swift's cooperative pool runs beside
/// the thread driving the session, so what it does lands at whatever instant the session has
/// reached by the time it does it, and two runs can differ. On this executor the session runs the
/// task's jobs itself — whenever it asks the app for calls (after every input) and right after
/// waking the clock's sleepers — until the task suspends again. Its calls then reach the core at
/// the instant it was woken, and its `app` events carry that instant, on every run. Child tasks
/// (`async let`, task groups) inherit the preference; an unstructured `Task { }` started inside
/// does not (give it `executorPreference:` too), and actor-isolated code (`@MainActor`) runs on
/// its actor's executor instead.
///
/// Between runs the jobs wait for the next run. Once the session has finished (``ReplaySession/run()``
/// returned), no virtual time is left to keep, and jobs run on a global dispatch queue, so
/// `await task.value` after the run does not hang. A task that makes ``jobLimit`` jobs at one
/// instant without waiting for virtual time (polling with `Task.yield()`, say) gets the same
/// treatment, with a session warning: the session would otherwise never get past that instant.
public final class ReplayTaskExecutor: TaskExecutor {
    /// Jobs run at one instant before the executor stops keeping its tasks on the session's thread.
    public static let jobLimit = 100_000

    private struct State {
        var jobs = Deque<UnownedJob>()
        /// Set when the session finished or a drain passed ``jobLimit``: jobs go to a global queue.
        var passingOn = false
    }

    private let state = Mutex(State())

    init() {}

    /// Queues `job` for the session's next drain; passes it on to a global queue once the session
    /// has finished.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let passOn = state.withLock { state -> Bool in
            if state.passingOn { return true }
            state.jobs.append(job)
            return false
        }
        if passOn { runElsewhere(job) }
    }

    /// Runs the queued jobs on the calling thread, and those they queue, until none is left;
    /// `false` when ``jobLimit`` of them ran and more kept coming: the rest, and every later job,
    /// then run elsewhere.
    func runPendingJobs() -> Bool {
        var count = 0
        while let job = state.withLock({ $0.passingOn ? nil : $0.jobs.popFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
            count += 1
            if count >= Self.jobLimit, state.withLock({ !$0.jobs.isEmpty }) {
                passOn()
                return false
            }
        }
        return true
    }

    /// From now on jobs run on a global queue; the queued ones go there at once.
    func passOn() {
        let left = state.withLock { state -> Deque<UnownedJob> in
            state.passingOn = true
            defer { state.jobs.removeAll() }
            return state.jobs
        }
        for job in left { runElsewhere(job) }
    }

    private func runElsewhere(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }
}
