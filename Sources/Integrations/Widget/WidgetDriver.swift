import ReplayKit
import BehaviourTrace
import WidgetCore

/// What the outside world told one side's ``WidgetCore``: the MQTT connection's news and the App
/// Group container's changes. Replay reads them from a capture; a live host from its socket and
/// inotify.
public enum WidgetInput: Sendable, Hashable {
    /// CONNACK with code 0.
    case mqttConnected
    /// SUBACK: the topics granted.
    case mqttSubscribed([String])
    /// The connection ended.
    case mqttDisconnected
    /// A PUBLISH from the broker.
    case mqttMessage(topic: String, payload: [UInt8])
    /// A container file's new content (`nil`: it was removed).
    case containerChanged(name: String, bytes: [UInt8]?)
}

/// Applies ``WidgetAPICall``s and ``WidgetInput``s to one side's ``WidgetCore``, for replay and the
/// live hosts alike, so both write the same trace events (core `widget`).
public struct WidgetDriver: ReplayedCore, Sendable {
    /// The core; `nil` until a `start`.
    public private(set) var core: WidgetCore?
    /// Timers and settings (the account comes from `start`).
    public var configuration: WidgetConfiguration

    /// A driver with no core yet.
    public init(configuration: WidgetConfiguration = WidgetConfiguration(account: "demo")) {
        self.configuration = configuration
    }

    /// Applies one call: the core's actions and the call's own trace events (`api_call` with the
    /// id the core gave, or `api_error` when the core refused; its state is then unchanged).
    public mutating func apply(_ call: WidgetAPICall, now: Duration) -> (actions: [WidgetAction], events: [TraceEvent]) {
        let timeNs = now.replayNanoseconds
        var fields = call.record
        if case .start = call { fields["container"] = nil }
        func refuse(_ code: String?, _ detail: String) -> (actions: [WidgetAction], events: [TraceEvent]) {
            if let code { fields["error"] = .string(code) }
            fields["detail"] = .string(detail)
            return ([], [TraceEvent(timeNs: timeNs, core: WidgetTraceMapping.core, event: .apiError, fields: fields)])
        }
        if case let .start(role, account, seed, container) = call {
            var settings = configuration
            settings.account = account
            do throws(WidgetError) {
                core = try WidgetCore(role: role, configuration: settings, randomSource: SeededWidgetRandom(seed: seed), restoring: container)
            } catch {
                return refuse(error.code.rawValue, error.detail)
            }
            fields["files"] = .array(container.keys.sorted().map(TraceValue.string))
            return ([], [TraceEvent(timeNs: timeNs, core: WidgetTraceMapping.core, event: .apiCall, fields: fields)])
        }
        guard var widget = core else { return refuse(nil, "no widget core yet: a `start` record must come first") }
        var actions: [WidgetAction] = []
        do throws(WidgetError) {
            switch call {
            case .start:
                break
            case .updateSettings(let settings):
                actions = try widget.updateSettings(settings, now: now)
            case .setHasContent(let value):
                actions = try widget.setHasContent(value, now: now)
            case let .didOpenURL(id, opened):
                actions = try widget.didOpenURL(id, opened: opened, now: now)
            case .openHostApp(let url):
                let (id, result) = try widget.openHostApp(url: url, now: now)
                fields["id"] = .string(id.rawValue)
                actions = result
            case .refresh(let budget):
                let (id, result) = try widget.refreshRequested(budget: budget, now: now)
                fields["refresh"] = .int(Int64(id.rawValue))
                actions = result
            case .startConnection:
                actions = widget.startConnection(now: now)
            case .stopConnection:
                actions = widget.stopConnection(now: now)
            case .listDevices:
                (fields["id"], actions) = Self.request(try widget.listWidgetDevices(now: now))
            case .updateDevices(let ids):
                (fields["id"], actions) = Self.request(try widget.updateWidgetDevices(ids, now: now))
            case let .queryProperties(iotId, productKey):
                (fields["id"], actions) = Self.request(try widget.queryProperties(iotId: iotId, productKey: productKey, now: now))
            case let .setProperties(iotId, items):
                (fields["id"], actions) = Self.request(try widget.setProperties(iotId: iotId, items, now: now))
            case .listScenes:
                (fields["id"], actions) = Self.request(try widget.listWidgetScenes(now: now))
            case let .queryScenes(pageNo, pageSize):
                (fields["id"], actions) = Self.request(try widget.queryScenes(pageNo: pageNo, pageSize: pageSize, now: now))
            case .updateScenes(let ids):
                (fields["id"], actions) = Self.request(try widget.updateWidgetScenes(ids, now: now))
            case .fireScene(let id):
                (fields["id"], actions) = Self.request(try widget.fireScene(id, now: now))
            case let .containerChanged(name, bytes):
                fields["content"] = nil
                fields["size"] = bytes.map { .int(Int64($0.count)) } ?? .null
                actions = widget.containerChanged(name: name, bytes: bytes, now: now)
            case .mqttConnectFailed:
                actions = widget.mqttDisconnected(now: now)
            }
        } catch {
            return refuse(error.code.rawValue, error.detail)
        }
        core = widget
        return (actions, [TraceEvent(timeNs: timeNs, core: WidgetTraceMapping.core, event: .apiCall, fields: fields)])
    }

    private static func request(_ made: (WidgetRequestID, [WidgetAction])) -> (TraceValue?, [WidgetAction]) {
        (.string(made.0.rawValue), made.1)
    }

    /// Applies one input from the outside world.
    public mutating func receive(_ input: WidgetInput, now: Duration) -> [WidgetAction] {
        guard var widget = core else { return [] }
        let actions: [WidgetAction]
        switch input {
        case .mqttConnected: actions = widget.mqttConnected(now: now)
        case .mqttSubscribed(let topics): actions = widget.mqttSubscribed(topics: topics, now: now)
        case .mqttDisconnected: actions = widget.mqttDisconnected(now: now)
        case let .mqttMessage(topic, payload): actions = widget.mqttMessageReceived(topic: topic, payload: payload, now: now)
        case let .containerChanged(name, bytes): actions = widget.containerChanged(name: name, bytes: bytes, now: now)
        }
        core = widget
        return actions
    }

    /// The core's next deadline, if it has one.
    public var nextDeadline: Duration? { core?.nextDeadline }

    /// Fires the core's timers due at `now`.
    public mutating func handleTimeout(now: Duration) -> [WidgetAction] {
        guard var widget = core else { return [] }
        let actions = widget.handleTimeout(now: now)
        core = widget
        return actions
    }
}
