import Testing
import TetherTestSupport
@testable import WidgetCore

// Fingerprints of everything WidgetCore says over many seeded input schedules, so a change to how
// the core keeps its state (not what it does) can be shown to change no output at all. The digests
// below were recorded on the core as it was BEFORE its state was reshaped (the connection phase
// carrying its reconnection attempt and catch-up need, issue "state that cannot contradict
// itself"); they must not change. A change of behaviour that is meant must come with a new
// recording and say so; a reshaping must leave them as they are.

/// A deterministic rendering of any value, by reflection: dictionaries and sets are rendered with
/// their elements sorted (their iteration order follows the per-process hash seed), everything
/// else in declaration order. Enum cases by name with their payloads.
func canonical(_ value: Any) -> String {
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .optional:
        guard let some = mirror.children.first else { return "nil" }
        return canonical(some.value)
    case .dictionary, .set:
        return "{" + mirror.children.map { canonical($0.value) }.sorted().joined(separator: ",") + "}"
    case .collection:
        return "[" + mirror.children.map { canonical($0.value) }.joined(separator: ",") + "]"
    case .enum:
        guard let payload = mirror.children.first else { return ".\(value)" }
        return "." + (payload.label ?? "?") + "(" + canonical(payload.value) + ")"
    case .tuple, .struct, .class:
        if mirror.children.isEmpty { return "\(type(of: value)):\(value)" }
        return "(" + mirror.children.map { ($0.label ?? "") + ":" + canonical($0.value) }.joined(separator: ",") + ")"
    default:
        if let text = value as? String { return text.debugDescription }
        return "\(value)"
    }
}

/// One seeded schedule driving one core directly: every public input, in and out of turn (the
/// connection's news, responses of every kind, notifications, API calls of both roles, the other
/// process's files, time), each call's actions or error and the core's public state folded in.
struct WidgetScheduleDriver {
    var rng: SplitMix64
    var core: WidgetCore
    var now: Duration = .zero
    var fingerprint = OutputFingerprint()
    /// Published requests not yet answered by this driver (id, path, params), oldest first.
    var published: [(id: String, path: String, params: WidgetJSON)] = []
    /// Every id ever published, for duplicate and late answers.
    var answered: [(id: String, path: String, params: WidgetJSON)] = []
    /// Open-URL ids written by the widget, or seen by the host.
    var openURLIDs: [WidgetOpenURLID] = []
    /// The versions the "host" last wrote, for the widget's reads.
    var fileVersion: UInt64 = 0
    /// Connection state transitions seen (from → to).
    var transitions: Set<String> = []
    var lastState: WidgetConnectionState = .stopped
    var catchUps = 0
    var maxReconnectAttempt = 0
    static let devices = ["dev-a", "dev-b", "dev-c"]

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
        let role: WidgetRole = seed % 2 == 0 ? .host : .widget
        let configuration = WidgetConfiguration(
            account: account,
            requestTimeout: .milliseconds(Int64(200 + seed % 7 * 400)),
            openURLTimeout: .milliseconds(Int64(300 + seed % 5 * 500)),
            reconnectDelay: .milliseconds(Int64(50 + seed % 3 * 100)),
            maximumReconnectDelay: .milliseconds(Int64(400 + seed % 4 * 700)),
            requestQoS: seed % 3 == 0 ? .atMostOnce : .atLeastOnce)
        var files: [String: [UInt8]] = [:]
        var restoreRNG = SplitMix64(seed: seed &* 0x9e37)
        if restoreRNG.chance(0.3) {
            files[WidgetContainerLayout.settingsFile] = restoreRNG.chance(0.8)
                ? ContainerCodec.settings(version: 3, settings: ["restored": true]) : Array("{\"version\":".utf8)
        }
        if restoreRNG.chance(0.3) {
            files[WidgetContainerLayout.hasContentFile] = ContainerCodec.hasContent(version: 2, hasContent: true)
        }
        if restoreRNG.chance(0.3) {
            let id = WidgetOpenURLID(rawValue: "0000abcd-\(restoreRNG.below(9))")
            files[WidgetContainerLayout.openURLRequestFile(id)] = ContainerCodec.openURLRequest(WidgetOpenURLRequest(id: id, url: "x://restored"))
            if restoreRNG.chance(0.5) { files[WidgetContainerLayout.openURLResultFile(id)] = ContainerCodec.openURLResult(id: id, opened: true) }
        }
        if restoreRNG.chance(0.2) { files["open-url-request.bad name!.json"] = [0x7b] }
        if restoreRNG.chance(0.2) { files["open-url-result.bad name!.json"] = [0x7b] }
        core = try! WidgetCore(role: role, configuration: configuration, randomSource: SeededWidgetRandom(seed: seed &+ 11), restoring: files)
        fingerprint.add("init \(role) \(core.incarnation) \(canonical(core.display)) \(String(describing: core.nextDeadline))")
    }

    /// Folds one call's result and the core's public state after it.
    mutating func record(_ label: String, _ actions: [WidgetAction]) {
        fingerprint.add(label)
        for action in actions {
            fingerprint.add(canonical(action))
            switch action {
            case .mqttPublish:
                for request in publishedRequests([action]) { published.append((request.id, request.path, request.params)) }
            case .writeFile(let name, _) where name.hasPrefix(WidgetContainerLayout.openURLRequestPrefix):
                if let id = core.pendingOpenURLs.last { openURLIDs.append(id) }
            case .event(.openURLRequested(let request)):
                openURLIDs.append(request.id)
            case .event(.connectionStateChanged(let state)):
                transitions.insert("\(lastState)->\(state)")
                lastState = state
            case .event(.requestIssued(_, _, .reconnect)):
                catchUps += 1
            case .event(.timeout(.reconnect(let attempt), _)):
                maxReconnectAttempt = max(maxReconnectAttempt, attempt)
            default:
                break
            }
        }
        fingerprint.add("state \(core.connectionState) next \(String(describing: core.nextDeadline)) pending \(core.hasPendingWork)")
        fingerprint.add(canonical((core.pendingRequests, core.pendingRefreshes, core.pendingOpenURLs, core.openURLsAwaitingAnswer)))
        fingerprint.add(canonical((core.settingsVersion, core.settings, core.hasContent, core.display)))
    }

    mutating func attempt<T>(_ label: String, _ body: (inout WidgetCore, Duration) throws(WidgetError) -> (T, [WidgetAction])) {
        do {
            let (value, actions) = try body(&core, now)
            record("\(label) -> \(value)", actions)
        } catch {
            fingerprint.add("\(label) threw \(error.code) \(error.detail)")
            record("after refusal", [])
        }
    }

    mutating func act(_ label: String, _ body: (inout WidgetCore, Duration) -> [WidgetAction]) {
        let actions = body(&core, now)
        record(label, actions)
    }

    mutating func pick<T>(_ choices: [T]) -> T { choices[rng.below(choices.count)] }

    /// A response body for a request of `path`: usually what the cloud would send, sometimes not.
    mutating func data(for path: String, params: WidgetJSON) -> WidgetJSON {
        let wrong = rng.chance(0.1)
        switch path {
        case WidgetAPIPath.queryComponentProduct.rawValue:
            if wrong { return ["not": "a list"] }
            let listed = Self.devices.filter { _ in rng.chance(0.6) }
            return .array(listed.map { deviceJSON($0, status: rng.chance(0.8) ? 1 : 3, productKey: "pk-\($0)") })
        case WidgetAPIPath.queryComponentProperty.rawValue:
            let iotId = rng.chance(0.9) ? (params["iotId"]?.stringValue ?? "dev-a") : "dev-other"
            if wrong { return ["iotId": .string(iotId), "items": .array([])] }
            var items: [String: WidgetJSON] = [:]
            for name in ["powerstate", "brightness"] where rng.chance(0.7) {
                items[name] = ["value": .int(Int64(rng.below(3))), "time": .int(Int64(rng.below(6)))]
            }
            return ["iotId": .string(iotId), "items": .object(items)]
        case WidgetAPIPath.appWidgetList.rawValue:
            if wrong { return .array([["sceneId": 1]]) }
            return .array(["s1", "s2", "s3"].filter { _ in rng.chance(0.5) }.map { ["sceneId": .string($0), "name": .string("Scene \($0)")] })
        case WidgetAPIPath.sceneQuery.rawValue:
            if wrong { return ["total": "many"] }
            return ["total": 2, "pageNo": 1, "pageSize": 20, "data": [["sceneId": "s1", "name": "One", "enable": true]]]
        case WidgetAPIPath.sceneFire.rawValue:
            if wrong { return .string("fired") }
            return rng.chance(0.5) ? .null : ["skipped": .array(Self.devices.filter { _ in rng.chance(0.3) }.map(WidgetJSON.string))]
        default:
            return wrong ? .string("unexpected") : .null
        }
    }

    /// The natural next step of the connection, so every phase is reached often.
    mutating func advanceConnection() {
        switch core.connectionState {
        case .stopped: act("start") { core, now in core.startConnection(now: now) }
        case .connecting:
            if rng.chance(0.8) { act("connected") { core, now in core.mqttConnected(now: now) } }
            else { act("connect failed") { core, now in core.mqttDisconnected(now: now) } }
        case .subscribing:
            let topics = core.subscriptionTopicsForTests
            let granted = rng.chance(0.85) ? topics : Array(topics.dropLast())
            act("subscribed \(granted.count)") { core, now in core.mqttSubscribed(topics: granted, now: now) }
        case .connected:
            if rng.chance(0.5) { act("dropped") { core, now in core.mqttDisconnected(now: now) } }
        case .waitingToReconnect:
            if let deadline = core.nextDeadline { now = max(now, deadline) }
            act("reconnect timer") { core, now in core.handleTimeout(now: now) }
        }
    }

    mutating func respond() {
        guard !published.isEmpty || !answered.isEmpty else { return }
        let roll = rng.below(100)
        let clientTopic = topics.response(clientID: core.clientID)
        if roll < 70, !published.isEmpty {
            let request = published.remove(at: rng.chance(0.7) ? 0 : rng.below(published.count))
            answered.append(request)
            let code = rng.chance(0.85) ? 200 : pick([404, 500, WidgetRequestFailure.deviceOfflineCode])
            let body = data(for: request.path, params: request.params)
            act("respond \(request.id) \(code)") { core, now in core.respond(request.id, code: code, data: body, now: now) }
        } else if roll < 80, !answered.isEmpty {
            let request = pick(answered)
            act("respond again \(request.id)") { core, now in core.respond(request.id, data: .null, now: now) }
        } else if roll < 85 {
            act("respond other incarnation") { core, now in core.respond("00000001-5", now: now) }
        } else if roll < 90 {
            let prefix = WidgetCore.idText(incarnation: core.incarnation, sequence: 0).dropLast(1)
            let id = rng.chance(0.5) ? prefix + "x" : prefix + "99999"
            act("respond odd id") { core, now in core.respond(String(id), now: now) }
        } else {
            let payload: [UInt8] = rng.chance(0.5) ? Array("{\"id\":".utf8)
                : (published.first.map { Array("{\"id\":\"\($0.id)\",\"code\":\"x\"}".utf8) } ?? [0x5b])
            act("respond malformed") { core, now in core.mqttMessageReceived(topic: clientTopic, payload: payload, now: now) }
        }
    }

    mutating func notify() {
        let iotId = pick(Self.devices)
        switch rng.below(6) {
        case 0, 1:
            var items: [String: (WidgetJSON, Int64)] = [:]
            for name in ["powerstate", "brightness"] where rng.chance(0.6) { items[name] = (.int(Int64(rng.below(3))), Int64(rng.below(6))) }
            act("notify properties") { core, now in core.notifyProperties(iotId, items, now: now) }
        case 2, 3:
            let value: Int64 = pick([1, 3, 1, 3, 2])
            let time = Int64(rng.below(6))
            act("notify status") { core, now in core.notifyStatus(iotId, value, time: time, now: now) }
        case 4:
            let topic = rng.chance(0.5) ? topics.properties : topics.status
            act("notify malformed") { core, now in core.mqttMessageReceived(topic: topic, payload: Array("{\"iotId\":3}".utf8), now: now) }
        default:
            act("message on another topic") { core, now in core.mqttMessageReceived(topic: "/other/topic", payload: [0x7b, 0x7d], now: now) }
        }
    }

    mutating func callAPI() {
        let iotId = pick(Self.devices)
        switch rng.below(14) {
        case 0: attempt("listWidgetDevices") { core, now throws(WidgetError) in try core.listWidgetDevices(now: now) }
        case 1:
            let ids = rng.chance(0.1) ? ["dev-a", "dev-a"] : Self.devices.filter { _ in rng.chance(0.6) }
            attempt("updateWidgetDevices") { core, now throws(WidgetError) in try core.updateWidgetDevices(ids, now: now) }
        case 2:
            let key = rng.chance(0.1) ? "" : "pk-\(iotId)"
            attempt("queryProperties") { core, now throws(WidgetError) in try core.queryProperties(iotId: iotId, productKey: key, now: now) }
        case 3, 4:
            let items: [String: WidgetJSON] = rng.chance(0.05) ? [:] : [pick(["powerstate", "brightness"]): .int(Int64(rng.below(3)))]
            attempt("setProperties") { core, now throws(WidgetError) in try core.setProperties(iotId: iotId, items, now: now) }
        case 5: attempt("listWidgetScenes") { core, now throws(WidgetError) in try core.listWidgetScenes(now: now) }
        case 6:
            let page = rng.chance(0.1) ? 0 : 1
            attempt("queryScenes") { core, now throws(WidgetError) in try core.queryScenes(pageNo: page, now: now) }
        case 7:
            let ids = rng.chance(0.1) ? [""] : ["s1", "s2"].filter { _ in rng.chance(0.7) }
            attempt("updateWidgetScenes") { core, now throws(WidgetError) in try core.updateWidgetScenes(ids, now: now) }
        case 8:
            let scene = rng.chance(0.1) ? "" : pick(["s1", "s2"])
            attempt("fireScene") { core, now throws(WidgetError) in try core.fireScene(scene, now: now) }
        case 9:
            let settings: WidgetJSON = rng.chance(0.1) ? .int(1) : ["n": .int(Int64(rng.below(4)))]
            attempt("updateSettings") { core, now throws(WidgetError) in ((), try core.updateSettings(settings, now: now)) }
        case 10:
            let flag = rng.chance(0.5)
            attempt("setHasContent") { core, now throws(WidgetError) in ((), try core.setHasContent(flag, now: now)) }
        case 11:
            let id = openURLIDs.isEmpty || rng.chance(0.2) ? WidgetOpenURLID(rawValue: "nobody-1") : pick(openURLIDs)
            let opened = rng.chance(0.8)
            attempt("didOpenURL") { core, now throws(WidgetError) in ((), try core.didOpenURL(id, opened: opened, now: now)) }
        case 12:
            let url = rng.chance(0.1) ? "no scheme" : "traffic://region/\(rng.below(9))"
            attempt("openHostApp") { core, now throws(WidgetError) in try core.openHostApp(url: url, now: now) }
        default:
            let budget: Duration = rng.chance(0.05) ? .zero : .milliseconds(Int64(100 + rng.below(3_000)))
            attempt("refreshRequested") { core, now throws(WidgetError) in try core.refreshRequested(budget: budget, now: now) }
        }
    }

    /// The other process's (or a stranger's) container writes.
    mutating func containerChange() {
        let name: String
        var bytes: [UInt8]?
        switch rng.below(9) {
        case 0, 1:
            name = WidgetContainerLayout.settingsFile
            let version = rng.chance(0.7) ? fileVersion + 1 : UInt64(rng.below(Int(fileVersion) + 2))
            fileVersion = max(fileVersion, version)
            bytes = rng.chance(0.1) ? Array("{\"vers".utf8) : ContainerCodec.settings(version: version, settings: ["n": .int(Int64(rng.below(3)))])
            if rng.chance(0.05) { bytes = nil }
        case 2, 3:
            name = WidgetContainerLayout.hasContentFile
            let version = rng.chance(0.7) ? fileVersion + 1 : UInt64(rng.below(Int(fileVersion) + 2))
            fileVersion = max(fileVersion, version)
            bytes = rng.chance(0.1) ? [0x7b] : ContainerCodec.hasContent(version: version, hasContent: rng.chance(0.5))
            if rng.chance(0.05) { bytes = nil }
        case 4, 5:
            let id = openURLIDs.isEmpty || rng.chance(0.3) ? WidgetOpenURLID(rawValue: "0000beef-\(rng.below(5))") : pick(openURLIDs)
            name = WidgetContainerLayout.openURLRequestFile(id)
            bytes = rng.chance(0.1) ? [0x7b] : ContainerCodec.openURLRequest(WidgetOpenURLRequest(id: id, url: "traffic://x"))
            if rng.chance(0.05) { bytes = nil }
        case 6, 7:
            let id = openURLIDs.isEmpty || rng.chance(0.3) ? WidgetOpenURLID(rawValue: "0000beef-\(rng.below(5))") : pick(openURLIDs)
            name = WidgetContainerLayout.openURLResultFile(id)
            bytes = rng.chance(0.1) ? [0x7b] : ContainerCodec.openURLResult(id: id, opened: rng.chance(0.8))
        default:
            name = pick(["open-url-request.bad name!.json", "open-url-result.!.json", "unrelated.txt"])
            bytes = [0x7b]
        }
        act("container \(name) \(bytes?.count ?? -1)") { core, now in core.containerChanged(name: name, bytes: bytes, now: now) }
    }

    mutating func passTime() {
        switch rng.below(5) {
        case 0:
            if let deadline = core.nextDeadline {
                now = max(now, deadline - .nanoseconds(1))
                act("just before the deadline") { core, now in core.handleTimeout(now: now) }
            }
            fallthrough
        case 1:
            if let deadline = core.nextDeadline { now = max(now, deadline) }
            act("at the deadline") { core, now in core.handleTimeout(now: now) }
        case 2:
            // A call with an earlier `now`: taken as the latest seen.
            let earlier = now - .milliseconds(Int64(rng.below(500)))
            act("earlier now") { core, _ in core.handleTimeout(now: earlier) }
        default:
            now += .milliseconds(Int64(rng.below(rng.chance(0.2) ? 5_000 : 300)))
            act("time passes") { core, now in core.handleTimeout(now: now) }
        }
    }

    mutating func step() {
        switch rng.below(100) {
        case 0..<22: advanceConnection()
        case 22..<24: act("stop") { core, now in core.stopConnection(now: now) }
        case 24..<26: act("start") { core, now in core.startConnection(now: now) }
        case 26..<29:
            // Connection news out of turn.
            switch rng.below(3) {
            case 0: act("connected out of turn") { core, now in core.mqttConnected(now: now) }
            case 1: act("subscribed out of turn") { core, now in core.mqttSubscribed(topics: core.subscriptionTopicsForTests, now: now) }
            default: act("disconnected out of turn") { core, now in core.mqttDisconnected(now: now) }
            }
        case 29..<47: respond()
        case 47..<55: notify()
        case 55..<72: callAPI()
        case 72..<82: containerChange()
        default: passTime()
        }
    }

    /// Runs `steps` inputs, then lets every timer run out.
    mutating func run(steps: Int) {
        for _ in 0..<steps { step() }
        var guardCount = 0
        while let deadline = core.nextDeadline, guardCount < 200 {
            now = max(now, deadline)
            act("drain") { core, now in core.handleTimeout(now: now) }
            guardCount += 1
        }
        act("stop at the end") { core, now in core.stopConnection(now: now) }
    }
}

@Suite struct StateEquivalenceTests {
    /// Recorded before the state was reshaped; must not change (see the top of this file).
    static let directScheduleDigest: UInt64 = 0x490650a957ef4a3f
    /// Recorded before the state was reshaped; must not change (see the top of this file).
    static let worldRunDigest: UInt64 = 0xd9318b9989188822

    static let scheduleCount: UInt64 = 400

    /// Hundreds of schedules of every public input, both roles alternately: each call's actions
    /// (or error) and the public state after it, folded into one digest. The schedules must also
    /// reach every connection phase transition, reconnections after repeated failures, and
    /// catch-ups, or the digest would prove little about the connection state.
    @Test func directSchedulesGiveTheRecordedDigest() {
        var digest = OutputFingerprint()
        var transitions: Set<String> = []
        var catchUps = 0
        var maxAttempt = 0
        for seed in 1...Self.scheduleCount {
            var driver = WidgetScheduleDriver(seed: seed)
            driver.run(steps: 150)
            digest.add("\(seed) \(driver.fingerprint.hex)")
            transitions.formUnion(driver.transitions)
            catchUps += driver.catchUps
            maxAttempt = max(maxAttempt, driver.maxReconnectAttempt)
        }
        let expected: Set<String> = [
            "stopped->connecting", "connecting->subscribing", "subscribing->connected",
            "connecting->waiting_to_reconnect", "subscribing->waiting_to_reconnect", "connected->waiting_to_reconnect",
            "waiting_to_reconnect->connecting",
            "connecting->stopped", "subscribing->stopped", "connected->stopped", "waiting_to_reconnect->stopped",
        ]
        #expect(expected.isSubset(of: transitions), "not reached: \(expected.subtracting(transitions).sorted())")
        #expect(catchUps > 100)
        #expect(maxAttempt >= 3)
        #expect(digest.value == Self.directScheduleDigest, "digest \(digest.hex)")
    }

    /// The seeded two-process world (lossy, restarting, QoS 0): every event each side's app heard,
    /// with its time and incarnation, and each side's final state.
    @Test func worldRunsGiveTheRecordedDigest() {
        var digest = OutputFingerprint()
        for seed: UInt64 in 101...112 {
            var faults = WorldFaults.rough
            var configuration = WidgetConfiguration(account: account, requestTimeout: .seconds(3))
            var restarts = false
            switch seed % 3 {
            case 0:
                faults.tornWrites = 0
                restarts = true
            case 1:
                faults.loss = 0.15
                faults.cloudQoS = .atMostOnce
                configuration = WidgetConfiguration(account: account, requestTimeout: .seconds(2), requestQoS: .atMostOnce)
            default:
                break
            }
            let world = WidgetWorld.roughRun(seed: seed, faults: faults, restarts: restarts, configuration: configuration)
            for side in [world.host, world.widget] {
                var fingerprint = OutputFingerprint()
                for (time, incarnation, event) in side.events {
                    fingerprint.add("\(time) \(incarnation) \(canonical(event))")
                }
                fingerprint.add(canonical((side.core.connectionState, side.core.nextDeadline, side.core.display, side.core.hasPendingWork)))
                digest.add("\(seed) \(side.role) \(fingerprint.hex)")
            }
        }
        #expect(digest.value == Self.worldRunDigest, "digest \(digest.hex)")
    }
}
