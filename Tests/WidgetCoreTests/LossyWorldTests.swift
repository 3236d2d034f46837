import Testing
import TetherTestSupport
@testable import WidgetCore

/// Seeds for the randomized world runs: each gives a different pattern of loss, duplication,
/// reordering, connection drops and torn or coalesced container writes.
let roughSeeds: [UInt64] = Array(1...8)

extension WidgetWorld {
    /// Calls an API that returns only actions; ignores a refusal.
    mutating func attempt(_ role: WidgetRole, _ body: (inout WidgetCore, Duration) throws(WidgetError) -> [WidgetAction]) {
        call(role) { core, now throws(WidgetError) in ((), try body(&core, now)) }
    }

    /// The seeded scenario: the host writes settings and manages the widget's devices; the widget
    /// refreshes, sets properties, fires scenes, reads, asks to open the host app; the cloud's
    /// devices change on their own. Then a quiet period (no drops, no loss, no cloud activity), a
    /// final refresh, and everything settles.
    static func roughRun(seed: UInt64, faults: WorldFaults = .rough, restarts: Bool = false,
                         configuration: WidgetConfiguration = WidgetConfiguration(account: account, requestTimeout: .seconds(3))) -> WidgetWorld {
        var world = WidgetWorld(seed: seed, faults: faults, configuration: configuration)
        var rng = SplitMix64(seed: seed &* 7_919)
        var settingsNumber = 0
        var devicesRevision = 0
        world.attempt(.host) { core, now throws(WidgetError) in try core.setHasContent(true, now: now) }
        world.run(until: world.now + .milliseconds(300))
        for round in 0..<70 {
            if rng.chance(0.25) {
                settingsNumber += 1
                world.writeSettings(["n": .int(Int64(settingsNumber)), "devicesRevision": .int(Int64(devicesRevision)),
                                     "pad": .string(String(repeating: "x", count: rng.below(40)))])
            }
            if rng.chance(0.25) {
                world.call(.widget) { core, now throws(WidgetError) in
                    try core.refreshRequested(budget: .milliseconds(Int64(200 + rng.below(2_500))), now: now)
                }
            }
            if rng.chance(0.3) {
                let iotId = ["dev-a", "dev-b", "dev-c"][rng.below(3)]
                let property = rng.chance(0.5) ? "powerstate" : "brightness"
                let value = WidgetJSON.int(Int64(rng.below(100)))
                world.call(.widget) { core, now throws(WidgetError) in try core.setProperties(iotId: iotId, [property: value], now: now) }
            }
            if rng.chance(0.1) {
                let scene = rng.chance(0.5) ? "scene-1" : "scene-2"
                world.call(.widget) { core, now throws(WidgetError) in try core.fireScene(scene, now: now) }
            }
            if rng.chance(0.12) {
                world.call(.widget) { core, now throws(WidgetError) in try core.openHostApp(url: "traffic://region/\(round)", now: now) }
            }
            if rng.chance(0.1) {
                let iotId = ["dev-a", "dev-b", "dev-c"][rng.below(3)]
                world.call(.widget) { core, now throws(WidgetError) in try core.queryProperties(iotId: iotId, productKey: "pk0", now: now) }
            }
            if rng.chance(0.06) {
                let all = ["dev-a", "dev-b", "dev-c"]
                let chosen = all.filter { _ in rng.chance(0.6) }
                world.call(.host) { core, now throws(WidgetError) in try core.updateWidgetDevices(chosen.isEmpty ? ["dev-a"] : chosen, now: now) }
                world.run(until: world.now + .milliseconds(150))
                devicesRevision += 1
                settingsNumber += 1
                world.writeSettings(["n": .int(Int64(settingsNumber)), "devicesRevision": .int(Int64(devicesRevision))])
            }
            if rng.chance(0.04) {
                world.call(.host) { core, now throws(WidgetError) in try core.updateWidgetScenes(rng.chance(0.5) ? ["scene-1", "scene-2"] : ["scene-2"], now: now) }
            }
            if rng.chance(0.05) {
                world.call(.host) { core, now throws(WidgetError) in try core.queryScenes(now: now) }
            }
            if restarts, rng.chance(0.08) {
                world.restart(rng.chance(0.5) ? .host : .widget)
            }
            world.run(until: world.now + .milliseconds(Int64(50 + rng.below(400))))
        }
        world.quiet()
        world.settle()
        world.call(.widget) { core, now throws(WidgetError) in try core.refreshRequested(budget: .seconds(30), now: now) }
        world.settle()
        return world
    }

    /// The host app writes settings and notes them (the truth the widget is checked against).
    mutating func writeSettings(_ settings: WidgetJSON) {
        attempt(.host) { core, now throws(WidgetError) in try core.updateSettings(settings, now: now) }
        settingsWritten[host.core.settingsVersion] = host.core.settings
    }

    /// From now on: no drops, no loss, no late answers, no torn writes, no cloud activity.
    mutating func quiet() {
        dropsEnabled = false
        cloudActive = false
        faults.loss = 0
        faults.lateAnswers = 0
        faults.tornWrites = 0
        faults.connectFailure = 0
    }
}

@Suite struct LossyWorldTests {
    @Test(arguments: roughSeeds)
    func everyRequestGetsExactlyOneResult(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        for role in [WidgetRole.host, .widget] {
            let (issued, results) = world.requestOutcomes(role)
            #expect(!issued.isEmpty)
            #expect(Set(results.keys).isSubset(of: Set(issued.keys)), "\(role): a result for a request never issued")
            for id in issued.keys {
                #expect(results[id] == 1, "\(role) request \(id): \(results[id] ?? 0) results")
            }
            #expect(!world[role].core.hasPendingWork)
            // Nothing in this world misbehaves except the torn writes, which readers refuse.
            let kinds = world[role].appEvents.compactMap { if case .violation(let kind, _) = $0 { kind } else { nil } }
            #expect(Set(kinds).isSubset(of: [.malformedFile]), "\(role): \(kinds)")
        }
    }

    @Test(arguments: roughSeeds)
    func everyRefreshGetsExactlyOneResult(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        var started: [WidgetRefreshID] = []
        var completed: [WidgetRefreshID: [WidgetRefreshResult]] = [:]
        for event in world.widget.appEvents {
            switch event {
            case .refreshStarted(let id, _): started.append(id)
            case let .refreshCompleted(id, result): completed[id, default: []].append(result)
            default: break
            }
        }
        #expect(started.count > 5)
        #expect(Set(completed.keys) == Set(started))
        #expect(completed.values.allSatisfy { $0.count == 1 }, "a refresh got several results: \(completed)")
        #expect(completed[started.last!] == [.newData] || completed[started.last!] == [.noData])
    }

    @Test(arguments: roughSeeds)
    func aStaleUpdateIsNeverShownAfterANewerOneAndTheWidgetEndsAtTheCloudsState(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        for role in [WidgetRole.host, .widget] {
            var shown: [String: Int64] = [:]
            var statusShown: [String: Int64] = [:]
            for event in world[role].appEvents {
                switch event {
                case let .devicePropertiesChanged(iotId, items):
                    for (name, item) in items {
                        let key = "\(iotId)/\(name)"
                        #expect(shown[key].map { item.time > $0 } ?? true, "\(role) \(key): time \(item.time) after \(shown[key]!)")
                        shown[key] = item.time
                    }
                case let .deviceStatusChanged(iotId, status):
                    if let time = status.time {
                        #expect(statusShown[iotId].map { time > $0 } ?? true, "\(role) status of \(iotId) went back")
                        statusShown[iotId] = time
                    }
                default:
                    break
                }
            }
        }
        let display = world.widget.core.display
        #expect(display.devices.map(\.device.iotId) == world.widgetDeviceIDs)
        for view in display.devices {
            let device = world.devices[view.device.iotId]!
            #expect(view.status?.isOnline == device.online, "\(device.iotId) status")
            for (name, truth) in device.properties {
                #expect(view.properties[name]?.value == truth.value, "\(device.iotId).\(name)")
                #expect(view.properties[name]?.time == truth.time, "\(device.iotId).\(name) time")
            }
        }
    }

    @Test(arguments: roughSeeds)
    func settingsAreNeverHalfReadNeverOlderAndEndAtTheLatest(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        var last: UInt64 = 0
        var applied = 0
        for event in world.widget.appEvents {
            guard case let .settingsChanged(version, settings) = event else { continue }
            #expect(version > last, "settings went from version \(last) to \(version)")
            #expect(world.settingsWritten[version] == settings, "version \(version) shown as \(settings), written as \(String(describing: world.settingsWritten[version]))")
            last = version
            applied += 1
        }
        #expect(applied > 3)
        #expect(world.widget.core.settingsVersion == world.host.core.settingsVersion)
        #expect(world.widget.core.settings == world.host.core.settings)
        #expect(world.widget.core.hasContent)
    }

    @Test(arguments: roughSeeds)
    func aDroppedConnectionIsResubscribedAndCaughtUp(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        #expect(world.drops > 0, "the run should drop a connection")
        for role in [WidgetRole.host, .widget] {
            let side = world[role]
            #expect(side.core.connectionState == .connected)
            #expect(world.subscriptions[role] == Set(side.core.subscriptionTopicsForTests))
            let connects = side.appEvents.filter { $0 == .connectionStateChanged(.connected) }.count
            let subscribes = side.appEvents.filter { $0 == .connectionStateChanged(.subscribing) }.count
            #expect(connects >= 1 && subscribes >= connects && side.subscribeActions == subscribes)
            let catchUps = side.appEvents.filter { if case .requestIssued(_, .queryComponentProduct, .reconnect) = $0 { true } else { false } }.count
            #expect(catchUps == connects - 1, "\(role): \(connects) connections, \(catchUps) catch-ups")
        }
    }

    @Test(arguments: roughSeeds)
    func openURLRequestsAreDeliveredOnceAndCompletedOnce(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        var completed: [WidgetOpenURLID: [Bool]] = [:]
        for event in world.widget.appEvents {
            switch event {
            case .openURLCompleted(let id, let opened): completed[id, default: []].append(opened)
            default: break
            }
        }
        let delivered = world.host.appEvents.compactMap { if case .openURLRequested(let request) = $0 { request.id } else { nil } }
        let asked = Array(completed.keys)
        #expect(!delivered.isEmpty)
        #expect(delivered.count == Set(delivered).count, "a request was delivered twice: \(delivered)")
        #expect(completed.values.allSatisfy { $0 == [true] }, "\(completed)")
        #expect(Set(asked) == Set(delivered))
        #expect(world.files.keys.filter { $0.hasPrefix("open-url") }.isEmpty, "left in the container: \(world.files.keys.sorted())")
    }

    @Test(arguments: roughSeeds)
    func aPropertySetIsAnsweredBeforeItsChangeIsShown(_ seed: UInt64) {
        let world = WidgetWorld.roughRun(seed: seed)
        var succeeded: Set<String> = []
        var sets: [String: String] = [:] // request id → device
        var checked = 0
        for event in world.widget.appEvents {
            switch event {
            case let .requestIssued(id, .setProperties, _):
                sets[id.rawValue] = ""
            case .requestSucceeded(let id, .accepted) where sets[id.rawValue] != nil:
                succeeded.insert(id.rawValue)
            case let .devicePropertiesChanged(_, items):
                for (requestID, time) in world.setNotificationTimes where items.values.contains(where: { $0.time == time }) {
                    #expect(succeeded.contains(requestID) || world.widget.appEvents.contains { if case .requestFailed(let id, _) = $0 { id.rawValue == requestID } else { false } },
                            "the change of \(requestID) was shown before its response")
                    checked += 1
                }
            default:
                break
            }
        }
        #expect(checked > 0)
    }

    @Test(arguments: roughSeeds)
    func requestsUnderQoS0LossStillGetExactlyOneResult(_ seed: UInt64) {
        var faults = WorldFaults.rough
        faults.loss = 0.15
        faults.cloudQoS = .atMostOnce
        let configuration = WidgetConfiguration(account: account, requestTimeout: .seconds(2), requestQoS: .atMostOnce)
        let world = WidgetWorld.roughRun(seed: seed, faults: faults, configuration: configuration)
        var timedOut = 0
        for role in [WidgetRole.host, .widget] {
            let (issued, results) = world.requestOutcomes(role)
            for id in issued.keys { #expect(results[id] == 1, "\(role) request \(id)") }
            timedOut += world[role].appEvents.filter { if case .requestFailed(_, .timedOut) = $0 { true } else { false } }.count
        }
        #expect(timedOut > 0, "QoS 0 loss should lose some requests or responses")
    }

    @Test(arguments: roughSeeds)
    func restartedProcessesRebuildTheirViewFromTheContainer(_ seed: UInt64) {
        var faults = WorldFaults.rough
        faults.tornWrites = 0 // a restart reads the files as they are: atomic writes only
        let world = WidgetWorld.roughRun(seed: seed, faults: faults, restarts: true)
        #expect(world.host.incarnations.count + world.widget.incarnations.count > 2, "the run should restart a process")
        // Settings never went back, across restarts too: each incarnation starts from the files.
        var last: UInt64 = 0
        for (_, _, event) in world.widget.events {
            if case .settingsChanged(let version, _) = event {
                #expect(version > last)
                last = version
            }
        }
        #expect(world.widget.core.settingsVersion == world.host.core.settingsVersion)
        #expect(world.widget.core.settings == world.settingsWritten[world.host.core.settingsVersion])
        // Requests of the live incarnation: exactly one result; of dead ones: at most one.
        for role in [WidgetRole.host, .widget] {
            let (issued, results) = world.requestOutcomes(role)
            for (id, incarnation) in issued {
                if incarnation == world[role].core.incarnation {
                    #expect(results[id] == 1, "\(role) \(id)")
                } else {
                    #expect((results[id] ?? 0) <= 1, "\(role) \(id)")
                }
            }
        }
        let delivered = world.host.events.compactMap { if case .openURLRequested(let request) = $0.event { request.id } else { nil } }
        #expect(delivered.count == Set(delivered).count || world.host.incarnations.count > 1)
    }
}
