import Testing
@testable import WidgetCore

@Suite struct TimerTests {
    static let start: Duration = .seconds(100)

    @Test func aRequestTimesOutAtItsDeadlineAndNotBefore() throws {
        var core = connectedCore(.widget, at: Self.start)
        let (id, _) = try core.fireScene("scene-1", now: Self.start)
        let deadline = Self.start + .seconds(10)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: deadline) == [
            .event(.timeout(.request(id), deadline: deadline)), .event(.requestFailed(id, .timedOut)),
        ])
        #expect(core.nextDeadline == nil)
        #expect(!core.hasPendingWork)
    }

    @Test func theRequestTimeoutIsConfigurableAndCountsFromTheCall() throws {
        var core = makeCore(.widget, configuration: WidgetConfiguration(account: account, requestTimeout: .milliseconds(1500)))
        _ = core.startConnection(now: Self.start)
        let (id, _) = try core.listWidgetDevices(now: Self.start) // queued: the clock runs all the same
        let deadline = Self.start + .milliseconds(1500)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(events(core.handleTimeout(now: deadline)).last == .requestFailed(id, .timedOut))
    }

    @Test func aRefreshOverrunsAtItsBudgetAndNotBefore() throws {
        var core = connectedCore(.widget, at: Self.start)
        let (id, _) = try core.refreshRequested(budget: .seconds(2), now: Self.start)
        let deadline = Self.start + .seconds(2)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: deadline) == [
            .event(.timeout(.refreshBudget(id), deadline: deadline)), .event(.refreshCompleted(id, .overrun)),
        ])
        #expect(core.nextDeadline == Self.start + .seconds(10)) // the round's requests still run
    }

    @Test func anOpenURLRequestTimesOutAtItsDeadlineAndIsWithdrawn() throws {
        var core = makeCore(.widget)
        let (id, _) = try core.openHostApp(url: "traffic://region", now: Self.start)
        let deadline = Self.start + .seconds(10)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: deadline) == [
            .removeFile(name: WidgetContainerLayout.openURLRequestFile(id)),
            .event(.timeout(.openURL(id), deadline: deadline)),
            .event(.openURLCompleted(id, opened: false)),
        ])
        #expect(!core.hasPendingWork)
    }

    @Test func reconnectionIsAttemptedAtItsDeadlineAndNotBefore() {
        var core = connectedCore(.host, at: Self.start)
        _ = core.mqttDisconnected(now: Self.start)
        let deadline = Self.start + .seconds(1)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: deadline) == [
            .event(.timeout(.reconnect(attempt: 1), deadline: deadline)),
            .event(.connectionStateChanged(.connecting)),
            .mqttConnect(clientID: "host-acct1"),
        ])
        #expect(core.nextDeadline == nil)
    }

    @Test func failedAttemptsDoubleTheWaitUpToTheMaximum() {
        var core = makeCore(.host, configuration: WidgetConfiguration(account: account, reconnectDelay: .seconds(1), maximumReconnectDelay: .seconds(5)))
        _ = core.startConnection(now: .zero)
        var now = Duration.zero
        var waits: [Duration] = []
        for _ in 0..<5 {
            _ = core.mqttDisconnected(now: now) // the attempt was refused
            let deadline = core.nextDeadline!
            waits.append(deadline - now)
            now = deadline
            _ = core.handleTimeout(now: now)
        }
        #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
    }

    @Test func aSuccessfulConnectionResetsTheWait() {
        var core = makeCore(.host)
        _ = core.startConnection(now: .zero)
        _ = core.mqttDisconnected(now: .zero)
        _ = core.handleTimeout(now: .seconds(1))
        _ = core.mqttDisconnected(now: .seconds(1))
        #expect(core.nextDeadline == .seconds(3))
        _ = core.handleTimeout(now: .seconds(3))
        _ = core.mqttConnected(now: .seconds(3))
        _ = core.mqttSubscribed(topics: core.subscriptionTopicsForTests, now: .seconds(3))
        _ = core.mqttDisconnected(now: .seconds(4))
        #expect(core.nextDeadline == .seconds(5))
    }

    @Test func aLateCallFiresEverythingDueInDeadlineOrder() throws {
        var core = connectedCore(.widget, at: Self.start)
        let (request, _) = try core.fireScene("scene-1", now: Self.start)
        let (refresh, _) = try core.refreshRequested(budget: .seconds(10), now: Self.start)
        let (openURL, _) = try core.openHostApp(url: "traffic://x", now: Self.start + .seconds(1))
        let fired = events(core.handleTimeout(now: Self.start + .seconds(30))).compactMap { event -> String? in
            if case let .timeout(timer, deadline) = event { "\(timer)@\(deadline - Self.start)" } else { nil }
        }
        let round = core.pendingRequests
        #expect(round.isEmpty)
        #expect(fired.first == "refresh-budget \(refresh)@10.0 seconds") // ties: the budget first
        #expect(fired.dropFirst().first == "\(request)@10.0 seconds")
        #expect(fired.last == "\(openURL)@11.0 seconds")
    }

    @Test func anInputAtADeadlineSeesTheTimeoutFirst() throws {
        var core = connectedCore(.widget, at: Self.start)
        let (id, _) = try core.fireScene("scene-1", now: Self.start)
        let actions = core.respond(id.rawValue, now: Self.start + .seconds(10))
        #expect(events(actions) == [.timeout(.request(id), deadline: Self.start + .seconds(10)), .requestFailed(id, .timedOut), .responseIgnored(id, .afterFailure)])
    }
}
