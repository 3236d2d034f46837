import TetherTestSupport
@testable import WidgetCore

let account = "acct1"
let testConfiguration = WidgetConfiguration(account: account)
let topics = WidgetTopics(account: account)

/// A core of `role` with the test account, from a seeded source, rebuilt from `files`.
func makeCore(_ role: WidgetRole, files: [String: [UInt8]] = [:], seed: UInt64 = 7,
              configuration: WidgetConfiguration = testConfiguration) -> WidgetCore {
    try! WidgetCore(role: role, configuration: configuration, randomSource: SeededWidgetRandom(seed: seed), restoring: files)
}

/// A core whose connection is up and subscribed at `now`.
func connectedCore(_ role: WidgetRole, at now: Duration = .zero, files: [String: [UInt8]] = [:],
                   configuration: WidgetConfiguration = testConfiguration) -> WidgetCore {
    var core = makeCore(role, files: files, configuration: configuration)
    _ = core.startConnection(now: now)
    _ = core.mqttConnected(now: now)
    _ = core.mqttSubscribed(topics: core.subscriptionTopicsForTests, now: now)
    precondition(core.connectionState == .connected)
    return core
}

extension WidgetCore {
    var subscriptionTopicsForTests: [String] { subscriptionTopics }
}

func events(_ actions: [WidgetAction]) -> [WidgetEvent] {
    actions.compactMap { if case .event(let event) = $0 { event } else { nil } }
}

func violations(_ actions: [WidgetAction]) -> [WidgetViolationKind] {
    events(actions).compactMap { if case .violation(let kind, _) = $0 { kind } else { nil } }
}

/// The request a call published: its topic, QoS and decoded payload.
struct PublishedRequest {
    var topic: String
    var qos: WidgetMQTTQoS
    var id: String
    var path: String
    var params: WidgetJSON
    var payload: [UInt8]
}

func publishedRequests(_ actions: [WidgetAction]) -> [PublishedRequest] {
    actions.compactMap { action in
        guard case let .mqttPublish(topic, payload, qos) = action, let json = try? WidgetJSON.parse(payload),
              let id = json["id"]?.stringValue, let path = json["path"]?.stringValue, let params = json["params"] else { return nil }
        return PublishedRequest(topic: topic, qos: qos, id: id, path: path, params: params, payload: payload)
    }
}

/// A response payload.
func responsePayload(_ id: String, code: Int = 200, message: String = "success", data: WidgetJSON = .null) -> [UInt8] {
    WidgetJSON.object(["id": .string(id), "code": .int(Int64(code)), "message": .string(message), "data": data]).encoded()
}

/// A properties notification payload.
func propertiesPayload(_ iotId: String, _ items: [String: (WidgetJSON, Int64)]) -> [UInt8] {
    WidgetJSON.object(["iotId": .string(iotId), "items": .object(items.mapValues { ["value": $0.0, "time": .int($0.1)] })]).encoded()
}

/// A status notification payload.
func statusPayload(_ iotId: String, _ value: Int64, time: Int64) -> [UInt8] {
    WidgetJSON.object(["iotId": .string(iotId), "status": ["value": .int(value), "time": .int(time)]]).encoded()
}

extension WidgetCore {
    /// Feeds a response to this client.
    mutating func respond(_ id: String, code: Int = 200, message: String = "success", data: WidgetJSON = .null, now: Duration) -> [WidgetAction] {
        mqttMessageReceived(topic: topics.response(clientID: clientID), payload: responsePayload(id, code: code, message: message, data: data), now: now)
    }

    mutating func notifyProperties(_ iotId: String, _ items: [String: (WidgetJSON, Int64)], now: Duration) -> [WidgetAction] {
        mqttMessageReceived(topic: topics.properties, payload: propertiesPayload(iotId, items), now: now)
    }

    mutating func notifyStatus(_ iotId: String, _ value: Int64, time: Int64, now: Duration) -> [WidgetAction] {
        mqttMessageReceived(topic: topics.status, payload: statusPayload(iotId, value, time: time), now: now)
    }
}

/// A device list entry as the cloud sends it.
func deviceJSON(_ iotId: String, status: Int64 = 1, productKey: String = "pk1") -> WidgetJSON {
    ["iotId": .string(iotId), "productKey": .string(productKey), "deviceName": .string("name-\(iotId)"), "nickName": .string("Lamp \(iotId)"), "status": .int(status)]
}

/// The files a list of actions leaves in a container that held `files`.
func applyFiles(_ actions: [WidgetAction], to files: inout [String: [UInt8]]) {
    for action in actions {
        switch action {
        case let .writeFile(name, bytes): files[name] = bytes
        case .removeFile(let name): files[name] = nil
        default: break
        }
    }
}

// MARK: - The seeded world: two processes, a container, a broker and a cloud

/// How the world misbehaves.
struct WorldFaults {
    /// Chance a QoS 0 message is lost.
    var loss = 0.0
    /// Chance a QoS 1 message is delivered twice (redelivery).
    var duplication = 0.0
    var latency: Duration = .milliseconds(5)
    /// Extra delay per message, uniform in 0..<jitter: messages overtake each other.
    var jitter: Duration = .zero
    /// Mean time between connection drops (`nil`: none).
    var dropEvery: Duration?
    /// Chance a connection attempt is refused.
    var connectFailure = 0.0
    /// Container change notifications: delay and jitter (a notification pending for a name
    /// absorbs later changes of it: coalesced).
    var containerDelay: Duration = .milliseconds(2)
    var containerJitter: Duration = .zero
    /// Chance a container write is torn: a prefix is visible (and notified) before the whole.
    var tornWrites = 0.0
    /// The cloud's processing time, uniform in 0..<cloudDelay; with `lateAnswers` chance, past the
    /// request timeout.
    var cloudDelay: Duration = .milliseconds(20)
    var lateAnswers = 0.0
    /// Chance the cloud publishes a set's notification before its response.
    var notificationFirst = 0.0
    /// The QoS the cloud publishes with.
    var cloudQoS: WidgetMQTTQoS = .atLeastOnce

    static let rough = WorldFaults(duplication: 0.1, jitter: .milliseconds(30), dropEvery: .seconds(4), connectFailure: 0.15,
                                   containerDelay: .microseconds(500), containerJitter: .milliseconds(8), tornWrites: 0.3,
                                   cloudDelay: .milliseconds(60), lateAnswers: 0.05, notificationFirst: 0.5)
}

extension Duration {
    var nanos: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

    mutating func delay(_ upTo: Duration) -> Duration {
        upTo > .zero ? .nanoseconds(Int64(next() % UInt64(upTo.nanos))) : .zero
    }
}

/// One process of the pair: its core and everything its app heard.
struct Side {
    var role: WidgetRole
    var core: WidgetCore
    /// Every event of every incarnation, in order, with its time and incarnation.
    var events: [(time: Duration, incarnation: UInt32, event: WidgetEvent)] = []
    var incarnations: [UInt32] = []
    var subscribeActions = 0

    var appEvents: [WidgetEvent] { events.map(\.event) }
}

/// The simulated cloud's device.
struct CloudDevice {
    var iotId: String
    var productKey: String
    var online = true
    var statusTime: Int64 = 0
    var properties: [String: (value: WidgetJSON, time: Int64)] = [:]
}

/// What the world does at a time.
enum Happening {
    case notify(WidgetRole, name: String)
    case completeTornWrite(name: String, bytes: [UInt8], token: Int)
    case deliverToClient(WidgetRole, generation: Int, Delivery)
    case deliverToCloud(clientID: String, payload: [UInt8])
    case cloudAnswer(clientID: String, request: WidgetJSON)
    case drop
    case cloudActivity
    case hostAnswers(WidgetOpenURLID)
}

enum Delivery {
    case connack(accepted: Bool)
    case suback([String])
    case message(topic: String, payload: [UInt8])
}

struct Scheduled {
    var at: Duration
    var order: Int
    var what: Happening
}

/// A host core and a widget core wired through an in-memory App Group container, an in-memory
/// MQTT broker and a small fake cloud; time jumps to the next happening or deadline. Seeded: the
/// same seed gives the same run.
struct WidgetWorld {
    var now: Duration = .zero
    var rng: SplitMix64
    var faults: WorldFaults
    var configuration: WidgetConfiguration
    var host: Side
    var widget: Side
    var files: [String: [UInt8]] = [:]
    /// Names with a change notification pending, per reader (coalescing).
    var pendingNotifications: Set<String> = []
    /// The newest write per name, so a torn write completes only if nothing replaced it.
    var writeTokens: [String: Int] = [:]
    var scheduled: [Scheduled] = []
    var order = 0
    var coreSeed: UInt64
    // The broker.
    var generation: [WidgetRole: Int] = [.host: 0, .widget: 0]
    var open: [WidgetRole: Bool] = [.host: false, .widget: false]
    var subscriptions: [WidgetRole: Set<String>] = [.host: [], .widget: []]
    var drops = 0
    var dropsEnabled = true
    // The cloud.
    var devices: [String: CloudDevice] = [:]
    var deviceOrder: [String] = []
    var widgetDeviceIDs: [String] = []
    var scenes: [(id: String, name: String, actions: [(iotId: String, property: String, value: WidgetJSON)])] = []
    var widgetSceneIDs: [String] = []
    var cloudActive = true
    var lastCloudTime: Int64 = 0
    /// Per property set request id: the notification time the cloud gave its change.
    var setNotificationTimes: [String: Int64] = [:]
    // The host app's log.
    var settingsWritten: [UInt64: WidgetJSON] = [:]
    var hostAnswersURLs = true

    init(seed: UInt64, faults: WorldFaults, configuration: WidgetConfiguration = testConfiguration) {
        rng = SplitMix64(seed: seed)
        self.faults = faults
        self.configuration = configuration
        coreSeed = seed &* 31 &+ 7
        host = Side(role: .host, core: try! WidgetCore(role: .host, configuration: configuration, randomSource: SeededWidgetRandom(seed: coreSeed)))
        widget = Side(role: .widget, core: try! WidgetCore(role: .widget, configuration: configuration, randomSource: SeededWidgetRandom(seed: coreSeed &+ 1)))
        host.incarnations = [host.core.incarnation]
        widget.incarnations = [widget.core.incarnation]
        for (index, id) in ["dev-a", "dev-b", "dev-c"].enumerated() {
            var device = CloudDevice(iotId: id, productKey: "pk\(index)")
            device.properties = ["powerstate": (.int(0), 1), "brightness": (.int(50), 1)]
            devices[id] = device
            deviceOrder.append(id)
        }
        widgetDeviceIDs = ["dev-a", "dev-b"]
        scenes = [
            ("scene-1", "All on", [("dev-a", "powerstate", .int(1)), ("dev-b", "powerstate", .int(1))]),
            ("scene-2", "Dim", [("dev-b", "brightness", .int(10)), ("dev-c", "brightness", .int(10))]),
        ]
        widgetSceneIDs = ["scene-1"]
        if let every = faults.dropEvery { schedule(.drop, after: rng.delay(every * 2)) }
        schedule(.cloudActivity, after: .milliseconds(200))
        act(.host) { core, now in core.startConnection(now: now) }
        act(.widget) { core, now in core.startConnection(now: now) }
    }

    subscript(role: WidgetRole) -> Side {
        get { role == .host ? host : widget }
        set { if role == .host { host = newValue } else { widget = newValue } }
    }

    mutating func schedule(_ what: Happening, after delay: Duration) {
        order += 1
        scheduled.append(Scheduled(at: now + delay, order: order, what: what))
    }

    // MARK: Driving the cores

    /// Calls a core API that returns only actions and carries them out.
    mutating func act(_ role: WidgetRole, _ body: (inout WidgetCore, Duration) -> [WidgetAction]) {
        var core = self[role].core
        let actions = body(&core, now)
        self[role].core = core
        apply(actions, from: role)
    }

    /// Calls a throwing API returning a value; nil when it refused.
    @discardableResult
    mutating func call<T>(_ role: WidgetRole, _ body: (inout WidgetCore, Duration) throws(WidgetError) -> (T, [WidgetAction])) -> T? {
        var core = self[role].core
        guard let (value, actions) = try? body(&core, now) else { return nil }
        self[role].core = core
        apply(actions, from: role)
        return value
    }

    mutating func apply(_ actions: [WidgetAction], from role: WidgetRole) {
        var reactions: [WidgetEvent] = []
        for action in actions {
            switch action {
            case let .writeFile(name, bytes):
                write(name, bytes)
            case .removeFile(let name):
                files[name] = nil
                writeTokens[name, default: 0] += 1
                notifyBoth(name)
            case .event(let event):
                self[role].events.append((now, self[role].core.incarnation, event))
                reactions.append(event)
            case .mqttConnect:
                generation[role, default: 0] += 1
                open[role] = true
                subscriptions[role] = []
                let accepted = !rng.chance(faults.connectFailure)
                schedule(.deliverToClient(role, generation: generation[role]!, .connack(accepted: accepted)), after: faults.latency + rng.delay(faults.jitter))
            case .mqttSubscribe(let topics):
                self[role].subscribeActions += 1
                subscriptions[role, default: []].formUnion(topics)
                schedule(.deliverToClient(role, generation: generation[role]!, .suback(topics)), after: faults.latency + rng.delay(faults.jitter))
            case let .mqttPublish(_, payload, qos):
                guard open[role] == true else { continue }
                for _ in 0..<copies(qos) {
                    schedule(.deliverToCloud(clientID: self[role].core.clientID, payload: payload), after: faults.latency + rng.delay(faults.jitter))
                }
            case .mqttDisconnect:
                generation[role, default: 0] += 1
                open[role] = false
                subscriptions[role] = []
            }
        }
        for event in reactions { react(role, to: event) }
    }

    /// How many copies of a message the network delivers.
    mutating func copies(_ qos: WidgetMQTTQoS) -> Int {
        switch qos {
        case .atMostOnce: rng.chance(faults.loss) ? 0 : 1
        case .atLeastOnce: rng.chance(faults.duplication) ? 2 : 1
        }
    }

    /// The apps' own reactions: the host app answers open-URL requests; the widget app lists its
    /// devices again when the host's settings say the list changed.
    mutating func react(_ role: WidgetRole, to event: WidgetEvent) {
        switch (role, event) {
        case (.host, .openURLRequested(let request)) where hostAnswersURLs:
            schedule(.hostAnswers(request.id), after: rng.delay(.milliseconds(200)))
        case (.widget, .settingsChanged(_, let settings)) where settings["devicesRevision"] != nil:
            call(.widget) { core, now throws(WidgetError) in try core.listWidgetDevices(now: now) }
        default:
            break
        }
    }

    // MARK: The container

    mutating func write(_ name: String, _ bytes: [UInt8]) {
        writeTokens[name, default: 0] += 1
        if bytes.count > 2, rng.chance(faults.tornWrites) {
            files[name] = Array(bytes.prefix(1 + rng.below(bytes.count - 1)))
            notifyBoth(name)
            order += 1
            scheduled.append(Scheduled(at: now + .milliseconds(1) + rng.delay(.milliseconds(10)), order: order,
                                       what: .completeTornWrite(name: name, bytes: bytes, token: writeTokens[name]!)))
        } else {
            files[name] = bytes
            notifyBoth(name)
        }
    }

    mutating func notifyBoth(_ name: String) {
        for role in [WidgetRole.host, .widget] {
            let key = "\(role)/\(name)"
            guard !pendingNotifications.contains(key) else { continue } // coalesced
            pendingNotifications.insert(key)
            schedule(.notify(role, name: name), after: faults.containerDelay + rng.delay(faults.containerJitter))
        }
    }

    // MARK: Time

    var nextTime: Duration? {
        [scheduled.map(\.at).min(), host.core.nextDeadline, widget.core.nextDeadline].compactMap { $0 }.min()
    }

    /// Jumps to the next happening or deadline and handles everything due then.
    @discardableResult
    mutating func step() -> Bool {
        guard let time = nextTime else { return false }
        now = max(now, time)
        while let index = scheduled.indices.filter({ scheduled[$0].at <= now }).min(by: { (scheduled[$0].at, scheduled[$0].order) < (scheduled[$1].at, scheduled[$1].order) }) {
            let item = scheduled.remove(at: index)
            happen(item.what)
        }
        act(.host) { core, now in core.handleTimeout(now: now) }
        act(.widget) { core, now in core.handleTimeout(now: now) }
        return true
    }

    mutating func run(until time: Duration) {
        while let next = nextTime, next <= time { step() }
        now = max(now, time)
    }

    /// Steps until nothing is left or `limit` has passed.
    mutating func settle(limit: Duration = .seconds(120)) {
        let end = now + limit
        while let time = nextTime, time <= end { step() }
    }

    mutating func happen(_ what: Happening) {
        switch what {
        case let .notify(role, name):
            pendingNotifications.remove("\(role)/\(name)")
            let bytes = files[name]
            act(role) { core, now in core.containerChanged(name: name, bytes: bytes, now: now) }
        case let .completeTornWrite(name, bytes, token):
            guard writeTokens[name] == token else { return }
            files[name] = bytes
            notifyBoth(name)
        case let .deliverToClient(role, gen, delivery):
            guard generation[role] == gen, open[role] == true else { return }
            switch delivery {
            case .connack(let accepted):
                if accepted {
                    act(role) { core, now in core.mqttConnected(now: now) }
                } else {
                    open[role] = false
                    act(role) { core, now in core.mqttDisconnected(now: now) }
                }
            case .suback(let topics):
                act(role) { core, now in core.mqttSubscribed(topics: topics, now: now) }
            case let .message(topic, payload):
                act(role) { core, now in core.mqttMessageReceived(topic: topic, payload: payload, now: now) }
            }
        case let .deliverToCloud(clientID, payload):
            guard let request = try? WidgetJSON.parse(payload) else { return }
            var delay = rng.delay(faults.cloudDelay)
            if rng.chance(faults.lateAnswers) { delay += configuration.requestTimeout }
            schedule(.cloudAnswer(clientID: clientID, request: request), after: delay)
        case let .cloudAnswer(clientID, request):
            answer(clientID: clientID, request: request)
        case .drop:
            if dropsEnabled {
                let role: WidgetRole = rng.chance(0.5) ? .host : .widget
                if open[role] == true {
                    drops += 1
                    generation[role, default: 0] += 1
                    open[role] = false
                    subscriptions[role] = []
                    act(role) { core, now in core.mqttDisconnected(now: now) }
                }
                if let every = faults.dropEvery { schedule(.drop, after: every / 2 + rng.delay(every)) }
            }
        case .cloudActivity:
            guard cloudActive else { return }
            let iotId = deviceOrder[rng.below(deviceOrder.count)]
            if rng.chance(0.25) {
                setStatus(iotId, online: !(devices[iotId]!.online))
            } else {
                let property = rng.chance(0.5) ? "powerstate" : "brightness"
                change(iotId, [property: .int(Int64(rng.below(100)))], requestID: nil)
            }
            schedule(.cloudActivity, after: .milliseconds(100) + rng.delay(.milliseconds(400)))
        case .hostAnswers(let id):
            call(.host) { core, now throws(WidgetError) in ((), try core.didOpenURL(id, opened: true, now: now)) }
        }
    }

    // MARK: The cloud

    /// The cloud's next time in ms: after the clock and after every time it gave before.
    mutating func cloudTime() -> Int64 {
        lastCloudTime = max(lastCloudTime + 1, 1_700_000_000_000 + now.nanos / 1_000_000)
        return lastCloudTime
    }

    mutating func publish(_ topic: String, _ payload: [UInt8]) {
        for role in [WidgetRole.host, .widget] where open[role] == true && subscriptions[role, default: []].contains(topic) {
            for _ in 0..<copies(faults.cloudQoS) {
                schedule(.deliverToClient(role, generation: generation[role]!, .message(topic: topic, payload: payload)),
                         after: faults.latency + rng.delay(faults.jitter))
            }
        }
    }

    mutating func change(_ iotId: String, _ items: [String: WidgetJSON], requestID: String?) {
        let time = cloudTime()
        for (name, value) in items { devices[iotId]!.properties[name] = (value, time) }
        if let requestID { setNotificationTimes[requestID] = time }
        publish(topics.properties, propertiesPayload(iotId, items.mapValues { ($0, time) }))
    }

    mutating func setStatus(_ iotId: String, online: Bool) {
        let time = cloudTime()
        devices[iotId]!.online = online
        devices[iotId]!.statusTime = time
        publish(topics.status, statusPayload(iotId, online ? 1 : 3, time: time))
    }

    func deviceListJSON() -> WidgetJSON {
        .array(widgetDeviceIDs.map { id in
            let device = devices[id]!
            return deviceJSON(id, status: device.online ? 1 : 3, productKey: device.productKey)
        })
    }

    mutating func answer(clientID: String, request: WidgetJSON) {
        guard let id = request["id"]?.stringValue, let path = request["path"]?.stringValue, let params = request["params"] else { return }
        let responseTopic = topics.response(clientID: clientID)
        func respond(_ world: inout WidgetWorld, code: Int = 200, data: WidgetJSON = .null) {
            world.publish(responseTopic, responsePayload(id, code: code, message: code == 200 ? "success" : "error \(code)", data: data))
        }
        switch path {
        case WidgetAPIPath.queryComponentProduct.rawValue:
            respond(&self, data: deviceListJSON())
        case WidgetAPIPath.updateComponentProduct.rawValue:
            guard let ids = params["iotIds"]?.arrayValue?.compactMap(\.stringValue), ids.allSatisfy({ devices[$0] != nil }) else {
                return respond(&self, code: 404)
            }
            widgetDeviceIDs = ids
            respond(&self)
        case WidgetAPIPath.queryComponentProperty.rawValue:
            guard let iotId = params["iotId"]?.stringValue, let device = devices[iotId] else { return respond(&self, code: 404) }
            respond(&self, data: ["iotId": .string(iotId), "items": .object(device.properties.mapValues { ["value": $0.value, "time": .int($0.time)] })])
        case WidgetAPIPath.setProperties.rawValue:
            guard let iotId = params["iotId"]?.stringValue, let items = params["items"]?.objectValue else { return respond(&self, code: 400) }
            guard let device = devices[iotId] else { return respond(&self, code: 404) }
            guard device.online else { return respond(&self, code: WidgetRequestFailure.deviceOfflineCode) }
            if rng.chance(faults.notificationFirst) {
                change(iotId, items, requestID: id)
                respond(&self)
            } else {
                respond(&self)
                change(iotId, items, requestID: id)
            }
        case WidgetAPIPath.appWidgetList.rawValue:
            respond(&self, data: .array(widgetSceneIDs.compactMap { sceneID in
                scenes.first { $0.id == sceneID }.map { ["sceneId": .string($0.id), "name": .string($0.name)] }
            }))
        case WidgetAPIPath.sceneQuery.rawValue:
            respond(&self, data: ["total": .int(Int64(scenes.count)), "pageNo": 1, "pageSize": 20,
                                  "data": .array(scenes.map { ["sceneId": .string($0.id), "name": .string($0.name), "enable": true] })])
        case WidgetAPIPath.appWidgetCreate.rawValue:
            guard let ids = params["sceneIds"]?.arrayValue?.compactMap(\.stringValue) else { return respond(&self, code: 400) }
            widgetSceneIDs = ids
            respond(&self)
        case WidgetAPIPath.sceneFire.rawValue:
            guard let sceneID = params["sceneId"]?.stringValue, let scene = scenes.first(where: { $0.id == sceneID }) else {
                return respond(&self, code: 404)
            }
            let skipped = scene.actions.filter { devices[$0.iotId]?.online != true }.map(\.iotId)
            respond(&self, data: ["skipped": .array(skipped.map(WidgetJSON.string))])
            for action in scene.actions where !skipped.contains(action.iotId) {
                change(action.iotId, [action.property: action.value], requestID: nil)
            }
        default:
            respond(&self, code: 400)
        }
    }

    // MARK: Restarts

    /// The process of `role` dies and starts again: a new core (new incarnation) rebuilt from the
    /// container's files; its connection is gone; it starts the connection again.
    mutating func restart(_ role: WidgetRole) {
        coreSeed &+= 1000
        generation[role, default: 0] += 1
        open[role] = false
        subscriptions[role] = []
        self[role].core = try! WidgetCore(role: role, configuration: configuration, randomSource: SeededWidgetRandom(seed: coreSeed), restoring: files)
        self[role].incarnations.append(self[role].core.incarnation)
        act(role) { core, now in core.startConnection(now: now) }
    }

    // MARK: What the apps saw

    /// Per incarnation, the request ids issued and the results each got.
    func requestOutcomes(_ role: WidgetRole) -> (issued: [String: UInt32], results: [String: Int]) {
        var issued: [String: UInt32] = [:]
        var results: [String: Int] = [:]
        for (_, incarnation, event) in self[role].events {
            switch event {
            case .requestIssued(let id, _, _): issued[id.rawValue] = incarnation
            case .requestSucceeded(let id, _), .requestFailed(let id, _): results[id.rawValue, default: 0] += 1
            default: break
            }
        }
        return (issued, results)
    }
}
