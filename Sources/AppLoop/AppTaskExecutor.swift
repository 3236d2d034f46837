import DequeModule
import Dispatch
import Synchronization

/// A `TaskExecutor` whose jobs run on the thread that drives a host (`ReplaySession`,
/// `LiveSession`), between the host's inputs, where the app's callbacks run too: app code that
/// awaits is held to the host's thread as its callbacks are, live and in replay.
///
/// ```swift
/// let poller = StatusPoller(clock: session.clock)      // the app's own code, which sleeps on a clock
/// Task(executorPreference: session.taskExecutor) { await poller.loop() }
/// try session.run()                                     // the same line for either session
/// ```
///
/// Why it exists: a task on Swift's cooperative pool runs beside the host's thread, so what it
/// does lands whenever it happens to run, at the same time as the host's callbacks; and some of
/// what the SDKs hand the app belongs to the host's thread (CoreBluetooth's objects, used on their
/// manager's queue, which here is that thread; a file transfer's `Progress`). On this executor the
/// host runs the task's jobs itself, whenever it takes the app's calls, until the task suspends
/// again. In replay that is after every input and right after the virtual clock wakes its
/// sleepers, so a woken task's calls reach the core at the instant it was woken, on every run. Live
/// it is between the host's reads of the link, at least every 20 ms.
///
/// Child tasks (`async let`, task groups) inherit the preference; an unstructured `Task { }`
/// started inside does not (give it `executorPreference:` too), and actor-isolated code
/// (`@MainActor`) runs on its actor's executor instead.
///
/// Before a run the jobs wait for it. Once the host has finished, jobs run on a global dispatch
/// queue, so `await task.value` after the run does not hang. A task that makes ``jobLimit`` jobs in
/// one pass without waiting (polling with `Task.yield()`, say) gets the same treatment, with a
/// warning from the host: the host would otherwise never get past that pass.
public final class AppTaskExecutor: TaskExecutor {
    /// Jobs run in one pass before the executor stops keeping its tasks on the host's thread.
    public static let jobLimit = 100_000

    private struct State {
        var jobs = Deque<UnownedJob>()
        /// Set when the host finished or a pass ran past ``jobLimit``: jobs go to a global queue.
        var passingOn = false
    }

    private let state = Mutex(State())

    /// An executor with no jobs; its host runs them (``runPendingJobs()``).
    public init() {}

    /// Queues `job` for the host's next pass; passes it on to a global queue once the host has
    /// finished.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let passOn = state.withLock { state -> Bool in
            if state.passingOn { return true }
            state.jobs.append(job)
            return false
        }
        if passOn { runElsewhere(job) }
    }

    /// Runs the queued jobs on the calling thread (the host's), and those they queue, until none
    /// is left; `false` when ``jobLimit`` of them ran and more kept coming: the rest, and every
    /// later job, then run elsewhere (the host says so in a warning).
    public func runPendingJobs() -> Bool {
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

    /// From now on jobs run on a global queue, the queued ones at once: the host has finished.
    public func passOn() {
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
