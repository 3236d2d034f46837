import BehaviourTrace
import LiveHosts
import Testing

/// `LiveStepRunner`'s `wait_for`: each check looks only at what came since the previous one.
@Suite struct LiveStepRunnerTests {
    /// A host whose every service turn adds one event (`frame`), and `done` on the sixth; it
    /// records where each `occurred` check starts.
    final class CountingHost {
        var events: [String] = []
        var checkedFrom: [Int] = []

        var host: LiveStepRunner.Host {
            LiveStepRunner.Host(
                runStep: { _, _, _ in },
                service: { _ in
                    self.events.append(self.events.count == 5 ? "done" : "frame")
                },
                nextDeadline: { nil },
                fireTimers: {},
                mark: { _ in self.events.count },
                occurred: { event, since in
                    self.checkedFrom.append(since)
                    return self.events[since...].contains(event.text)
                },
                fail: { _, _ in })
        }
    }

    @Test func waitForLooksOnlyAtEventsSinceItsLastCheck() throws {
        let counting = CountingHost()
        let runner = LiveStepRunner(steps: [.waitFor(event: "done", timeout: .seconds(3600))], linger: .zero, start: .now)
        try runner.run(counting.host)
        #expect(counting.events == ["frame", "frame", "frame", "frame", "frame", "done"])
        // The first check starts at the step's mark (0); each later one where the last one ended.
        #expect(counting.checkedFrom == [0, 1, 2, 3, 4, 5])
    }
}
