import Testing
@testable import WidgetCore

@Suite struct ConnectionTests {
    @Test(arguments: [WidgetRole.host, .widget])
    func startingConnectsWithTheRolesClientID(_ role: WidgetRole) {
        var core = makeCore(role)
        #expect(core.startConnection(now: .zero) == [.event(.connectionStateChanged(.connecting)), .mqttConnect(clientID: "\(role)-acct1")])
        #expect(core.startConnection(now: .zero) == [])
    }

    @Test func connectedSubscribesToTheResponsePropertiesAndStatusTopics() {
        var core = makeCore(.widget)
        _ = core.startConnection(now: .zero)
        #expect(core.mqttConnected(now: .zero) == [
            .event(.connectionStateChanged(.subscribing)),
            .mqttSubscribe(topics: ["tether/acct1/api/response/widget-acct1", "tether/acct1/thing/properties", "tether/acct1/thing/status"]),
        ])
    }

    @Test func requestsWaitForTheSubscriptionThenGoOutInCallOrder() throws {
        var core = makeCore(.widget)
        _ = core.startConnection(now: .zero)
        let (first, queued) = try core.listWidgetDevices(now: .zero)
        #expect(publishedRequests(queued).isEmpty)
        let (second, _) = try core.listWidgetScenes(now: .zero)
        _ = core.mqttConnected(now: .zero)
        let actions = core.mqttSubscribed(topics: core.subscriptionTopicsForTests, now: .zero)
        #expect(events(actions) == [.connectionStateChanged(.connected)])
        #expect(publishedRequests(actions).map(\.id) == [first.rawValue, second.rawValue])
    }

    @Test func aRequestIsPublishedAsTheFixedPayloadOnTheClientsRequestTopic() throws {
        var core = connectedCore(.widget)
        let (id, actions) = try core.queryProperties(iotId: "dev-a", productKey: "pk1", now: .zero)
        let payload = #"{"id":"\#(id.rawValue)","params":{"iotId":"dev-a","productKey":"pk1","query":{"I18Language":"en-US","dataType":"BOOL"}},"path":"/iotx/ilop/queryComponentProperty","version":"1.0.0"}"#
        #expect(actions == [
            .event(.requestIssued(id, path: .queryComponentProperty, origin: .app)),
            .mqttPublish(topic: "tether/acct1/api/request/widget-acct1", payload: Array(payload.utf8), qos: .atLeastOnce),
        ])
    }

    @Test func aDropFailsPublishedRequestsKeepsQueuedOnesAndWaitsToReconnect() throws {
        var core = connectedCore(.widget)
        let (published, _) = try core.listWidgetDevices(now: .zero)
        let actions = core.mqttDisconnected(now: .seconds(1))
        #expect(events(actions) == [.connectionStateChanged(.waitingToReconnect), .requestFailed(published, .connectionLost)])
        let (queued, queuedActions) = try core.listWidgetScenes(now: .seconds(1))
        #expect(publishedRequests(queuedActions).isEmpty)
        #expect(core.pendingRequests == [queued])
        #expect(core.nextDeadline == .seconds(2))
    }

    @Test func reconnectionSubscribesAgainListsAgainAndReReadsTheListedDevices() throws {
        var core = connectedCore(.widget)
        let (list, _) = try core.listWidgetDevices(now: .zero)
        _ = core.respond(list.rawValue, data: [deviceJSON("dev-a"), deviceJSON("dev-b", productKey: "pk2")], now: .zero)
        _ = core.mqttDisconnected(now: .seconds(1))
        #expect(core.handleTimeout(now: .seconds(2)) == [
            .event(.timeout(.reconnect(attempt: 1), deadline: .seconds(2))),
            .event(.connectionStateChanged(.connecting)),
            .mqttConnect(clientID: "widget-acct1"),
        ])
        #expect(core.mqttConnected(now: .seconds(2)).contains(.mqttSubscribe(topics: core.subscriptionTopicsForTests)))
        let actions = core.mqttSubscribed(topics: core.subscriptionTopicsForTests, now: .seconds(2))
        let requests = publishedRequests(actions)
        #expect(requests.map(\.path) == ["/iotx/ilop/queryComponentProduct", "/iotx/ilop/queryComponentProperty", "/iotx/ilop/queryComponentProperty"])
        #expect(requests.dropFirst().map { $0.params["iotId"] } == ["dev-a", "dev-b"])
        #expect(requests.last?.params["productKey"] == "pk2")
        #expect(events(actions).filter { if case .requestIssued(_, _, .reconnect) = $0 { true } else { false } }.count == 3)
    }

    @Test func aRefusedTopicDisconnectsAndRetriesLater() {
        var core = makeCore(.widget)
        _ = core.startConnection(now: .zero)
        _ = core.mqttConnected(now: .zero)
        let actions = core.mqttSubscribed(topics: ["tether/acct1/thing/properties"], now: .zero)
        #expect(violations(actions) == [.subscriptionRefused])
        #expect(actions.contains(.mqttDisconnect))
        #expect(core.connectionState == .waitingToReconnect)
    }

    @Test func stoppingFailsEveryRequestAndNeverReconnects() throws {
        var core = connectedCore(.widget)
        let (first, _) = try core.listWidgetDevices(now: .zero)
        let (second, _) = try core.fireScene("scene-1", now: .zero)
        let actions = core.stopConnection(now: .seconds(1))
        #expect(actions == [
            .event(.connectionStateChanged(.stopped)),
            .event(.requestFailed(first, .connectionStopped)),
            .event(.requestFailed(second, .connectionStopped)),
            .mqttDisconnect,
        ])
        #expect(core.nextDeadline == nil)
        #expect(core.mqttDisconnected(now: .seconds(2)) == [])
        #expect(throws: WidgetError.self) { try core.listWidgetDevices(now: .seconds(2)) }
    }

    @Test func connectionNewsTheCoreDidNotAskForIsAViolation() {
        var core = makeCore(.host)
        #expect(violations(core.mqttConnected(now: .zero)) == [.unexpectedConnectionEvent])
        #expect(violations(core.mqttSubscribed(topics: [], now: .zero)) == [.unexpectedConnectionEvent])
        #expect(violations(core.mqttMessageReceived(topic: topics.status, payload: statusPayload("d", 1, time: 1), now: .zero)) == [.messageWhileDisconnected])
        #expect(core.connectionState == .stopped)
    }

    @Test func aMessageOnAnotherTopicIsAViolation() {
        var core = connectedCore(.host)
        #expect(violations(core.mqttMessageReceived(topic: "tether/acct1/api/response/widget-acct1", payload: responsePayload("x"), now: .zero)) == [.unexpectedTopic])
    }
}

@Suite struct RequestTests {
    @Test func theDeviceListIsDeliveredAndShown() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.listWidgetDevices(now: .zero)
        let devices = [WidgetDevice(iotId: "dev-a", productKey: "pk1", deviceName: "name-dev-a", nickName: "Lamp dev-a", status: 1)]
        let actions = core.respond(id.rawValue, data: [deviceJSON("dev-a")], now: .zero)
        #expect(events(actions) == [
            .requestSucceeded(id, .devices(devices)),
            .widgetDevicesChanged(devices),
            .deviceStatusChanged(iotId: "dev-a", WidgetDeviceStatus(code: 1, time: nil)),
        ])
        #expect(core.display.devices.map(\.device) == devices)
        #expect(!core.hasPendingWork)
    }

    @Test func theSceneListAndTheCatalogAreDelivered() throws {
        var core = connectedCore(.host)
        let (list, _) = try core.listWidgetScenes(now: .zero)
        #expect(events(core.respond(list.rawValue, data: [["sceneId": "s1", "name": "All on"]], now: .zero))
                == [.requestSucceeded(list, .scenes([WidgetScene(sceneId: "s1", name: "All on")])), .widgetScenesChanged([WidgetScene(sceneId: "s1", name: "All on")])])
        let (page, actions) = try core.queryScenes(pageNo: 2, pageSize: 5, now: .zero)
        #expect(publishedRequests(actions).first?.params == ["catalogId": "0", "pageNo": 2, "pageSize": 5])
        let data: WidgetJSON = ["total": 6, "pageNo": 2, "pageSize": 5, "data": [["sceneId": "s6", "name": "Night", "enable": false]]]
        #expect(events(core.respond(page.rawValue, data: data, now: .zero))
                == [.requestSucceeded(page, .scenePage(WidgetScenePage(total: 6, pageNo: 2, pageSize: 5, scenes: [WidgetCatalogScene(sceneId: "s6", name: "Night", enabled: false)])))])
    }

    @Test func hostUpdatesOfTheWidgetsListsAreAccepted() throws {
        var core = connectedCore(.host)
        let (devices, deviceActions) = try core.updateWidgetDevices(["dev-a", "dev-c"], now: .zero)
        #expect(publishedRequests(deviceActions).first?.params == ["iotIds": ["dev-a", "dev-c"]])
        let (scenes, sceneActions) = try core.updateWidgetScenes(["s1"], now: .zero)
        #expect(publishedRequests(sceneActions).first?.path == "/living/appwidget/create")
        #expect(events(core.respond(devices.rawValue, now: .zero)) == [.requestSucceeded(devices, .accepted)])
        #expect(events(core.respond(scenes.rawValue, data: ["anything": 1], now: .zero)) == [.requestSucceeded(scenes, .accepted)])
    }

    @Test func aFiredSceneReportsTheDevicesItSkipped() throws {
        var core = connectedCore(.widget)
        let (id, actions) = try core.fireScene("scene-1", now: .zero)
        #expect(publishedRequests(actions).first?.params == ["sceneId": "scene-1"])
        #expect(events(core.respond(id.rawValue, data: ["skipped": ["dev-c"]], now: .zero)) == [.requestSucceeded(id, .sceneFired(skipped: ["dev-c"]))])
        let (plain, _) = try core.fireScene("scene-2", now: .zero)
        #expect(events(core.respond(plain.rawValue, now: .zero)) == [.requestSucceeded(plain, .sceneFired(skipped: []))])
    }

    @Test(arguments: [(400, "bad request"), (404, "not found"), (9201, "device offline")])
    func aCloudErrorCodeFailsTheRequest(_ code: Int, _ message: String) throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.setProperties(iotId: "dev-a", ["powerstate": 1], now: .zero)
        #expect(events(core.respond(id.rawValue, code: code, message: message, now: .zero)) == [.requestFailed(id, .cloud(code: code, message: message))])
        #expect(!core.hasPendingWork)
    }

    @Test func aDuplicateResponseIsIgnored() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.fireScene("scene-1", now: .zero)
        _ = core.respond(id.rawValue, now: .zero)
        #expect(core.respond(id.rawValue, now: .zero) == [.event(.responseIgnored(id, .duplicate))])
    }

    @Test func aResponseAfterTheTimeoutIsIgnoredAsLate() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.fireScene("scene-1", now: .zero)
        _ = core.handleTimeout(now: .seconds(10))
        #expect(core.respond(id.rawValue, now: .seconds(11)) == [.event(.responseIgnored(id, .afterFailure))])
    }

    @Test func aResponseOfAnEarlierProcessIsIgnored() {
        var core = connectedCore(.widget)
        #expect(core.respond("00000001-1", now: .zero) == [.event(.responseIgnored(WidgetRequestID(rawValue: "00000001-1"), .otherIncarnation))])
    }

    @Test func aResponseToAnIDThisProcessNeverIssuedIsAViolation() {
        var core = connectedCore(.widget)
        let id = WidgetCore.idText(incarnation: core.incarnation, sequence: 99)
        #expect(violations(core.respond(id, now: .zero)) == [.unknownResponseID])
    }

    @Test func aResponseWithThisIncarnationButNoSequenceIsAViolation() {
        var core = connectedCore(.widget)
        let id = WidgetCore.idText(incarnation: core.incarnation, sequence: 0).dropLast(1) + "x"
        #expect(violations(core.respond(String(id), now: .zero)) == [.unknownResponseID])
    }

    @Test func aResponseThatIsNotJSONIsAViolationAndTheRequestWaits() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.fireScene("scene-1", now: .zero)
        #expect(violations(core.mqttMessageReceived(topic: topics.response(clientID: "widget-acct1"), payload: Array("{\"id\":".utf8), now: .zero)) == [.malformedMessage])
        #expect(core.pendingRequests == [id])
    }

    @Test func aSuccessWithDataOfTheWrongShapeFailsTheRequestWithAViolation() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.listWidgetDevices(now: .zero)
        let actions = core.respond(id.rawValue, data: [["iotId": "dev-a"]], now: .zero)
        #expect(violations(actions) == [.malformedMessage])
        guard case .requestFailed(id, .malformedResponse)? = events(actions).last else {
            Issue.record("expected a malformedResponse failure, got \(actions)")
            return
        }
    }

    @Test func aResponseWithoutACodeFailsItsRequest() throws {
        var core = connectedCore(.widget)
        let (id, _) = try core.fireScene("scene-1", now: .zero)
        let payload = WidgetJSON.object(["id": .string(id.rawValue), "message": "ok"]).encoded()
        let actions = core.mqttMessageReceived(topic: topics.response(clientID: "widget-acct1"), payload: payload, now: .zero)
        #expect(violations(actions) == [.malformedMessage])
        #expect(core.pendingRequests.isEmpty)
    }
}

@Suite struct NotificationTests {
    @Test func aPropertiesNotificationIsShown() {
        var core = connectedCore(.widget)
        let actions = core.notifyProperties("dev-a", ["powerstate": (1, 100)], now: .zero)
        #expect(actions == [.event(.devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 100)]))])
        #expect(core.deviceView("dev-a").properties["powerstate"]?.value == 1)
    }

    @Test func anOlderNotificationIsNotShownAfterANewerOne() {
        var core = connectedCore(.widget)
        _ = core.notifyProperties("dev-a", ["powerstate": (1, 200)], now: .zero)
        #expect(core.notifyProperties("dev-a", ["powerstate": (0, 150)], now: .zero)
                == [.event(.staleUpdateIgnored(iotId: "dev-a", property: "powerstate", time: 150, shownTime: 200))])
        #expect(core.deviceView("dev-a").properties["powerstate"] == WidgetPropertyValue(value: 1, time: 200))
    }

    @Test func aRepeatedNotificationIsSilent() {
        var core = connectedCore(.widget)
        _ = core.notifyProperties("dev-a", ["powerstate": (1, 200)], now: .zero)
        #expect(core.notifyProperties("dev-a", ["powerstate": (1, 200)], now: .zero) == [])
    }

    @Test func aReadOlderThanANotificationAlreadyShownDoesNotOverwriteIt() throws {
        var core = connectedCore(.widget)
        let (read, _) = try core.queryProperties(iotId: "dev-a", productKey: "pk1", now: .zero)
        _ = core.notifyProperties("dev-a", ["powerstate": (1, 300)], now: .zero)
        let data: WidgetJSON = ["iotId": "dev-a", "items": ["powerstate": ["value": 0, "time": 250], "brightness": ["value": 40, "time": 250]]]
        let actions = core.respond(read.rawValue, data: data, now: .zero)
        #expect(events(actions) == [
            .requestSucceeded(read, .properties(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 300), "brightness": WidgetPropertyValue(value: 40, time: 250)])),
            .staleUpdateIgnored(iotId: "dev-a", property: "powerstate", time: 250, shownTime: 300),
            .devicePropertiesChanged(iotId: "dev-a", ["brightness": WidgetPropertyValue(value: 40, time: 250)]),
        ])
    }

    @Test func aReadForAnotherDeviceFailsAsMalformed() throws {
        var core = connectedCore(.widget)
        let (read, _) = try core.queryProperties(iotId: "dev-a", productKey: "pk1", now: .zero)
        let actions = core.respond(read.rawValue, data: ["iotId": "dev-b", "items": [:]], now: .zero)
        #expect(violations(actions) == [.malformedMessage])
        #expect(core.pendingRequests.isEmpty)
    }

    @Test func setThenResponseThenNotificationReachesTheAppInThatOrder() throws {
        var core = connectedCore(.widget)
        let (set, actions) = try core.setProperties(iotId: "dev-a", ["powerstate": 1], now: .zero)
        #expect(publishedRequests(actions).first?.params == ["iotId": "dev-a", "items": ["powerstate": 1]])
        #expect(events(core.respond(set.rawValue, now: .zero)) == [.requestSucceeded(set, .accepted)])
        #expect(events(core.notifyProperties("dev-a", ["powerstate": (1, 500)], now: .zero))
                == [.devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 500)])])
    }

    @Test func aNotificationArrivingBeforeTheSetsResponseWaitsForIt() throws {
        var core = connectedCore(.widget)
        let (set, _) = try core.setProperties(iotId: "dev-a", ["powerstate": 1], now: .zero)
        let early = core.notifyProperties("dev-a", ["powerstate": (1, 500), "brightness": (80, 500)], now: .zero)
        #expect(events(early) == [
            .updateHeld(iotId: "dev-a", behind: set),
            .devicePropertiesChanged(iotId: "dev-a", ["brightness": WidgetPropertyValue(value: 80, time: 500)]),
        ])
        #expect(core.hasPendingWork)
        #expect(events(core.respond(set.rawValue, now: .zero)) == [
            .requestSucceeded(set, .accepted),
            .devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 1, time: 500)]),
        ])
        #expect(!core.hasPendingWork)
    }

    @Test func heldValuesAreShownAfterTheSetFails() throws {
        var core = connectedCore(.widget)
        let (set, _) = try core.setProperties(iotId: "dev-a", ["powerstate": 1], now: .zero)
        _ = core.notifyProperties("dev-a", ["powerstate": (0, 600)], now: .zero)
        #expect(events(core.handleTimeout(now: .seconds(10))) == [
            .timeout(.request(set), deadline: .seconds(10)),
            .requestFailed(set, .timedOut),
            .devicePropertiesChanged(iotId: "dev-a", ["powerstate": WidgetPropertyValue(value: 0, time: 600)]),
        ])
    }

    @Test func aNotificationForAnotherDeviceOrPropertyIsNotHeld() throws {
        var core = connectedCore(.widget)
        _ = try core.setProperties(iotId: "dev-a", ["powerstate": 1], now: .zero)
        #expect(events(core.notifyProperties("dev-b", ["powerstate": (1, 10)], now: .zero)).count == 1)
        #expect(events(core.notifyProperties("dev-a", ["brightness": (1, 10)], now: .zero)).count == 1)
    }

    @Test func statusNotificationsAreShownAndNeverGoBack() {
        var core = connectedCore(.widget)
        #expect(events(core.notifyStatus("dev-a", 3, time: 100, now: .zero)) == [.deviceStatusChanged(iotId: "dev-a", WidgetDeviceStatus(code: 3, time: 100))])
        #expect(events(core.notifyStatus("dev-a", 1, time: 90, now: .zero)) == [.staleUpdateIgnored(iotId: "dev-a", property: nil, time: 90, shownTime: 100)])
        #expect(core.notifyStatus("dev-a", 3, time: 100, now: .zero) == [])
        #expect(core.deviceView("dev-a").status?.isOnline == false)
    }

    @Test func aStatusOtherThanOnlineOrOfflineIsAViolation() {
        var core = connectedCore(.widget)
        #expect(violations(core.notifyStatus("dev-a", 2, time: 100, now: .zero)) == [.unknownStatusValue])
        #expect(core.deviceView("dev-a").status == nil)
    }

    @Test func aListedStatusDoesNotReplaceAStatusHeardAfterTheListWasAskedFor() throws {
        var core = connectedCore(.widget)
        let (list, _) = try core.listWidgetDevices(now: .zero)
        _ = core.notifyStatus("dev-a", 3, time: 100, now: .milliseconds(5))
        _ = core.respond(list.rawValue, data: [deviceJSON("dev-a", status: 1)], now: .milliseconds(10))
        #expect(core.deviceView("dev-a").status == WidgetDeviceStatus(code: 3, time: 100))
        // A list asked for later replaces it, and an older notification still cannot come back.
        let (again, _) = try core.listWidgetDevices(now: .milliseconds(20))
        _ = core.respond(again.rawValue, data: [deviceJSON("dev-a", status: 1)], now: .milliseconds(30))
        #expect(core.deviceView("dev-a").status == WidgetDeviceStatus(code: 1, time: nil))
        #expect(events(core.notifyStatus("dev-a", 3, time: 100, now: .milliseconds(40)))
                == [.staleUpdateIgnored(iotId: "dev-a", property: nil, time: 100, shownTime: 100)])
        #expect(core.deviceView("dev-a").status == WidgetDeviceStatus(code: 1, time: nil))
    }

    @Test(arguments: [
        #"{"iotId":"d"}"#, #"{"iotId":"","items":{}}"#, #"{"iotId":"d","items":{"p":{"value":1}}}"#,
        #"{"iotId":"d","items":{"p":{"value":1,"time":-1}}}"#, #"[]"#, "not json",
    ])
    func aMalformedPropertiesNotificationIsAViolation(_ text: String) {
        var core = connectedCore(.widget)
        #expect(violations(core.mqttMessageReceived(topic: topics.properties, payload: Array(text.utf8), now: .zero)) == [.malformedMessage])
    }
}
