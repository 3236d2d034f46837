// Names and fields for the behaviour trace (core `widget`, docs/trace-format.md). The replay adapter
// and the live hosts map events through these, so both write the same lines. Field values are
// WidgetJSON, which maps one to one onto the trace's values.

extension WidgetEvent {
    /// The trace event name: the case name in snake case (`settings_changed`, `refresh_completed`,
    /// `device_properties_changed`, …).
    public var traceName: String {
        switch self {
        case .settingsChanged: "settings_changed"
        case .settingsUnchanged: "settings_unchanged"
        case .hasContentChanged: "has_content_changed"
        case .staleFileIgnored: "stale_file_ignored"
        case .openURLRequested: "open_url_requested"
        case .openURLCompleted: "open_url_completed"
        case .openURLResultDiscarded: "open_url_result_discarded"
        case .refreshStarted: "refresh_started"
        case .refreshCompleted: "refresh_completed"
        case .connectionStateChanged: "connection_state_changed"
        case .requestIssued: "request_issued"
        case .requestSucceeded: "request_succeeded"
        case .requestFailed: "request_failed"
        case .responseIgnored: "response_ignored"
        case .widgetDevicesChanged: "widget_devices_changed"
        case .widgetScenesChanged: "widget_scenes_changed"
        case .devicePropertiesChanged: "device_properties_changed"
        case .deviceStatusChanged: "device_status_changed"
        case .staleUpdateIgnored: "stale_update_ignored"
        case .updateHeld: "update_held"
        case .timeout: "timeout"
        case .violation: "violation"
        }
    }

    /// The trace event's fields (snake-case keys), without `t_ns`, `core` and `event`.
    public var traceFields: [String: WidgetJSON] {
        switch self {
        case let .settingsChanged(version, settings):
            return ["version": .int(Int64(clamping: version)), "settings": settings]
        case .settingsUnchanged:
            return [:]
        case .hasContentChanged(let flag):
            return ["has_content": .bool(flag)]
        case let .staleFileIgnored(name, version, shown):
            return ["name": .string(name), "version": .int(Int64(clamping: version)), "shown_version": .int(Int64(clamping: shown))]
        case .openURLRequested(let request):
            return ["id": .string(request.id.rawValue), "url": .string(request.url)]
        case let .openURLCompleted(id, opened), let .openURLResultDiscarded(id, opened):
            return ["id": .string(id.rawValue), "opened": .bool(opened)]
        case let .refreshStarted(id, budget):
            return ["refresh": .int(Int64(id.rawValue)), "budget_ns": .int(budget.totalNanoseconds)]
        case let .refreshCompleted(id, result):
            return ["refresh": .int(Int64(id.rawValue)), "result": .string(result.rawValue)]
        case .connectionStateChanged(let state):
            return ["state": .string(state.rawValue)]
        case let .requestIssued(id, path, origin):
            var fields: [String: WidgetJSON] = ["id": .string(id.rawValue), "path": .string(path.rawValue)]
            switch origin {
            case .app: fields["origin"] = "app"
            case .refresh(let refresh): fields["origin"] = "refresh"; fields["refresh"] = .int(Int64(refresh.rawValue))
            case .reconnect: fields["origin"] = "reconnect"
            }
            return fields
        case let .requestSucceeded(id, response):
            return ["id": .string(id.rawValue), "response": response.traceValue]
        case let .requestFailed(id, failure):
            var fields: [String: WidgetJSON] = ["id": .string(id.rawValue), "failure": .string(failure.traceName)]
            switch failure {
            case let .cloud(code, message): fields["code"] = .int(Int64(code)); fields["message"] = .string(message)
            case .malformedResponse(let detail): fields["detail"] = .string(detail)
            default: break
            }
            return fields
        case let .responseIgnored(id, reason):
            return ["id": .string(id.rawValue), "reason": .string(reason.rawValue)]
        case .widgetDevicesChanged(let devices):
            return ["devices": .array(devices.map(\.traceValue))]
        case .widgetScenesChanged(let scenes):
            return ["scenes": .array(scenes.map(\.traceValue))]
        case let .devicePropertiesChanged(iotId, items):
            return ["iot_id": .string(iotId), "items": .object(items.mapValues(\.traceValue))]
        case let .deviceStatusChanged(iotId, status):
            return ["iot_id": .string(iotId), "status": .int(Int64(status.code)), "time": status.time.map(WidgetJSON.int) ?? .null]
        case let .staleUpdateIgnored(iotId, property, time, shown):
            return ["iot_id": .string(iotId), "property": property.map(WidgetJSON.string) ?? .null, "time": .int(time), "shown_time": .int(shown)]
        case let .updateHeld(iotId, behind):
            return ["iot_id": .string(iotId), "behind": .string(behind.rawValue)]
        case let .timeout(timer, deadline):
            return ["what": .string(timer.description), "deadline_ns": .int(deadline.totalNanoseconds)]
        case let .violation(kind, detail):
            return ["kind": .string(kind.rawValue), "detail": .string(detail)]
        }
    }
}

extension WidgetAction {
    /// The trace event name of an action that is not an event: `file_written`, `file_removed`,
    /// `mqtt_connect`, `mqtt_subscribe`, `mqtt_publish`, `mqtt_disconnect`; an event's own name.
    public var traceName: String {
        switch self {
        case .writeFile: "file_written"
        case .removeFile: "file_removed"
        case .event(let event): event.traceName
        case .mqttConnect: "mqtt_connect"
        case .mqttSubscribe: "mqtt_subscribe"
        case .mqttPublish: "mqtt_publish"
        case .mqttDisconnect: "mqtt_disconnect"
        }
    }
}

extension WidgetResponse {
    /// `{"kind": "devices", "devices": […]}` and so on.
    public var traceValue: WidgetJSON {
        switch self {
        case .devices(let devices):
            return ["kind": "devices", "devices": .array(devices.map(\.traceValue))]
        case .scenes(let scenes):
            return ["kind": "scenes", "scenes": .array(scenes.map(\.traceValue))]
        case .scenePage(let page):
            return ["kind": "scene_page", "total": .int(Int64(page.total)), "page_no": .int(Int64(page.pageNo)),
                    "page_size": .int(Int64(page.pageSize)),
                    "scenes": .array(page.scenes.map { ["scene_id": .string($0.sceneId), "name": .string($0.name), "enabled": .bool($0.enabled)] })]
        case let .properties(iotId, items):
            return ["kind": "properties", "iot_id": .string(iotId), "items": .object(items.mapValues(\.traceValue))]
        case .accepted:
            return ["kind": "accepted"]
        case .sceneFired(let skipped):
            return ["kind": "scene_fired", "skipped": .array(skipped.map(WidgetJSON.string))]
        }
    }
}

extension WidgetDevice {
    /// `{"iot_id","product_key","device_name","nick_name","status"}`.
    public var traceValue: WidgetJSON {
        ["iot_id": .string(iotId), "product_key": .string(productKey), "device_name": .string(deviceName),
         "nick_name": nickName.map(WidgetJSON.string) ?? .null, "status": .int(Int64(status))]
    }
}

extension WidgetScene {
    /// `{"scene_id","name"}`.
    public var traceValue: WidgetJSON { ["scene_id": .string(sceneId), "name": .string(name)] }
}

extension WidgetPropertyValue {
    /// `{"value","time"}`.
    public var traceValue: WidgetJSON { ["value": value, "time": .int(time)] }
}

extension Duration {
    /// The whole nanoseconds (saturating at the Int64 range).
    var totalNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
