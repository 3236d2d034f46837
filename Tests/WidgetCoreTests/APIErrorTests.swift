import Testing
@testable import WidgetCore

/// What a core shows of itself: equal before and after a refused call.
struct Observed: Equatable {
    var display: WidgetDisplay
    var connection: WidgetConnectionState
    var requests: [WidgetRequestID]
    var refreshes: [WidgetRefreshID]
    var openURLs: [WidgetOpenURLID]
    var deadline: Duration?

    init(_ core: WidgetCore) {
        display = core.display
        connection = core.connectionState
        requests = core.pendingRequests
        refreshes = core.pendingRefreshes
        openURLs = core.pendingOpenURLs
        deadline = core.nextDeadline
    }
}

@Suite struct APIErrorTests {
    func expectRefused(_ core: WidgetCore, _ code: WidgetErrorCode,
                       _ body: (inout WidgetCore) throws(WidgetError) -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        var copy = core
        let before = Observed(core)
        do {
            try body(&copy)
            Issue.record("the call was not refused", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(!error.detail.isEmpty, sourceLocation: sourceLocation)
        }
        #expect(Observed(copy) == before, "state changed", sourceLocation: sourceLocation)
        // The sequence did not move either: the next id is the one an untouched core would give.
        var untouched = core
        var touched = copy
        #expect((try? untouched.openHostApp(url: "x://y", now: .zero).0) == (try? touched.openHostApp(url: "x://y", now: .zero).0), sourceLocation: sourceLocation)
    }

    @Test func hostCallsOnTheWidgetAreRefused() {
        let widget = connectedCore(.widget)
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.updateSettings([:], now: .zero) }
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.setHasContent(true, now: .zero) }
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.didOpenURL(WidgetOpenURLID(rawValue: "a"), opened: true, now: .zero) }
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.updateWidgetDevices(["d"], now: .zero) }
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.queryScenes(now: .zero) }
        expectRefused(widget, .wrongRole) { core throws(WidgetError) in _ = try core.updateWidgetScenes(["s"], now: .zero) }
    }

    @Test func widgetCallsOnTheHostAreRefused() {
        let host = connectedCore(.host)
        expectRefused(host, .wrongRole) { core throws(WidgetError) in _ = try core.openHostApp(url: "x://y", now: .zero) }
        expectRefused(host, .wrongRole) { core throws(WidgetError) in _ = try core.refreshRequested(budget: .seconds(1), now: .zero) }
        expectRefused(host, .wrongRole) { core throws(WidgetError) in _ = try core.setProperties(iotId: "d", ["p": 1], now: .zero) }
        expectRefused(host, .wrongRole) { core throws(WidgetError) in _ = try core.fireScene("s", now: .zero) }
    }

    @Test func invalidParametersAreRefused() {
        let host = connectedCore(.host)
        let widget = connectedCore(.widget)
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.updateSettings([1, 2], now: .zero) }
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.didOpenURL(WidgetOpenURLID(rawValue: "never"), opened: true, now: .zero) }
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.updateWidgetDevices(["d", "d"], now: .zero) }
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.updateWidgetScenes([""], now: .zero) }
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.queryScenes(pageNo: 0, now: .zero) }
        expectRefused(host, .invalidParameter) { core throws(WidgetError) in _ = try core.queryProperties(iotId: "", productKey: "pk", now: .zero) }
        expectRefused(widget, .invalidParameter) { core throws(WidgetError) in _ = try core.openHostApp(url: "no scheme", now: .zero) }
        expectRefused(widget, .invalidParameter) { core throws(WidgetError) in _ = try core.openHostApp(url: "x:", now: .zero) }
        expectRefused(widget, .invalidParameter) { core throws(WidgetError) in _ = try core.refreshRequested(budget: .zero, now: .zero) }
        expectRefused(widget, .invalidParameter) { core throws(WidgetError) in _ = try core.setProperties(iotId: "d", [:], now: .zero) }
        expectRefused(widget, .invalidParameter) { core throws(WidgetError) in _ = try core.fireScene("", now: .zero) }
    }

    @Test func cloudRequestsBeforeStartingAreRefused() {
        let widget = makeCore(.widget)
        expectRefused(widget, .notStarted) { core throws(WidgetError) in _ = try core.listWidgetDevices(now: .zero) }
        expectRefused(widget, .notStarted) { core throws(WidgetError) in _ = try core.listWidgetScenes(now: .zero) }
        expectRefused(widget, .notStarted) { core throws(WidgetError) in _ = try core.setProperties(iotId: "d", ["p": 1], now: .zero) }
        expectRefused(widget, .notStarted) { core throws(WidgetError) in _ = try core.queryProperties(iotId: "d", productKey: "pk", now: .zero) }
    }

    @Test(arguments: ["", "a/b", "a+b", "#", String(repeating: "a", count: 65)])
    func anAccountThatCannotBeATopicLevelIsRefused(_ name: String) {
        #expect(throws: WidgetError.self) {
            try WidgetCore(role: .host, configuration: WidgetConfiguration(account: name), randomSource: SeededWidgetRandom(seed: 1))
        }
    }

    @Test func theIncarnationComesFromTheRandomSource() throws {
        let core = try WidgetCore(role: .widget, configuration: testConfiguration, randomSource: ScriptedWidgetRandom(values: [0, 0x1_0000_00ab], fallbackSeed: 1))
        #expect(core.incarnation == 0xab)
        #expect(WidgetCore.idText(incarnation: core.incarnation, sequence: 12) == "000000ab-12")
    }
}
