/// Timers and settings of a ``WidgetCore``. The defaults are Tether's choices (docs/widget-core.md).
public struct WidgetConfiguration: Sendable, Hashable {
    /// The cloud account: the second level of every topic (`tether/{account}/…`) and part of the
    /// client ids (`host-{account}`, `widget-{account}`). Must be a valid topic level (checked when
    /// a core is created).
    public var account: String
    /// How long a cloud request waits for its response before it fails with
    /// ``WidgetRequestFailure/timedOut`` (default 10 s, counted from the call).
    public var requestTimeout: Duration
    /// How long the widget waits for the host's answer to an open-host-app request before it
    /// completes it with `opened: false` and withdraws the request (default 10 s).
    public var openURLTimeout: Duration
    /// The wait before the first reconnection attempt after the connection drops (default 1 s);
    /// doubled after each failed attempt up to ``maximumReconnectDelay``, back to this after a
    /// connection that reached `connected`.
    public var reconnectDelay: Duration
    /// The longest wait between reconnection attempts (default 30 s).
    public var maximumReconnectDelay: Duration
    /// The QoS of the API requests the core publishes (default 1, as docs/widget-mqtt.md fixes;
    /// QoS 0 exists for fault-injection tests).
    public var requestQoS: WidgetMQTTQoS
    /// `query.dataType` of `/iotx/ilop/queryComponentProperty` (default `BOOL`).
    public var propertyDataType: String
    /// `query.I18Language` of `/iotx/ilop/queryComponentProperty` (default `en-US`).
    public var propertyLanguage: String

    /// Creates a configuration; every value but the account has the default named on its property.
    /// Timers shorter than 1 ns are taken as 1 ns; a maximum reconnection delay shorter than the
    /// first is taken as the first.
    public init(
        account: String,
        requestTimeout: Duration = .seconds(10),
        openURLTimeout: Duration = .seconds(10),
        reconnectDelay: Duration = .seconds(1),
        maximumReconnectDelay: Duration = .seconds(30),
        requestQoS: WidgetMQTTQoS = .atLeastOnce,
        propertyDataType: String = "BOOL",
        propertyLanguage: String = "en-US"
    ) {
        let tick = Duration.nanoseconds(1)
        self.account = account
        self.requestTimeout = max(requestTimeout, tick)
        self.openURLTimeout = max(openURLTimeout, tick)
        self.reconnectDelay = max(reconnectDelay, tick)
        self.maximumReconnectDelay = max(maximumReconnectDelay, self.reconnectDelay)
        self.requestQoS = requestQoS
        self.propertyDataType = propertyDataType
        self.propertyLanguage = propertyLanguage
    }
}

/// An MQTT quality of service the core asks for.
public enum WidgetMQTTQoS: Int, Sendable, Hashable, Codable, CustomStringConvertible {
    /// QoS 0: at most once.
    case atMostOnce = 0
    /// QoS 1: at least once (duplicates possible).
    case atLeastOnce = 1

    /// `0` or `1`.
    public var description: String { String(rawValue) }
}

/// Where the core's long-lived MQTT connection stands.
public enum WidgetConnectionState: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Not started, or stopped by the app: nothing is sent, nothing reconnects.
    case stopped
    /// `mqttConnect` was asked for; waiting for ``WidgetCore/mqttConnected(now:)``.
    case connecting
    /// Connected; `mqttSubscribe` was asked for, waiting for ``WidgetCore/mqttSubscribed(topics:now:)``.
    case subscribing
    /// Subscribed to the response, properties and status topics: requests go out.
    case connected
    /// The connection dropped; the next attempt is at the reconnect deadline.
    case waitingToReconnect = "waiting_to_reconnect"

    /// The raw value.
    public var description: String { rawValue }
}

/// A device added to the widget, as `/iotx/ilop/queryComponentProduct` lists it.
public struct WidgetDevice: Sendable, Hashable {
    /// The device's id in the cloud.
    public var iotId: String
    /// Its product.
    public var productKey: String
    /// Its name within the product.
    public var deviceName: String
    /// The name the user gave it, if any.
    public var nickName: String?
    /// Its status as listed (1 online, 3 offline; other platform values kept as they are).
    public var status: Int

    /// Creates a record.
    public init(iotId: String, productKey: String, deviceName: String, nickName: String?, status: Int) {
        self.iotId = iotId
        self.productKey = productKey
        self.deviceName = deviceName
        self.nickName = nickName
        self.status = status
    }
}

/// A scene added to the widget, as `/living/appwidget/list` lists it.
public struct WidgetScene: Sendable, Hashable {
    /// The scene's id.
    public var sceneId: String
    /// Its name.
    public var name: String

    /// Creates a record.
    public init(sceneId: String, name: String) {
        self.sceneId = sceneId
        self.name = name
    }
}

/// A scene of the account's catalog, as `/living/scene/query` lists it.
public struct WidgetCatalogScene: Sendable, Hashable {
    /// The scene's id.
    public var sceneId: String
    /// Its name.
    public var name: String
    /// Whether it is enabled.
    public var enabled: Bool

    /// Creates a record.
    public init(sceneId: String, name: String, enabled: Bool) {
        self.sceneId = sceneId
        self.name = name
        self.enabled = enabled
    }
}

/// One page of `/living/scene/query`.
public struct WidgetScenePage: Sendable, Hashable {
    /// Scenes in the catalog.
    public var total: Int
    /// This page's number (from 1).
    public var pageNo: Int
    /// Scenes per page.
    public var pageSize: Int
    /// The page's scenes.
    public var scenes: [WidgetCatalogScene]

    /// Creates a page.
    public init(total: Int, pageNo: Int, pageSize: Int, scenes: [WidgetCatalogScene]) {
        self.total = total
        self.pageNo = pageNo
        self.pageSize = pageSize
        self.scenes = scenes
    }
}

/// A property's value and the cloud's time for it (milliseconds since the Unix epoch): the time
/// orders updates, so an older one is never shown after a newer one.
public struct WidgetPropertyValue: Sendable, Hashable {
    /// The value (any JSON).
    public var value: WidgetJSON
    /// The cloud's time of the value, ms since the Unix epoch.
    public var time: Int64

    /// Creates a value.
    public init(value: WidgetJSON, time: Int64) {
        self.value = value
        self.time = time
    }
}

/// A device's connection status as shown: from `tether/{account}/thing/status` (with a time) or
/// from a device list (without one).
public struct WidgetDeviceStatus: Sendable, Hashable {
    /// The status code: 1 online, 3 offline (a list may carry other platform values).
    public var code: Int
    /// The cloud's time of the status (ms since the Unix epoch); `nil` when it came from a list.
    public var time: Int64?

    /// Creates a status.
    public init(code: Int, time: Int64?) {
        self.code = code
        self.time = time
    }

    /// Whether the device is online (code 1).
    public var isOnline: Bool { code == 1 }
}

/// A device on the widget as the widget shows it: the listed record, its status and properties.
public struct WidgetDeviceView: Sendable, Hashable {
    /// The device as listed.
    public var device: WidgetDevice
    /// The newest status known, if any.
    public var status: WidgetDeviceStatus?
    /// The newest value of each property known.
    public var properties: [String: WidgetPropertyValue]

    /// Creates a view.
    public init(device: WidgetDevice, status: WidgetDeviceStatus?, properties: [String: WidgetPropertyValue]) {
        self.device = device
        self.status = status
        self.properties = properties
    }
}

/// What the widget shows: the settings, the has-content flag, the devices and scenes on the widget
/// with their newest known state. A refresh answers `newData` when this differs from what it was at
/// the last `newData` (the system's last snapshot), `noData` when it does not.
public struct WidgetDisplay: Sendable, Hashable {
    /// The version of the settings shown (0: none yet).
    public var settingsVersion: UInt64
    /// The settings object shown, if any.
    public var settings: WidgetJSON?
    /// The has-content flag.
    public var hasContent: Bool
    /// The devices on the widget, in list order (empty until listed).
    public var devices: [WidgetDeviceView]
    /// The scenes on the widget, in list order (empty until listed).
    public var scenes: [WidgetScene]

    /// Creates a display.
    public init(settingsVersion: UInt64, settings: WidgetJSON?, hasContent: Bool, devices: [WidgetDeviceView], scenes: [WidgetScene]) {
        self.settingsVersion = settingsVersion
        self.settings = settings
        self.hasContent = hasContent
        self.devices = devices
        self.scenes = scenes
    }
}

/// The cloud API paths the core calls (docs/widget-mqtt.md).
public enum WidgetAPIPath: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// `{}` → the devices on the widget.
    case queryComponentProduct = "/iotx/ilop/queryComponentProduct"
    /// `{"iotIds":[…]}`: sets which devices are on the widget (host).
    case updateComponentProduct = "/iotx/ilop/updateComponentProduct"
    /// `{"iotId","productKey","query":{…}}` → the device's properties.
    case queryComponentProperty = "/iotx/ilop/queryComponentProperty"
    /// `{"iotId","items":{prop:value}}`: sets properties (widget); a `thing/properties`
    /// notification follows.
    case setProperties = "/thing/properties/set"
    /// `{}` → the scenes on the widget.
    case appWidgetList = "/living/appwidget/list"
    /// `{"catalogId":"0","pageNo","pageSize"}` → a page of the scene catalog (host).
    case sceneQuery = "/living/scene/query"
    /// `{"sceneIds":[…]}`: sets which scenes are on the widget (host).
    case appWidgetCreate = "/living/appwidget/create"
    /// `{"sceneId"}`: runs a scene (widget); notifications follow.
    case sceneFire = "/scene/fire"

    /// The path.
    public var description: String { rawValue }
}

/// Who started a cloud request.
public enum WidgetRequestOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The app called the API.
    case app
    /// The core, as part of the refresh round started by this refresh.
    case refresh(WidgetRefreshID)
    /// The core, to catch up after the connection came back.
    case reconnect

    /// `app`, `refresh 3`, `reconnect`.
    public var description: String {
        switch self {
        case .app: "app"
        case .refresh(let id): "\(id)"
        case .reconnect: "reconnect"
        }
    }
}

/// A successful response (code 200), decoded for its path.
public enum WidgetResponse: Sendable, Hashable {
    /// `queryComponentProduct`: the devices on the widget.
    case devices([WidgetDevice])
    /// `appwidget/list`: the scenes on the widget.
    case scenes([WidgetScene])
    /// `scene/query`: a page of the catalog.
    case scenePage(WidgetScenePage)
    /// `queryComponentProperty`: the device's properties as shown after the read was merged (a
    /// value older than one already shown is not taken, so this never goes back; a value a pending
    /// property set is changing waits for the set's response).
    case properties(iotId: String, [String: WidgetPropertyValue])
    /// `updateComponentProduct`, `appwidget/create`, `thing/properties/set`: the cloud accepted it.
    case accepted
    /// `scene/fire`: the scene ran; devices it skipped (offline), when the cloud says.
    case sceneFired(skipped: [String])
}

/// Why a cloud request failed. Each request gets exactly one result: ``WidgetEvent/requestSucceeded(_:_:)``
/// or ``WidgetEvent/requestFailed(_:_:)``.
public enum WidgetRequestFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The cloud answered with a code other than 200: 400 bad request, 404 not found, 9201 device
    /// offline, or another.
    case cloud(code: Int, message: String)
    /// No response within ``WidgetConfiguration/requestTimeout``.
    case timedOut
    /// The connection dropped after the request was published: its outcome is unknown (a property
    /// set may still take effect; its notification then shows it).
    case connectionLost
    /// The app stopped the connection (``WidgetCore/stopConnection(now:)``).
    case connectionStopped
    /// The response's data does not have the shape its path returns (a violation is reported too).
    case malformedResponse(String)

    /// The cloud's "device offline" code.
    public static let deviceOfflineCode = 9201

    /// The failure's name, as a trace writes it: `cloud`, `timed_out`, `connection_lost`,
    /// `connection_stopped`, `malformed_response`.
    public var name: String {
        switch self {
        case .cloud: "cloud"
        case .timedOut: "timed_out"
        case .connectionLost: "connection_lost"
        case .connectionStopped: "connection_stopped"
        case .malformedResponse: "malformed_response"
        }
    }

    /// `cloud 9201 device offline`, `timed_out`, …
    public var description: String {
        switch self {
        case let .cloud(code, message): "cloud \(code) \(message)"
        case .malformedResponse(let detail): "malformed_response: \(detail)"
        default: name
        }
    }
}

/// Why a response was dropped without a result (it is not a violation: MQTT and restarts make them).
public enum WidgetIgnoredResponse: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The request already had its result from an earlier copy (QoS 1 redelivery).
    case duplicate
    /// The request had already failed (timed out, connection lost or stopped): a late response.
    case afterFailure = "after_failure"
    /// The id belongs to an earlier process of the same client (another incarnation).
    case otherIncarnation = "other_incarnation"

    /// The raw value.
    public var description: String { rawValue }
}

/// The result of one refresh request (`NCUpdateResult`, plus the overrun the system sees).
public enum WidgetRefreshResult: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// What the widget shows changed since the last snapshot (`NCUpdateResultNewData`).
    case newData = "new_data"
    /// Nothing the widget shows changed (`NCUpdateResultNoData`).
    case noData = "no_data"
    /// A request of the refresh failed (`NCUpdateResultFailed`).
    case failed
    /// The work did not finish within the budget; no other result follows for this refresh.
    case overrun

    /// The raw value.
    public var description: String { rawValue }
}

/// An open-host-app request as the host receives it.
public struct WidgetOpenURLRequest: Sendable, Hashable {
    /// The request's id (answer with ``WidgetCore/didOpenURL(_:opened:now:)``).
    public var id: WidgetOpenURLID
    /// The URL to open the host app with, e.g. `traffic://region`.
    public var url: String

    /// Creates a request.
    public init(id: WidgetOpenURLID, url: String) {
        self.id = id
        self.url = url
    }
}

/// A wait of the core that ran out.
public enum WidgetTimer: Sendable, Hashable, CustomStringConvertible {
    /// A cloud request had no response within ``WidgetConfiguration/requestTimeout``.
    case request(WidgetRequestID)
    /// A refresh's budget ran out before its work finished.
    case refreshBudget(WidgetRefreshID)
    /// The host did not answer an open-host-app request within ``WidgetConfiguration/openURLTimeout``.
    case openURL(WidgetOpenURLID)
    /// The wait before reconnection attempt `attempt` (from 1) ended.
    case reconnect(attempt: Int)

    /// `request 9f3a01c2-3`, `refresh-budget refresh 2`, `open-url 9f3a01c2-4`, `reconnect #1`.
    public var description: String {
        switch self {
        case .request(let id): "\(id)"
        case .refreshBudget(let id): "refresh-budget \(id)"
        case .openURL(let id): "\(id)"
        case .reconnect(let attempt): "reconnect #\(attempt)"
        }
    }
}

/// What the other process, the cloud or the host did wrong. The core drops what it cannot use and
/// carries on.
public enum WidgetViolationKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// A container file of the layout that does not parse or has the wrong shape (e.g. half
    /// written: the writer did not write atomically). The previous value is kept.
    case malformedFile = "malformed-file"
    /// A container file with the version already shown but other content. The shown one is kept.
    case conflictingFile = "conflicting-file"
    /// The host's settings or has-content file was deleted; the widget keeps what it shows.
    case fileRemoved = "file-removed"
    /// An MQTT payload that is not JSON or lacks what its topic carries.
    case malformedMessage = "malformed-message"
    /// A message on a topic the core did not subscribe to.
    case unexpectedTopic = "unexpected-topic"
    /// A response whose id this process never issued.
    case unknownResponseID = "unknown-response-id"
    /// A status notification whose value is neither 1 (online) nor 3 (offline).
    case unknownStatusValue = "unknown-status-value"
    /// A message reported while the connection is not up (a host bug).
    case messageWhileDisconnected = "message-while-disconnected"
    /// `mqttConnected` or `mqttSubscribed` when the core did not ask to connect or subscribe (a
    /// host bug).
    case unexpectedConnectionEvent = "unexpected-connection-event"
    /// The broker did not grant every topic the core subscribed to; the core disconnects and tries again.
    case subscriptionRefused = "subscription-refused"
}

/// What the app (or a trace) hears. Events come in the order they happen; the host hands them to the
/// app one at a time, in order, never re-entrantly. The widget integration names each in the trace
/// (`WidgetTraceMapping.name(of:)`, docs/trace-format.md).
public enum WidgetEvent: Sendable, Hashable {
    /// Widget: the host's settings changed (a newer version was read whole).
    case settingsChanged(version: UInt64, settings: WidgetJSON)
    /// Host: `updateSettings` was given the settings already written; nothing was written (trace).
    case settingsUnchanged
    /// Widget: the has-content flag changed.
    case hasContentChanged(Bool)
    /// Widget: a container file older than the version shown (or a duplicate of an older write
    /// seen late) was ignored (trace).
    case staleFileIgnored(name: String, version: UInt64, shownVersion: UInt64)
    /// Host: the widget asks for the host app to be opened with a URL; answer with
    /// ``WidgetCore/didOpenURL(_:opened:now:)``. Once per request.
    case openURLRequested(WidgetOpenURLRequest)
    /// Widget: the completion of ``WidgetCore/openHostApp(url:now:)``; exactly once per request.
    case openURLCompleted(WidgetOpenURLID, opened: Bool)
    /// Widget: the host's answer to a request nobody waits for any more (timed out, or made by an
    /// earlier widget process) was removed (trace).
    case openURLResultDiscarded(WidgetOpenURLID, opened: Bool)
    /// Widget: the system asked for a refresh (`widgetPerformUpdate`) with this budget (trace).
    case refreshStarted(WidgetRefreshID, budget: Duration)
    /// Widget: the refresh's one result.
    case refreshCompleted(WidgetRefreshID, WidgetRefreshResult)
    /// The MQTT connection's state changed.
    case connectionStateChanged(WidgetConnectionState)
    /// A cloud request was made (by the app or by the core; trace). Exactly one of
    /// ``requestSucceeded(_:_:)`` or ``requestFailed(_:_:)`` follows.
    case requestIssued(WidgetRequestID, path: WidgetAPIPath, origin: WidgetRequestOrigin)
    /// A cloud request's response came with code 200.
    case requestSucceeded(WidgetRequestID, WidgetResponse)
    /// A cloud request failed.
    case requestFailed(WidgetRequestID, WidgetRequestFailure)
    /// A response that needs no result was dropped: a duplicate, late, or of an earlier process (trace).
    case responseIgnored(WidgetRequestID, WidgetIgnoredResponse)
    /// The devices on the widget changed (a device list differed from the last).
    case widgetDevicesChanged([WidgetDevice])
    /// The scenes on the widget changed.
    case widgetScenesChanged([WidgetScene])
    /// Newer values of a device's properties are shown (from a notification or a read): only the
    /// properties that changed.
    case devicePropertiesChanged(iotId: String, [String: WidgetPropertyValue])
    /// A device's status shown changed.
    case deviceStatusChanged(iotId: String, WidgetDeviceStatus)
    /// An update not newer than what is shown was not taken: `property` is `nil` for a status
    /// (trace).
    case staleUpdateIgnored(iotId: String, property: String?, time: Int64, shownTime: Int64)
    /// Values of properties a published property set is changing arrived (in a notification or a
    /// read) before the set's response; they are held until that response or the set's failure, so
    /// the app hears response, then change (trace).
    case updateHeld(iotId: String, behind: WidgetRequestID)
    /// A wait ran out at `deadline`; what it caused follows as its own events.
    case timeout(WidgetTimer, deadline: Duration)
    /// The other process, the cloud or the host misbehaved; the core dropped what it could not use.
    case violation(WidgetViolationKind, detail: String)
}

/// What the host must do after a call, in order.
public enum WidgetAction: Sendable, Hashable {
    /// Write `bytes` as the container file `name`, atomically: write a temporary file in the same
    /// folder whose name starts with `.`, then rename it over `name`. A reader never sees part of it.
    case writeFile(name: String, bytes: [UInt8])
    /// Delete the container file `name` (a missing file is not an error).
    case removeFile(name: String)
    /// Hand to the app.
    case event(WidgetEvent)
    /// Open the MQTT connection with a clean session as `clientID`; report ``WidgetCore/mqttConnected(now:)``
    /// or ``WidgetCore/mqttDisconnected(now:)``.
    case mqttConnect(clientID: String)
    /// Subscribe to `topics` at QoS 1; report the granted ones with ``WidgetCore/mqttSubscribed(topics:now:)``.
    case mqttSubscribe(topics: [String])
    /// Publish `payload` to `topic` (not retained).
    case mqttPublish(topic: String, payload: [UInt8], qos: WidgetMQTTQoS)
    /// Close the connection; report nothing more from it.
    case mqttDisconnect
}
