import Testing
import WidgetCore

@testable import BehaviourTrace
@testable import WidgetIntegration

/// Every `widget` event holds the core's own value as its fields (``WidgetEventFields``): every
/// way of reading, writing, comparing or digesting it must be that of the dictionary
/// docs/trace-format.md and docs/widget-core.md list for it, or a committed baseline would change.
@Suite struct WidgetEventFieldsTests {
    static let request = WidgetRequestID(rawValue: "0000abcd-1")
    static let openURL = WidgetOpenURLID(rawValue: "0000abcd-2")
    static let settings: WidgetJSON = .object(["units": .string("metric"), "half": .double(0.5), "list": .array([.int(1), .null])])
    static let settingsValue: TraceValue = .object(["units": .string("metric"), "half": .double(0.5), "list": .array([.int(1), .null])])
    static let lamp = WidgetDevice(iotId: "lamp", productKey: "pk", deviceName: "dn", nickName: nil, status: 1)
    static let lampValue: TraceValue = .object([
        "iot_id": .string("lamp"), "product_key": .string("pk"), "device_name": .string("dn"), "nick_name": .null, "status": .int(1)])
    static let power = WidgetPropertyValue(value: .bool(true), time: 1_700)
    static let powerValue: TraceValue = .object(["value": .bool(true), "time": .int(1_700)])

    /// A core action, and the fields the docs give its line.
    static let cases: [(WidgetAction, [String: TraceValue])] = [
        (.event(.settingsChanged(version: 4, settings: settings)), ["version": .int(4), "settings": settingsValue]),
        (.event(.settingsUnchanged), [:]),
        (.event(.hasContentChanged(true)), ["has_content": .bool(true)]),
        (.event(.staleFileIgnored(name: "settings.json", version: 2, shownVersion: 3)),
         ["name": .string("settings.json"), "version": .int(2), "shown_version": .int(3)]),
        (.event(.openURLRequested(WidgetOpenURLRequest(id: openURL, url: "app://scene/7"))),
         ["id": .string("0000abcd-2"), "url": .string("app://scene/7")]),
        (.event(.openURLCompleted(openURL, opened: true)), ["id": .string("0000abcd-2"), "opened": .bool(true)]),
        (.event(.openURLResultDiscarded(openURL, opened: false)), ["id": .string("0000abcd-2"), "opened": .bool(false)]),
        (.event(.refreshStarted(WidgetRefreshID(rawValue: 3), budget: .milliseconds(1_500))),
         ["refresh": .int(3), "budget_ns": .int(1_500_000_000)]),
        (.event(.refreshCompleted(WidgetRefreshID(rawValue: 3), .noData)), ["refresh": .int(3), "result": .string("no_data")]),
        (.event(.connectionStateChanged(.waitingToReconnect)), ["state": .string("waiting_to_reconnect")]),
        (.event(.requestIssued(request, path: .queryComponentProperty, origin: .refresh(WidgetRefreshID(rawValue: 2)))),
         ["id": .string("0000abcd-1"), "path": .string("/iotx/ilop/queryComponentProperty"), "origin": .string("refresh"), "refresh": .int(2)]),
        (.event(.requestIssued(request, path: .sceneFire, origin: .app)),
         ["id": .string("0000abcd-1"), "path": .string("/scene/fire"), "origin": .string("app")]),
        (.event(.requestIssued(request, path: .appWidgetList, origin: .reconnect)),
         ["id": .string("0000abcd-1"), "path": .string("/living/appwidget/list"), "origin": .string("reconnect")]),
        (.event(.requestSucceeded(request, .devices([lamp]))),
         ["id": .string("0000abcd-1"), "response": .object(["kind": .string("devices"), "devices": .array([lampValue])])]),
        (.event(.requestSucceeded(request, .scenes([WidgetScene(sceneId: "s1", name: "Evening")]))),
         ["id": .string("0000abcd-1"), "response": .object([
            "kind": .string("scenes"), "scenes": .array([.object(["scene_id": .string("s1"), "name": .string("Evening")])])])]),
        (.event(.requestSucceeded(request, .scenePage(WidgetScenePage(
            total: 9, pageNo: 2, pageSize: 4, scenes: [WidgetCatalogScene(sceneId: "s2", name: "Away", enabled: false)])))),
         ["id": .string("0000abcd-1"), "response": .object([
            "kind": .string("scene_page"), "total": .int(9), "page_no": .int(2), "page_size": .int(4),
            "scenes": .array([.object(["scene_id": .string("s2"), "name": .string("Away"), "enabled": .bool(false)])])])]),
        (.event(.requestSucceeded(request, .properties(iotId: "lamp", ["power": power]))),
         ["id": .string("0000abcd-1"), "response": .object([
            "kind": .string("properties"), "iot_id": .string("lamp"), "items": .object(["power": powerValue])])]),
        (.event(.requestSucceeded(request, .accepted)), ["id": .string("0000abcd-1"), "response": .object(["kind": .string("accepted")])]),
        (.event(.requestSucceeded(request, .sceneFired(skipped: ["lamp"]))),
         ["id": .string("0000abcd-1"), "response": .object(["kind": .string("scene_fired"), "skipped": .array([.string("lamp")])])]),
        (.event(.requestFailed(request, .cloud(code: 9201, message: "device offline"))),
         ["id": .string("0000abcd-1"), "failure": .string("cloud"), "code": .int(9201), "message": .string("device offline")]),
        (.event(.requestFailed(request, .malformedResponse("no data"))),
         ["id": .string("0000abcd-1"), "failure": .string("malformed_response"), "detail": .string("no data")]),
        (.event(.requestFailed(request, .timedOut)), ["id": .string("0000abcd-1"), "failure": .string("timed_out")]),
        (.event(.responseIgnored(request, .afterFailure)), ["id": .string("0000abcd-1"), "reason": .string("after_failure")]),
        (.event(.widgetDevicesChanged([lamp])), ["devices": .array([lampValue])]),
        (.event(.widgetScenesChanged([])), ["scenes": .array([])]),
        (.event(.devicePropertiesChanged(iotId: "lamp", ["power": power])), ["iot_id": .string("lamp"), "items": .object(["power": powerValue])]),
        (.event(.deviceStatusChanged(iotId: "lamp", WidgetDeviceStatus(code: 3, time: nil))),
         ["iot_id": .string("lamp"), "status": .int(3), "time": .null]),
        (.event(.deviceStatusChanged(iotId: "lamp", WidgetDeviceStatus(code: 1, time: 42))),
         ["iot_id": .string("lamp"), "status": .int(1), "time": .int(42)]),
        (.event(.staleUpdateIgnored(iotId: "lamp", property: nil, time: 5, shownTime: 6)),
         ["iot_id": .string("lamp"), "property": .null, "time": .int(5), "shown_time": .int(6)]),
        (.event(.staleUpdateIgnored(iotId: "lamp", property: "power", time: 5, shownTime: 6)),
         ["iot_id": .string("lamp"), "property": .string("power"), "time": .int(5), "shown_time": .int(6)]),
        (.event(.updateHeld(iotId: "lamp", behind: request)), ["iot_id": .string("lamp"), "behind": .string("0000abcd-1")]),
        (.event(.timeout(.reconnect(attempt: 2), deadline: .seconds(9))), ["what": .string("reconnect #2")]),
        (.event(.violation(.malformedFile, detail: "half written")), ["kind": .string("malformed-file"), "detail": .string("half written")]),
        (.removeFile(name: "open-url-result.x-1.json"), ["name": .string("open-url-result.x-1.json")]),
        (.mqttConnect(clientID: "widget-1"), ["client_id": .string("widget-1")]),
        (.mqttSubscribe(topics: ["a/b", "c"]), ["topics": .array([.string("a/b"), .string("c")])]),
        (.mqttDisconnect, [:]),
    ]

    @Test(arguments: 0..<cases.count)
    func everyActionWritesTheFieldsItsDictionaryWrote(_ index: Int) throws {
        let (action, dictionary) = Self.cases[index]
        let events = WidgetTraceMapping.events(for: action, timeNs: 2_500)
        try #require(events.count == 1)
        try expectPayloadEventIsItsDictionary(events[0], dictionary)
    }

    @Test func everyTracedActionIsNamedByADeclaredName() {
        for (action, _) in Self.cases {
            #expect(WidgetTraceMapping.Names.all.contains(WidgetTraceMapping.name(of: action)), "\(action)")
        }
    }

    @Test func everyDeclaredNameIsSnakeCaseAndDeclaredOnce() {
        let names = WidgetTraceMapping.Names.all.map(\.text)
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(!name.isEmpty && name.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }, "\(name)")
        }
    }

    /// A live run's deadlines are on the core's own clock: two timeouts that write the same line
    /// are the same event, whatever deadline each core computed.
    @Test func timeoutsWithDifferentDeadlinesAreEqualEvents() {
        let live = WidgetTraceMapping.events(for: .event(.timeout(.reconnect(attempt: 1), deadline: .seconds(3))), timeNs: 100)
        let replayed = WidgetTraceMapping.events(for: .event(.timeout(.reconnect(attempt: 1), deadline: .seconds(8_000))), timeNs: 100)
        #expect(live == replayed)
        #expect(live.first?.hashValue == replayed.first?.hashValue)
        let other = WidgetTraceMapping.events(for: .event(.timeout(.reconnect(attempt: 2), deadline: .seconds(3))), timeNs: 100)
        #expect(live != other)
    }

    /// A budget is written in whole nanoseconds, so budgets that differ below a nanosecond write
    /// the same line and are the same event.
    @Test func budgetsDifferingBelowANanosecondAreEqualEvents() {
        let exact = WidgetTraceMapping.events(for: .event(.refreshStarted(WidgetRefreshID(rawValue: 1), budget: .nanoseconds(5))), timeNs: 0)
        let finer = WidgetTraceMapping.events(
            for: .event(.refreshStarted(WidgetRefreshID(rawValue: 1), budget: .nanoseconds(5) + .init(secondsComponent: 0, attosecondsComponent: 400))),
            timeNs: 0)
        #expect(exact == finer)
        #expect(exact.first?.hashValue == finer.first?.hashValue)
    }
}
