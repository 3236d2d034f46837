import CaptureKit
import CaptureSet
import Foundation
import Testing

@testable import LiveCapture

/// Real captures on `lo`. Tests run as root here; a permission error fails the test with its message.
@Suite(.serialized) struct PcapRecordingTests {
    @Test func recordsUDPDatagramsSentToALoopbackPort() async throws {
        let receiver = try LoopbackReceiver()
        let source = try PcapLiveSource(device: "lo", options: .udpPort(receiver.port))
        #expect(source.interface.linkType == .ethernet)
        let setPath = temporarySetPath()
        let recorder = Recorder(setPath: setPath, title: "loopback UDP", inputs: [.ingestUDP(source, port: receiver.port)])
        try recorder.start()
        let running = Task { try await recorder.run() }

        let payloads = (0..<20).map { Array("{\"t\": \"1700000000.000000\($0)\", \"n\": \($0)}".utf8) }
        for payload in payloads { try receiver.send(payload) }
        // The datagrams wait in the capture's buffer until `run()`'s task gets a thread; in a full
        // parallel test run on two cores that has taken over a minute, so the wait is generous.
        let sawAll = await eventually(limit: .seconds(300)) { recorder.framesRecorded >= payloads.count }
        recorder.stop()
        let summary = try await running.value
        #expect(sawAll, "only \(recorder.framesRecorded) of \(payloads.count) datagrams were captured")

        let file = try readAll(summary.capturePath)
        #expect(file.warnings.isEmpty)
        #expect(file.interfaces.map(\.linkType) == [.ethernet])
        #expect(file.interfaces.first?.name == "lo")
        #expect(file.frames.count == payloads.count)
        for (frame, payload) in zip(file.frames, payloads) {
            #expect(endsWith(frame.data, payload), "frame \(frame.number) does not carry datagram \(String(decoding: payload, as: UTF8.self))")
        }
        #expect(file.interfaces.first?.statistics.interfaceDropped == 0)
        #expect(summary.frames == payloads.count)
        #expect(summary.interfaces.first?.statistics?.received.map { $0 >= UInt64(payloads.count) } == true)
    }

    @Test func sealedManifestNamesTheIngestPortAndDigest() async throws {
        let receiver = try LoopbackReceiver()
        let source = try PcapLiveSource(device: "lo", options: .udpPort(receiver.port))
        let setPath = temporarySetPath()
        let recorder = Recorder(setPath: setPath, title: "manifest check", inputs: [.ingestUDP(source, port: receiver.port)])
        let running = Task { try await recorder.run() }
        #expect(await eventually { FileManager.default.fileExists(atPath: setPath + "/manifest.yaml") })
        try receiver.send(Array("one".utf8))
        _ = await eventually { recorder.framesRecorded >= 1 }
        recorder.stop()
        let summary = try await running.value

        let manifest = try String(contentsOfFile: setPath + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("status: complete"))
        #expect(manifest.contains("capture_sha256: \(summary.sha256)"))
        #expect(manifest.contains("role: ingest-udp"))
        #expect(manifest.contains("ingest_port: \(receiver.port)"))
        #expect(manifest.contains("link_type: 1"))
        let decoded = try CaptureSetDirectory.readManifest(at: setPath)
        #expect(decoded.interfaces.first?.frames == summary.frames)
        #expect(decoded.interfaces.first?.received == summary.interfaces.first?.statistics?.received)
        #expect(decoded.interfaces.first?.dropped == summary.interfaces.first?.statistics?.totalDropped)
        #expect(summary.sha256.count == 64)
    }

    @Test func filterKeepsOtherPortsOut() async throws {
        let wanted = try LoopbackReceiver()
        let other = try LoopbackReceiver()
        let source = try PcapLiveSource(device: "lo", options: .udpPort(wanted.port))
        let recorder = Recorder(setPath: temporarySetPath(), title: "filter", inputs: [.ingestUDP(source, port: wanted.port)])
        let running = Task { try await recorder.run() }
        try other.send(Array("other".utf8))
        try wanted.send(Array("wanted".utf8))
        _ = await eventually { recorder.framesRecorded >= 1 }
        recorder.stop()
        let summary = try await running.value
        let frames = try readAll(summary.capturePath).frames
        #expect(frames.count == 1)
        #expect(frames.first.map { endsWith($0.data, Array("wanted".utf8)) } == true)
    }

    /// A recorder killed after a quiet spell must have every frame before the spell on disk: the
    /// source reports idle time, and the recorder flushes on it within its one-second interval.
    @Test func quietInterfaceStillFlushesWithinTheInterval() async throws {
        let receiver = try LoopbackReceiver()
        let source = try PcapLiveSource(device: "lo", options: .udpPort(receiver.port))
        let recorder = Recorder(setPath: temporarySetPath(), title: "quiet flush", inputs: [.ingestUDP(source, port: receiver.port)])
        let running = Task { try await recorder.run() }
        _ = await eventually { FileManager.default.fileExists(atPath: recorder.setPath + "/capture.pcapng") }
        for index in 0..<5 { try receiver.send(Array("quiet-\(index)".utf8)) }
        #expect(await eventually { recorder.framesRecorded >= 5 })
        // Nothing more is sent; within about two flush intervals every frame must be readable.
        var onDisk = 0
        for _ in 0..<30 where onDisk < 5 {
            try await Task.sleep(for: .milliseconds(100))
            onDisk = try readAll(recorder.setPath + "/capture.pcapng").frames.count
        }
        recorder.stop()
        _ = try await running.value
        #expect(onDisk == 5, "only \(onDisk) of 5 frames reached the file while the interface was quiet")
    }

    @Test func unknownInterfaceListsTheDevicesThatExist() throws {
        do {
            _ = try PcapLiveSource(device: "tether-no-such-if0")
            Issue.record("opening a missing interface succeeded")
        } catch {
            #expect(error.kind == .noSuchDevice)
            #expect(error.hint.contains("lo"), "hint was: \(error.hint)")
            #expect(error.description.contains("tether-no-such-if0"))
        }
    }

    @Test func badFilterSaysWhichExpression() throws {
        do {
            _ = try PcapLiveSource(device: "lo", options: .init(filter: "udp port banana"))
            Issue.record("a bad filter was accepted")
        } catch {
            #expect(error.kind == .badFilter)
            #expect(error.step.contains("udp port banana"))
        }
    }

    @Test func loopbackDeliversNanosecondTimestampsOrSaysSo() throws {
        let source = try PcapLiveSource(device: "lo")
        defer { source.close() }
        if source.nanosecondTimestamps {
            #expect(source.interface.nanosecondsPerTick == 1)
        } else {
            #expect(source.notices.contains { $0.contains("microsecond") })
        }
    }
}

@Suite struct PcapAnyDeviceTests {
    @Test func anyDeviceRecordsLinuxSLL2() throws {
        let source = try PcapLiveSource(device: "any", options: .udpPort(9))
        defer { source.close() }
        #expect(source.interface.linkType == .linuxSLL2)
    }
}
