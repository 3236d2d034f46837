import CaptureKit
import Testing
@testable import CaptureSet

/// A manifest with every section filled, as a hand editor would write it.
fileprivate let fullManifestYAML = """
schema_version: 1
title: Plugin sample, 30 s walk
description: Motion plugin sample on an iPhone, BLE sensor in a pocket.
recorded_at: "2026-11-22T00:45:00Z"
tether_version: 0.1.0
status: complete
capture_file: capture.pcapng
capture_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
interfaces:
  - index: 0
    name: lo
    link_type: 1
    role: ingest-udp
    ingest_port: 12345
  - index: 1
    name: h4tap:9001
    link_type: 201
    role: ble-hci
devices:
  - name: sensor
    model: Polar H10
    firmware: 5.0.0
    app_ids: [com.example.plugin]
annotations:
  - frame: 3
    time_ns: 1500000
    text: sensor disconnected
    author: kai
gatt_handles:
  - handle: 16
    service_uuid: 6e400001-b5a3-f393-e0a9-e50e24dcca9e
    characteristic_uuid: 6e400003-b5a3-f393-e0a9-e50e24dcca9e
ingest:
  idle_timeout_ms: 2000
  flush_bytes: 4096
expectations:
  - type: count
    core: ingest
    event: stream_start
    equals: 1
baselines:
  messaging: baseline/messaging.jsonl
  ingest: baseline/ingest.jsonl
"""

@Test func manifestDecodesEverySection() throws {
    let m = try CaptureSetDirectory.decodeManifest(fullManifestYAML, path: "t.yaml")
    #expect(m.schemaVersion == 1)
    #expect(m.status == .complete)
    #expect(m.interfaces == [
        ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345),
        ManifestInterface(index: 1, name: "h4tap:9001", linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
    ])
    #expect(m.devices == [ManifestDevice(name: "sensor", model: "Polar H10", firmware: "5.0.0", appIds: ["com.example.plugin"])])
    #expect(m.annotations == [ManifestAnnotation(frame: 3, timeNs: 1_500_000, text: "sensor disconnected", author: "kai")])
    #expect(m.gattHandles.first?.handle == 16)
    #expect(m.sections.map(\.name) == ["ingest"])
    #expect(m.section(named: "ingest")?.value["idle_timeout_ms"]?.scalarText == "2000")
    #expect(m.section(named: "ingest")?.value["flush_bytes"]?.scalarText == "4096")
    #expect(m.expectations.count == 1)
    #expect(m.baselines == ["ingest": "baseline/ingest.jsonl", "messaging": "baseline/messaging.jsonl"])
}

@Test func manifestYAMLRoundTripIsLossless() throws {
    let m = try CaptureSetDirectory.decodeManifest(fullManifestYAML, path: "t.yaml")
    let text = try CaptureSetDirectory.encodeManifest(m)
    let again = try CaptureSetDirectory.decodeManifest(text, path: "t.yaml")
    #expect(again == m)
}

@Test func manifestIsWrittenWithSnakeCaseKeys() throws {
    let m = try CaptureSetDirectory.decodeManifest(fullManifestYAML, path: "t.yaml")
    let text = try CaptureSetDirectory.encodeManifest(m)
    for key in ["schema_version:", "recorded_at:", "tether_version:", "capture_file:", "capture_sha256:", "link_type:",
                "ingest_port:", "app_ids:", "time_ns:", "gatt_handles:", "characteristic_uuid:", "idle_timeout_ms:"] {
        #expect(text.contains(key), "missing \(key)")
    }
    #expect(!text.contains("schemaVersion"))
}

@Test func manifestEncodingIsStableAndSortsBaselines() throws {
    var m = CaptureSetManifest(title: "t", recordedAt: "2026-11-22T00:00:00Z")
    m.baselines = ["session": "baseline/session.jsonl", "ingest": "baseline/ingest.jsonl", "messaging": "baseline/messaging.jsonl"]
    let first = try CaptureSetDirectory.encodeManifest(m)
    for _ in 0..<5 { #expect(try CaptureSetDirectory.encodeManifest(m) == first) }
    let ingest = try #require(first.range(of: "ingest:"))
    let messaging = try #require(first.range(of: "messaging:"))
    let session = try #require(first.range(of: "session:"))
    #expect(ingest.lowerBound < messaging.lowerBound && messaging.lowerBound < session.lowerBound)
}

@Test func minimalManifestDefaultsEveryListToEmpty() throws {
    let m = try CaptureSetDirectory.decodeManifest("""
        schema_version: 1
        title: bare
        recorded_at: "2026-11-22T00:00:00Z"
        tether_version: 0.1.0
        """, path: "t.yaml")
    #expect(m.interfaces.isEmpty && m.devices.isEmpty && m.annotations.isEmpty && m.expectations.isEmpty)
    #expect(m.baselines.isEmpty)
    #expect(m.captureFile == "capture.pcapng")
    #expect(m.captureSha256 == nil)
    #expect(m.sections.isEmpty)
}

@Test func newerSchemaVersionIsRefusedWithUpgradeAdvice() throws {
    let error = #expect(throws: CaptureSetError.self) {
        try CaptureSetDirectory.decodeManifest("schema_version: 7\ntitle: x\nfuture_field: [1]\n", path: "m.yaml")
    }
    #expect(error == .unsupportedSchemaVersion(path: "m.yaml", found: 7, supported: 1))
    #expect(error?.description.contains("Upgrade Tether") == true)
}

@Test func wrongFieldTypeNamesTheField() throws {
    let error = #expect(throws: CaptureSetError.self) {
        try CaptureSetDirectory.decodeManifest("""
            schema_version: 1
            title: x
            recorded_at: "2026-11-22T00:00:00Z"
            tether_version: 0.1.0
            interfaces:
              - index: 0
                link_type: ethernet
            """, path: "m.yaml")
    }
    guard case let .invalidManifest(path, field, _) = error else {
        Issue.record("expected invalidManifest, got \(String(describing: error))")
        return
    }
    #expect(path == "m.yaml")
    #expect(field == "interfaces[0].link_type")
}

@Test func missingRequiredKeyIsNamed() throws {
    let error = #expect(throws: CaptureSetError.self) {
        try CaptureSetDirectory.decodeManifest("schema_version: 1\nrecorded_at: x\ntether_version: 0.1.0\n", path: "m.yaml")
    }
    guard case let .invalidManifest(_, field, _) = error else {
        Issue.record("expected invalidManifest, got \(String(describing: error))")
        return
    }
    #expect(field == "title")
}

@Test func duplicateInterfaceIndexIsRefused() throws {
    let error = #expect(throws: CaptureSetError.self) {
        try CaptureSetDirectory.decodeManifest("""
            schema_version: 1
            title: x
            recorded_at: "2026-11-22T00:00:00Z"
            tether_version: 0.1.0
            interfaces:
              - {index: 0, link_type: 1}
              - {index: 0, link_type: 276}
            """, path: "m.yaml")
    }
    guard case let .invalidManifest(_, field, _) = error else {
        Issue.record("expected invalidManifest, got \(String(describing: error))")
        return
    }
    #expect(field == "interfaces[1].index")
}

@Test func unknownRoleIsKeptAsWritten() throws {
    let m = try CaptureSetDirectory.decodeManifest("""
        schema_version: 1
        title: x
        recorded_at: "2026-11-22T00:00:00Z"
        tether_version: 0.1.0
        interfaces:
          - {index: 2, link_type: 254, role: ble-sniffer}
        """, path: "m.yaml")
    #expect(m.interface(index: 2)?.role == InterfaceRole(rawValue: "ble-sniffer"))
    #expect(m.interface(index: 2)?.captureLinkType == .bluetoothLinuxMonitor)
    #expect(m.interface(index: 0) == nil)
}

@Test func stringsThatLookLikeOtherYAMLTypesSurviveARoundTrip() throws {
    var m = CaptureSetManifest(title: "123", description: "yes", recordedAt: "2026-11-22T00:45:00Z", tetherVersion: "1.0")
    m.devices = [ManifestDevice(name: "null", model: "~", firmware: "0x10", appIds: ["true", "- dash", "a: b", "#hash"])]
    m.annotations = [ManifestAnnotation(frame: 1, timeNs: 0, text: "line one\nline \"two\" ünïcode")]
    let text = try CaptureSetDirectory.encodeManifest(m)
    #expect(try CaptureSetDirectory.decodeManifest(text, path: "t.yaml") == m)
}

@Test func gattHandleUUIDThatIsNoUUIDIsRefusedWithItsField() throws {
    let error = #expect(throws: CaptureSetError.self) {
        try CaptureSetDirectory.decodeManifest("""
            schema_version: 1
            title: x
            recorded_at: "2026-11-22T00:00:00Z"
            tether_version: 0.1.0
            gatt_handles:
              - {handle: 18, service_uuid: '0x180d', characteristic_uuid: '0x2a37'}
              - {handle: 21, service_uuid: heart-rate, characteristic_uuid: '0x2a38'}
            """, path: "m.yaml")
    }
    guard case let .invalidManifest(path, field, problem) = error else {
        Issue.record("expected invalidManifest, got \(String(describing: error))")
        return
    }
    #expect(path == "m.yaml")
    #expect(field == "gatt_handles[1].service_uuid")
    #expect(problem.contains("\"heart-rate\" is not a Bluetooth UUID"))
}
