import AppLoop
import Foundation
import Synchronization
import Testing

/// Which thread ran a job: `pthread_self()` as a number, comparable across tasks.
#if canImport(Glibc)
private func threadID() -> UInt { UInt(pthread_self()) }
#else
private func threadID() -> UInt { UInt(bitPattern: pthread_self()) }
#endif

/// One pass of the host: the jobs run on this thread, whose id is returned.
private func hostPass(_ executor: AppTaskExecutor) -> UInt {
    let thread = threadID()
    #expect(executor.runPendingJobs())
    return thread
}

/// A gate a task waits at until the test opens it from outside the task.
private final class Gate: Sendable {
    private let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let opened = Mutex(false)

    func wait() async {
        await withCheckedContinuation { continuation in
            let openAlready = opened.withLock { $0 }
            if openAlready { continuation.resume() } else { waiter.withLock { $0 = continuation } }
        }
    }

    func open() {
        opened.withLock { $0 = true }
        waiter.withLock { $0.take() }?.resume()
    }

    var isWaiting: Bool { waiter.withLock { $0 != nil } }
}

@Suite struct AppTaskExecutorTests {
    @Test func aTasksJobsWaitForTheHostAndRunOnTheThreadThatRunsThem() async throws {
        let executor = AppTaskExecutor()
        let ran = Mutex<[UInt]>([])
        let gate = Gate()
        let task = Task(executorPreference: executor) {
            ran.withLock { $0.append(threadID()) }
            await gate.wait()
            ran.withLock { $0.append(threadID()) }
        }
        // Nothing runs until the host runs the jobs.
        try await Task.sleep(for: .milliseconds(50))
        #expect(ran.withLock { $0.isEmpty })

        let firstPass = hostPass(executor)
        #expect(ran.withLock { $0 } == [firstPass])
        #expect(gate.isWaiting)
        // Resumed from elsewhere, the task goes back to the queue, and runs on the host's next pass.
        gate.open()
        try await Task.sleep(for: .milliseconds(50))
        #expect(ran.withLock { $0.count } == 1)
        let secondPass = hostPass(executor)
        #expect(ran.withLock { $0 } == [firstPass, secondPass])
        await task.value
    }

    @Test func afterTheHostFinishesJobsRunElsewhereSoAwaitingATaskDoesNotHang() async {
        let executor = AppTaskExecutor()
        let task = Task(executorPreference: executor) { 42 }
        executor.passOn()
        #expect(await task.value == 42)
        // And a task started afterwards runs too.
        #expect(await Task(executorPreference: executor) { 7 }.value == 7)
    }

    @Test func aTaskThatNeverWaitsIsPassedOnAfterTheJobLimit() async {
        let executor = AppTaskExecutor()
        let task = Task(executorPreference: executor) { () -> Int in
            var yields = 0
            while yields < AppTaskExecutor.jobLimit + 10 {
                await Task.yield()
                yields += 1
            }
            return yields
        }
        #expect(!executor.runPendingJobs(), "a pass that cannot end says so")
        #expect(await task.value == AppTaskExecutor.jobLimit + 10)
    }
}
