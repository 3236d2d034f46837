import BehaviourTrace
import MessagingCore

/// The fields of a `messaging` trace event, held as the core's own values rather than a
/// dictionary of texts: a Connect IQ hour writes a `progress` or `completion` for nearly every
/// packet the app sends or receives, and each used to build a dictionary and render two UUIDs as
/// text whether or not anything read them. Every event of the core is held this way, so the
/// mapping has one form.
///
/// The trace line is unchanged: ``forEachField(_:)`` writes the fields in key order, as the
/// dictionary they replace was written, and an event holding them equals the event read back
/// from a baseline, field by field. The UUIDs become text only when a field is read or written.
///
/// Equality is the synthesised one, so everything held must be written: a message's value is
/// held as the ``TraceValue`` it writes (two MonkeyC dictionaries differing only in the order of
/// their pairs write the same line), a `timeout` keeps no deadline (it is on the core's own
/// clock) and only its app's UUID (the line's `app`).
struct MessagingEventFields: TracePayload {
    /// What the event says about one app, beside the app (and through it the device).
    enum AppDetail: Sendable, Hashable {
        /// `progress`: `send`, `sent` of `total`.
        case progress(send: SendID, sent: Int, total: Int)
        /// `completion`: `send` and its `result`.
        case completion(send: SendID, result: IQSendMessageResult)
        /// `message_received`: `listener` and the message's `value`.
        case messageReceived(listener: ListenerID, value: TraceValue)
        /// `message_unclaimed`: a message no listener took, its `value`.
        case messageUnclaimed(value: TraceValue)
        /// `app_status`: the answer to `request`; `installed` and `version` are `null` without one.
        case appStatus(request: RequestID, status: IQAppStatus?)
        /// `open_app`: the answer to `request`.
        case openApp(request: RequestID, result: IQSendMessageResult)
        /// `connection_opened`.
        case connectionOpened(connection: UInt8, largePackets: Bool, byWatch: Bool)
        /// `connection_closed`.
        case connectionClosed(connection: UInt8)
    }

    /// The events' shapes.
    enum Source: Sendable, Hashable {
        /// An event about one app: `app`, `device` and the detail's fields.
        case app(IQApp, AppDetail)
        /// `device_list`: each device's `uuid`, `model` and `name`.
        case deviceList([IQDevice])
        /// `device_list_saved`: how many devices the host stored.
        case deviceListSaved(count: Int)
        /// `device_status`.
        case deviceStatus(DeviceID, IQDeviceStatus)
        /// `timeout`: `what` ran out on `device`, for the app with UUID `app` when it was one app's.
        case timeout(MessagingTimeoutKind, device: DeviceID, app: IQUUID?)
        /// `violation`.
        case violation(DeviceID, MessagingViolationKind, detail: String)
    }

    /// What the fields are read from.
    let source: Source

    /// The fields of one event about `app`.
    init(app: IQApp, detail: AppDetail) {
        source = .app(app, detail)
    }

    /// The fields of `source`.
    init(_ source: Source) {
        self.source = source
    }

    var fieldCount: Int {
        switch source {
        case .app(_, let detail):
            switch detail {
            case .progress, .appStatus, .connectionOpened: 5
            case .completion, .messageReceived, .openApp: 4
            case .messageUnclaimed, .connectionClosed: 3
            }
        case .deviceList, .deviceListSaved: 1
        case .deviceStatus: 2
        case .timeout(_, _, let app): app == nil ? 2 : 3
        case .violation: 3
        }
    }

    /// One field, answered without writing the others for the events written most (a send's
    /// `progress` and `completion`, read by key by the send promise); the rest are looked up
    /// through ``forEachField(_:)``.
    func field(_ key: String) -> TraceValue? {
        if case let .app(app, detail) = source {
            switch key {
            case "app": return .string(app.uuid.description)
            case "device": return .string(app.device.description)
            default: break
            }
            switch (detail, key) {
            case let (.progress(send, _, _), "send"), let (.completion(send, _), "send"): return .int(Int64(send.rawValue))
            case let (.progress(_, sent, _), "sent"): return .int(Int64(sent))
            case let (.progress(_, _, total), "total"): return .int(Int64(total))
            case let (.completion(_, result), "result"): return .string(result.name)
            case (.progress, _), (.completion, _): return nil
            default: break
            }
        }
        var found: TraceValue?
        forEachField { name, value in
            if found == nil, name == key { found = value }
        }
        return found
    }

    /// Every field, keys in ascending order.
    func forEachField(_ body: (String, TraceValue) -> Void) {
        switch source {
        case let .app(app, detail):
            body("app", .string(app.uuid.description))
            // `device` falls among the detail's keys: after `by_watch` and `connection`.
            let device = TraceValue.string(app.device.description)
            switch detail {
            case let .progress(send, sent, total):
                body("device", device)
                body("send", .int(Int64(send.rawValue)))
                body("sent", .int(Int64(sent)))
                body("total", .int(Int64(total)))
            case let .completion(send, result):
                body("device", device)
                body("result", .string(result.name))
                body("send", .int(Int64(send.rawValue)))
            case let .messageReceived(listener, value):
                body("device", device)
                body("listener", .int(Int64(listener.rawValue)))
                body("value", value)
            case .messageUnclaimed(let value):
                body("device", device)
                body("value", value)
            case let .appStatus(request, status):
                body("device", device)
                body("installed", status.map { .bool($0.isInstalled) } ?? .null)
                body("request", .int(Int64(request.rawValue)))
                body("version", status.map { .int(Int64($0.version)) } ?? .null)
            case let .openApp(request, result):
                body("device", device)
                body("request", .int(Int64(request.rawValue)))
                body("result", .string(result.name))
            case let .connectionOpened(connection, largePackets, byWatch):
                body("by_watch", .bool(byWatch))
                body("connection", .int(Int64(connection)))
                body("device", device)
                body("large_packets", .bool(largePackets))
            case .connectionClosed(let connection):
                body("connection", .int(Int64(connection)))
                body("device", device)
            }
        case .deviceList(let devices):
            body("devices", .array(devices.map {
                .object(["uuid": .string($0.uuid.description), "model": .string($0.modelName), "name": .string($0.friendlyName)])
            }))
        case .deviceListSaved(let count):
            body("count", .int(Int64(count)))
        case let .deviceStatus(device, status):
            body("device", .string(device.description))
            body("status", .string(status.rawValue))
        case let .timeout(kind, device, app):
            if let app { body("app", .string(app.description)) }
            body("device", .string(device.description))
            body("what", .string(kind.rawValue))
        case let .violation(device, kind, detail):
            body("detail", .string(detail))
            body("device", .string(device.description))
            body("kind", .string(kind.rawValue))
        }
    }
}
