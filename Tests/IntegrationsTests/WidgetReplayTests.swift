@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import CaptureKit
import CaptureSet
import Foundation
import ReplayKit
import BehaviourTrace
import Testing
import WidgetCore

/// The widget channel's replay pieces: API-call records, the driver, adapter selection, and the
/// committed capture sets recorded for real (both processes live, a real mosquitto, the widget
/// process recording).
@Suite struct WidgetAPICallTests {
    static let calls: [WidgetAPICall] = [
        .start(role: .widget, account: "demo", seed: .max, container: ["settings.json": Array("{\"version\":1}".utf8)]),
        .start(role: .host, account: "a-b", seed: 1, container: [:]),
        .updateSettings(["units": "metric", "n": .int(3), "x": .double(1.5), "list": .array([.bool(true), .null])]),
        .setHasContent(true), .didOpenURL(WidgetOpenURLID(rawValue: "9f3a01c2-3"), opened: false),
        .openHostApp("iotdemo://device/lamp-0001"), .refresh(budget: .milliseconds(2500)), .startConnection, .stopConnection,
        .listDevices, .updateDevices(["lamp-0001", "plug-0001"]), .queryProperties(iotId: "lamp-0001", productKey: "a1LampDemo"),
        .setProperties(iotId: "lamp-0001", items: ["powerstate": .int(1)]), .listScenes, .queryScenes(pageNo: 2, pageSize: 5),
        .updateScenes(["scene-0001"]), .fireScene("scene-0002"),
        .containerChanged(name: "settings.json", bytes: Array("{}".utf8)), .containerChanged(name: "has-content.json", bytes: nil),
        .mqttConnectFailed("connect(127.0.0.1:1883): Connection refused"),
    ]

    @Test(arguments: calls) func aRecordReadsBackAsTheSameCall(_ call: WidgetAPICall) throws {
        let record = try JSONLiteral.parseObject(Array(call.recordJSON.utf8), label: "record")
        #expect(record["core"] == .string("widget"))
        #expect(try WidgetAPICall(record: record) == call, "\(call.recordJSON)")
    }

    @Test func aBadRecordSaysWhatIsWrong() {
        #expect(throws: WidgetAPICallError.self) { try WidgetAPICall(record: ["call": .string("dance")]) }
        #expect(throws: WidgetAPICallError.self) { try WidgetAPICall(record: ["call": .string("refresh"), "budget_ms": .int(0)]) }
        #expect(throws: WidgetAPICallError.self) { try WidgetAPICall(record: ["call": .string("update_devices"), "iot_ids": .array([.int(1)])]) }
        #expect(throws: WidgetAPICallError.self) {
            try WidgetAPICall(record: ["call": .string("start"), "role": .string("phone"), "account": .string("demo"), "seed": .string("1")])
        }
        do {
            _ = try WidgetAPICall(record: ["call": .string("fire_scene")])
            Issue.record("read fire_scene without a scene_id")
        } catch {
            #expect(error.description.contains("scene_id"))
        }
    }
}

@Suite struct WidgetDriverTests {
    @Test func aCallBeforeStartIsAnAPIErrorNotACrash() {
        var driver = WidgetDriver()
        let (actions, events) = driver.apply(.listDevices, now: .zero)
        #expect(actions.isEmpty)
        #expect(events.map(\.event) == ["api_error"])
    }

    @Test func aCallFromTheWrongSideIsRefusedWithItsCode() {
        var driver = WidgetDriver()
        _ = driver.apply(.start(role: .widget, account: "demo", seed: 5, container: [:]), now: .zero)
        let (_, events) = driver.apply(.updateSettings(["a": .int(1)]), now: .seconds(1))
        #expect(events.first?.event == "api_error")
        #expect(events.first?.fields["error"] == .string("wrong-role"))
    }

    @Test func theSameSeedGivesTheSameRequestIds() throws {
        func id(seed: UInt64) -> TraceValue? {
            var driver = WidgetDriver()
            _ = driver.apply(.start(role: .widget, account: "demo", seed: seed, container: [:]), now: .zero)
            _ = driver.apply(.startConnection, now: .zero)
            return driver.apply(.listDevices, now: .seconds(1)).events.first?.fields["id"]
        }
        // A request id is there at all (two missing ids would also be equal)…
        let first = try #require(id(seed: 42))
        guard case .string(let text) = first, !text.isEmpty else {
            Issue.record("the request id is \(first), not a non-empty string")
            return
        }
        // …the same seed repeats it, and another seed does not (so it does come from the seed).
        #expect(id(seed: 42) == first)
        #expect(id(seed: 43) != first)
    }

    @Test func publishesAndWritesAreFramesInTheTrace() {
        let publish = WidgetTraceMapping.events(for: .mqttPublish(topic: "t/x", payload: Array("{}".utf8), qos: .atLeastOnce), timeNs: 5)
        #expect(publish.first?.event == "frame_emitted")
        #expect(publish.first?.fields["device"] == .string("mqtt"))
        #expect(publish.first?.fields["packet"] == .string("PUBLISH t/x QoS 1: {}"))
        let write = WidgetTraceMapping.events(for: .writeFile(name: "settings.json", bytes: Array("{\"v\":1}".utf8)), timeNs: 5)
        #expect(write.first?.fields["packet"] == .string("write settings.json: {\"v\":1}"))
    }
}

@Suite struct WidgetAdapterSelectionTests {
    @Test func brokerTrafficAndTheAppGroupChooseTheWidgetAdapterAndItTakesTheAPICalls() throws {
        var broker = ManifestInterface(index: 0, linkType: .ethernet, role: .mqttTCP)
        broker.brokerPort = 18831
        let manifest = CaptureSetManifest(title: "t", recordedAt: "2026-11-23T00:00:00Z", interfaces: [
            broker, ManifestInterface(index: 1, linkType: .user1, role: .appGroup), ManifestInterface(index: 2, linkType: .user0, role: .apiCalls),
        ])
        #expect(try TetherIntegrations.builtIn.select(for: manifest, manifestPath: "m.yaml").map(\.name) == ["widget"])
    }
}

/// The committed widget-channel sets: recorded for real (both processes as live hosts on one App
/// Group folder, a real mosquitto, the IoT cloud simulator; the widget process recording), by
/// Harness/record_widget_sets.py.
@Suite struct WidgetCaptureSetTests {
    static let liveSets = [
        "widget-property-change", "widget-set-response-notification", "widget-broker-drop", "widget-refresh-overrun",
        "widget-write-race", "widget-scene-fire", "widget-host-open-url", "widget-broker-outage", "widget-call-while-connecting",
    ]

    func replay(_ name: String) throws -> ReplayOutcome {
        try replaySet(at: MessagingReplayTests.captures.appendingPathComponent(name).path)
    }

    func summary(_ outcome: ReplayOutcome) throws -> [String: TraceValue] {
        try #require(outcome.trace.last { $0.core == "widget" && $0.event == "summary" }).fields
    }

    @Test(arguments: liveSets) func everyPublishAndWriteOfTheReplayedProcessEqualsTheCapturedOne(_ name: String) throws {
        let outcome = try replay(name)
        #expect(outcome.cores == ["widget"])
        let fields = try summary(outcome)
        #expect(fields["frames_diverged"] == .int(0), "\(name): \(fields["first_divergence"] ?? .null)")
        guard case .int(let matched)? = fields["frames_matched"], case .int(let publishes)? = fields["own_publishes"],
              case .int(let writes)? = fields["own_writes"] else {
            Issue.record("\(name): the summary lacks its counts: \(fields)")
            return
        }
        #expect(matched == publishes + writes)
        // The write race is the host's writes and the widget's reads: the widget publishes and writes nothing.
        if name != "widget-write-race" { #expect(matched > 0) }
    }

    @Test(arguments: liveSets) func liveTraceEqualsReplayedTrace(_ name: String) throws {
        let outcome = try replay(name)
        let folder = MessagingReplayTests.captures.appendingPathComponent(name).appendingPathComponent("live")
        let hostTrace = folder.appendingPathComponent("host.jsonl").path
        let live = try TraceFile.read(FileManager.default.fileExists(atPath: hostTrace) ? hostTrace : folder.appendingPathComponent("widget.jsonl").path)
        let ignored: Set<TraceName> = ["frame_matched", "summary"]
        let report = TraceDiff.compare(
            live.filter { !ignored.contains($0.event) }, outcome.trace.filter { !ignored.contains($0.event) },
            timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(name): \(report.render(maxLines: 20))")
    }

    /// The widget refreshes while its connection comes up and sets the lamp while the plug's change
    /// is on its way: the live core took an MQTT packet after a call although libpcap stamped it
    /// before. In capture order, the replayed trace differs from the live one.
    @Test func theCallWhileConnectingReplaysInTheLiveCoresOrderAndDiffersInCaptureOrder() throws {
        let (_, inCaptureOrder, live) = try MessagingReplayTests.replayBothWays("widget-call-while-connecting", core: "widget")
        // In capture order the CONNACK reaches the core before the refresh call: it subscribes earlier.
        #expect(MessagingReplayTests.differ(live, inCaptureOrder.trace))
    }

    @Test func theHostSideOfARecordingReplaysTheHostCore() throws {
        let outcome = try replay("widget-host-open-url")
        #expect(try summary(outcome)["role"] == .string("host"))
        #expect(outcome.trace.filter { $0.event == "open_url_requested" }.count == 2)
    }

    @Test func aRefusedReconnectIsReplayedFromItsRecordedFact() throws {
        let outcome = try replay("widget-broker-outage")
        #expect(outcome.trace.contains { $0.event == "api_call" && $0.fields["call"] == .string("mqtt_connect_failed") })
        #expect(outcome.trace.filter { $0.event == "connection_state_changed" && $0.fields["state"] == .string("waiting_to_reconnect") }.count >= 2)
    }

    @Test func committedExpectationsHold() throws {
        for name in Self.liveSets {
            let outcome = try replay(name)
            #expect(outcome.manifest.expectations.count >= 3, "\(name) has too few expectations")
            for result in Expectations.evaluate(outcome.manifest.expectations, trace: outcome.trace) {
                #expect(result.passed, "\(name): \(result.message)")
            }
        }
    }
}
