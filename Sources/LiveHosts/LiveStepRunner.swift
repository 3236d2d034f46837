import BehaviourTrace

/// The script loop every live host runs (docs/live-hosts.md): run steps until one waits, then let
/// the host serve its sources (bridge, socket, folder) until the earliest of the core's deadline,
/// the step's deadline and the linger after the last step, fire the core's due timers, and check
/// whether a `wait_for` is over; repeat until the steps are done and the linger has passed.
///
/// The host supplies what differs through ``Host``; the loop owns the timing rules, so the hosts
/// keep one behaviour.
package struct LiveStepRunner {
    /// What a host gives the loop.
    package struct Host {
        /// Runs one call step (its 1-based number, name and arguments).
        package var runStep: (_ number: Int, _ name: String, _ arguments: [String: TraceValue]) throws(LiveHostError) -> Void
        /// Waits at most the given time for the host's sources and handles what came (zero: only
        /// what is already there). After every call step the loop asks for zero, so what the peer
        /// sent meanwhile is taken before the next step, as an app's run loop would.
        package var service: (_ timeout: Duration) throws(LiveHostError) -> Void
        /// The core's next deadline, on the host's clock (time since the loop's `start`).
        package var nextDeadline: () -> Duration?
        /// Handles the core's timers that are due now.
        package var fireTimers: () throws(LiveHostError) -> Void
        /// A mark for `wait_for EVENT`: where to look from.
        package var mark: (_ event: String) -> Int
        /// Whether `event` happened since `mark`.
        package var occurred: (_ event: TraceName, _ since: Int) -> Bool
        /// Records a step that could not be done.
        package var fail: (_ step: Int, _ message: String) -> Void

        /// What a host gives the loop.
        package init(
            runStep: @escaping (_ number: Int, _ name: String, _ arguments: [String: TraceValue]) throws(LiveHostError) -> Void,
            service: @escaping (_ timeout: Duration) throws(LiveHostError) -> Void,
            nextDeadline: @escaping () -> Duration?,
            fireTimers: @escaping () throws(LiveHostError) -> Void,
            mark: @escaping (_ event: String) -> Int,
            occurred: @escaping (_ event: TraceName, _ since: Int) -> Bool,
            fail: @escaping (_ step: Int, _ message: String) -> Void
        ) {
            self.runStep = runStep
            self.service = service
            self.nextDeadline = nextDeadline
            self.fireTimers = fireTimers
            self.mark = mark
            self.occurred = occurred
            self.fail = fail
        }
    }

    /// The script's steps.
    package var steps: [LiveScript.Step]
    /// How long to keep serving after the last step.
    package var linger: Duration
    /// The host's time origin (its core's `now` is measured from here).
    package var start: ContinuousClock.Instant

    /// A loop over `steps`, lingering `linger` after the last, timed from `start`.
    package init(steps: [LiveScript.Step], linger: Duration, start: ContinuousClock.Instant) {
        self.steps = steps
        self.linger = linger
        self.start = start
    }

    /// Runs the script against `host`.
    package func run(_ host: Host) throws(LiveHostError) {
        var stepIndex = 0
        var waitUntil: ContinuousClock.Instant?
        var waitingFor: (event: String, mark: Int)?
        var lingerUntil: ContinuousClock.Instant?
        // A `wait_for` right after a call must also see what that call's own servicing brought
        // (a fast reply): its mark is taken before the call runs.
        var markBeforeCall: (event: String, mark: Int)?
        while true {
            while waitUntil == nil, stepIndex < steps.count {
                let step = steps[stepIndex]
                stepIndex += 1
                switch step {
                case .wait(let duration):
                    waitUntil = ContinuousClock.now + duration
                case .waitFor(let event, let timeout):
                    let early = markBeforeCall.flatMap { $0.event == event ? $0.mark : nil }
                    waitingFor = (event, early ?? host.mark(event))
                    waitUntil = ContinuousClock.now + timeout
                case .call(let name, let arguments):
                    markBeforeCall = nil
                    if stepIndex < steps.count, case .waitFor(let event, _) = steps[stepIndex] {
                        markBeforeCall = (event, host.mark(event))
                    }
                    try host.runStep(stepIndex, name, arguments)
                    try host.service(.zero)
                }
            }
            if waitUntil == nil, stepIndex >= steps.count {
                let until = lingerUntil ?? ContinuousClock.now + linger
                lingerUntil = until
                if ContinuousClock.now >= until { return }
            }
            var wake = waitUntil ?? lingerUntil ?? ContinuousClock.now + .seconds(1)
            if let deadline = host.nextDeadline() { wake = min(wake, start + deadline) }
            try host.service(max(.zero, ContinuousClock.now.duration(to: wake)))
            if let deadline = host.nextDeadline(), start + deadline <= ContinuousClock.now {
                try host.fireTimers()
            }
            var arrived = false
            if let waiting = waitingFor {
                arrived = host.occurred(TraceName(waiting.event), waiting.mark)
                // What was looked at needs no second look: the next check starts here, so a long
                // wait_for over a growing trace (a frame's events each time) stays linear.
                if !arrived { waitingFor = (waiting.event, host.mark(waiting.event)) }
            }
            if arrived {
                waitingFor = nil
                waitUntil = nil
            } else if let until = waitUntil, ContinuousClock.now >= until {
                if let waiting = waitingFor {
                    host.fail(stepIndex, "wait_for \(waiting.event): no such event within the step's timeout")
                    waitingFor = nil
                }
                waitUntil = nil
            }
        }
    }
}
