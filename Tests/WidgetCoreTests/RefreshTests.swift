import Testing
@testable import WidgetCore

@Suite struct RefreshTests {
    /// Answers the refresh round's requests: the device list, the scene list, then each read.
    func answerRound(_ core: inout WidgetCore, _ actions: [WidgetAction], devices: [WidgetJSON] = [deviceJSON("dev-a")],
                     properties: WidgetJSON = ["powerstate": ["value": 1, "time": 100]], now: Duration) -> [WidgetAction] {
        var all: [WidgetAction] = []
        var queue = publishedRequests(actions)
        while !queue.isEmpty {
            let request = queue.removeFirst()
            let data: WidgetJSON
            switch request.path {
            case "/iotx/ilop/queryComponentProduct": data = .array(devices)
            case "/living/appwidget/list": data = [["sceneId": "s1", "name": "All on"]]
            default: data = ["iotId": request.params["iotId"]!, "items": properties]
            }
            let answer = core.respond(request.id, data: data, now: now)
            all += answer
            queue += publishedRequests(answer)
        }
        return all
    }

    @Test func aRefreshListsThenReadsThenAnswersNewData() throws {
        var core = connectedCore(.widget)
        let (id, actions) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        #expect(publishedRequests(actions).map(\.path) == ["/iotx/ilop/queryComponentProduct", "/living/appwidget/list"])
        #expect(events(actions).first == .refreshStarted(id, budget: .seconds(5)))
        let answered = answerRound(&core, actions, now: .seconds(1))
        #expect(events(answered).last == .refreshCompleted(id, .newData))
        #expect(events(answered).filter { if case .requestIssued(_, .queryComponentProperty, .refresh(id)) = $0 { true } else { false } }.count == 1)
        #expect(!core.hasPendingWork)
        #expect(core.nextDeadline == nil)
    }

    @Test func aRefreshThatChangesNothingAnswersNoData() throws {
        var core = connectedCore(.widget)
        let (_, first) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        _ = answerRound(&core, first, now: .seconds(1))
        let (second, actions) = try core.refreshRequested(budget: .seconds(5), now: .seconds(2))
        #expect(events(answerRound(&core, actions, now: .seconds(3))).last == .refreshCompleted(second, .noData))
    }

    @Test func aNewerTimeForTheSameValueIsNotNewData() throws {
        var core = connectedCore(.widget)
        let (_, first) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        _ = answerRound(&core, first, now: .seconds(1))
        let (second, actions) = try core.refreshRequested(budget: .seconds(5), now: .seconds(2))
        let answered = answerRound(&core, actions, properties: ["powerstate": ["value": 1, "time": 900]], now: .seconds(3))
        #expect(events(answered).contains(.devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 900)])))
        #expect(events(answered).last == .refreshCompleted(second, .noData))
    }

    @Test func aChangeBetweenRefreshesIsNewData() throws {
        var core = connectedCore(.widget)
        let (_, first) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        _ = answerRound(&core, first, now: .seconds(1))
        _ = core.notifyProperties("dev-a", ["powerstate": (0, 500)], now: .seconds(2))
        let (second, actions) = try core.refreshRequested(budget: .seconds(5), now: .seconds(2))
        let answered = answerRound(&core, actions, properties: ["powerstate": ["value": 0, "time": 500]], now: .seconds(3))
        #expect(events(answered).last == .refreshCompleted(second, .newData))
    }

    @Test func aFailedRequestFailsTheRefresh() throws {
        var core = connectedCore(.widget)
        let (id, actions) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        let requests = publishedRequests(actions)
        _ = core.respond(requests[0].id, code: 404, message: "not found", now: .seconds(1))
        let last = core.respond(requests[1].id, data: [], now: .seconds(1))
        #expect(events(last).last == .refreshCompleted(id, .failed))
    }

    @Test func withoutAConnectionARefreshIsAnsweredAtOnceFromTheContainer() throws {
        var core = makeCore(.widget)
        let (first, actions) = try core.refreshRequested(budget: .seconds(1), now: .zero)
        #expect(events(actions) == [.refreshStarted(first, budget: .seconds(1)), .refreshCompleted(first, .newData)])
        let (second, again) = try core.refreshRequested(budget: .seconds(1), now: .zero)
        #expect(events(again) == [.refreshStarted(second, budget: .seconds(1)), .refreshCompleted(second, .noData)])
        _ = core.containerChanged(name: "settings.json", bytes: ContainerCodec.settings(version: 1, settings: ["a": 1]), now: .zero)
        let (third, changed) = try core.refreshRequested(budget: .seconds(1), now: .zero)
        #expect(events(changed).last == .refreshCompleted(third, .newData))
    }

    @Test func anOverrunIsTheOneResultEvenWhenTheWorkFinishesLater() throws {
        var core = connectedCore(.widget)
        let (id, actions) = try core.refreshRequested(budget: .milliseconds(500), now: .zero)
        #expect(events(core.handleTimeout(now: .milliseconds(500))) == [
            .timeout(.refreshBudget(id), deadline: .milliseconds(500)), .refreshCompleted(id, .overrun),
        ])
        let late = answerRound(&core, actions, now: .seconds(1))
        #expect(!events(late).contains { if case .refreshCompleted = $0 { true } else { false } })
        #expect(events(late).contains(.devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 100)])))
        #expect(!core.hasPendingWork)
    }

    @Test func refreshesAskedForDuringARoundJoinItAndGetItsResult() throws {
        var core = connectedCore(.widget)
        let (first, actions) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        let (second, joined) = try core.refreshRequested(budget: .seconds(5), now: .zero)
        #expect(publishedRequests(joined).isEmpty)
        let answered = events(answerRound(&core, actions, now: .seconds(1)))
        #expect(Array(answered.suffix(2)) == [.refreshCompleted(first, .newData), .refreshCompleted(second, .newData)])
    }

    @Test func aRefreshWhileWaitingToReconnectOverrunsWhenTheConnectionStaysDown() throws {
        var core = connectedCore(.widget)
        _ = core.mqttDisconnected(now: .zero)
        let (id, actions) = try core.refreshRequested(budget: .milliseconds(800), now: .zero)
        #expect(publishedRequests(actions).isEmpty)
        let fired = events(core.handleTimeout(now: .seconds(1)))
        #expect(fired.contains(.refreshCompleted(id, .overrun)))
        #expect(core.pendingRefreshes.isEmpty)
        #expect(core.pendingRequests.count == 2) // the round's lists still wait for the connection
    }
}
