import BehaviourTrace
import ReplayKit
import WidgetCore

/// The fields of a `widget` trace event, held as WidgetCore's own action (an event the core gave,
/// or a container removal or MQTT step the host takes) rather than a dictionary: the core's value
/// is the record, and its fields are written from it only when the line is written or a field read.
///
/// The line is the one docs/trace-format.md lists, unchanged: ``forEachField(_:)`` gives the
/// fields in key order. Two events are equal when they write the same fields: a `timeout` keeps no
/// deadline (it is on the core's own clock, whose zero is not the trace's in a live run), and a
/// refresh budget is written in whole nanoseconds, so a live trace and a replay compare as their
/// lines do. Container writes and publishes are `frame_emitted` events, never this payload.
struct WidgetEventFields: TracePayloadComparedByWrittenFields {
    /// What the fields are read from: an action other than a container write or a publish.
    let action: WidgetAction

    /// The fields of `action`. A `timeout`'s deadline is dropped: the line does not carry it.
    init(_ action: WidgetAction) {
        if case .event(.timeout(let timer, _)) = action {
            self.action = .event(.timeout(timer, deadline: .zero))
        } else {
            self.action = action
        }
    }

    /// Every field, keys in ascending order (each case lists its keys sorted).
    func forEachField(_ body: (String, TraceValue) -> Void) {
        switch action {
        case .event(let event):
            Self.forEachField(of: event, body)
        case .removeFile(let name):
            body("name", .string(name))
        case .mqttConnect(let clientID):
            body("client_id", .string(clientID))
        case .mqttSubscribe(let topics):
            body("topics", .array(topics.map(TraceValue.string)))
        case .mqttDisconnect, .writeFile, .mqttPublish:
            break
        }
    }

    /// The fields of one core event, keys in ascending order.
    private static func forEachField(of event: WidgetEvent, _ body: (String, TraceValue) -> Void) {
        switch event {
        case let .settingsChanged(version, settings):
            body("settings", WidgetTraceMapping.traceValue(settings))
            body("version", .int(Int64(clamping: version)))
        case .settingsUnchanged:
            break
        case .hasContentChanged(let flag):
            body("has_content", .bool(flag))
        case let .staleFileIgnored(name, version, shown):
            body("name", .string(name))
            body("shown_version", .int(Int64(clamping: shown)))
            body("version", .int(Int64(clamping: version)))
        case .openURLRequested(let request):
            body("id", .string(request.id.rawValue))
            body("url", .string(request.url))
        case let .openURLCompleted(id, opened), let .openURLResultDiscarded(id, opened):
            body("id", .string(id.rawValue))
            body("opened", .bool(opened))
        case let .refreshStarted(id, budget):
            body("budget_ns", .int(budget.replayNanoseconds))
            body("refresh", .int(Int64(id.rawValue)))
        case let .refreshCompleted(id, result):
            body("refresh", .int(Int64(id.rawValue)))
            body("result", .string(result.rawValue))
        case .connectionStateChanged(let state):
            body("state", .string(state.rawValue))
        case let .requestIssued(id, path, origin):
            let (originName, refresh): (String, WidgetRefreshID?) = switch origin {
            case .app: ("app", nil)
            case .refresh(let refresh): ("refresh", refresh)
            case .reconnect: ("reconnect", nil)
            }
            body("id", .string(id.rawValue))
            body("origin", .string(originName))
            body("path", .string(path.rawValue))
            if let refresh { body("refresh", .int(Int64(refresh.rawValue))) }
        case let .requestSucceeded(id, response):
            body("id", .string(id.rawValue))
            body("response", traceValue(response))
        case let .requestFailed(id, failure):
            // `code` and `message` come with a cloud failure, `detail` with a malformed response.
            if case .cloud(let code, _) = failure { body("code", .int(Int64(code))) }
            if case .malformedResponse(let detail) = failure { body("detail", .string(detail)) }
            body("failure", .string(failure.name))
            body("id", .string(id.rawValue))
            if case .cloud(_, let message) = failure { body("message", .string(message)) }
        case let .responseIgnored(id, reason):
            body("id", .string(id.rawValue))
            body("reason", .string(reason.rawValue))
        case .widgetDevicesChanged(let devices):
            body("devices", .array(devices.map(traceValue)))
        case .widgetScenesChanged(let scenes):
            body("scenes", .array(scenes.map(traceValue)))
        case let .devicePropertiesChanged(iotId, items):
            body("iot_id", .string(iotId))
            body("items", .object(items.mapValues(traceValue)))
        case let .deviceStatusChanged(iotId, status):
            body("iot_id", .string(iotId))
            body("status", .int(Int64(status.code)))
            body("time", status.time.map(TraceValue.int) ?? .null)
        case let .staleUpdateIgnored(iotId, property, time, shown):
            body("iot_id", .string(iotId))
            body("property", property.map(TraceValue.string) ?? .null)
            body("shown_time", .int(shown))
            body("time", .int(time))
        case let .updateHeld(iotId, behind):
            body("behind", .string(behind.rawValue))
            body("iot_id", .string(iotId))
        case .timeout(let timer, _):
            body("what", .string(timer.description))
        case let .violation(kind, detail):
            body("detail", .string(detail))
            body("kind", .string(kind.rawValue))
        }
    }

    /// `{"kind": "devices", "devices": […]}` and so on.
    private static func traceValue(_ response: WidgetResponse) -> TraceValue {
        switch response {
        case .devices(let devices):
            return .object(["kind": .string("devices"), "devices": .array(devices.map(traceValue))])
        case .scenes(let scenes):
            return .object(["kind": .string("scenes"), "scenes": .array(scenes.map(traceValue))])
        case .scenePage(let page):
            let scenes = page.scenes.map { scene -> TraceValue in
                .object(["scene_id": .string(scene.sceneId), "name": .string(scene.name), "enabled": .bool(scene.enabled)])
            }
            return .object(["kind": .string("scene_page"), "total": .int(Int64(page.total)), "page_no": .int(Int64(page.pageNo)),
                            "page_size": .int(Int64(page.pageSize)), "scenes": .array(scenes)])
        case let .properties(iotId, items):
            return .object(["kind": .string("properties"), "iot_id": .string(iotId), "items": .object(items.mapValues(traceValue))])
        case .accepted:
            return .object(["kind": .string("accepted")])
        case .sceneFired(let skipped):
            return .object(["kind": .string("scene_fired"), "skipped": .array(skipped.map(TraceValue.string))])
        }
    }

    /// `{"iot_id","product_key","device_name","nick_name","status"}`.
    private static func traceValue(_ device: WidgetDevice) -> TraceValue {
        .object(["iot_id": .string(device.iotId), "product_key": .string(device.productKey), "device_name": .string(device.deviceName),
                 "nick_name": device.nickName.map(TraceValue.string) ?? .null, "status": .int(Int64(device.status))])
    }

    /// `{"scene_id","name"}`.
    private static func traceValue(_ scene: WidgetScene) -> TraceValue {
        .object(["scene_id": .string(scene.sceneId), "name": .string(scene.name)])
    }

    /// `{"value","time"}`.
    private static func traceValue(_ property: WidgetPropertyValue) -> TraceValue {
        .object(["value": WidgetTraceMapping.traceValue(property.value), "time": .int(property.time)])
    }
}
