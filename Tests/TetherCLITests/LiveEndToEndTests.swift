import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IngestCore
import IngestStore
import ReplayKit
import BehaviourTrace
import Testing
import TetherTestSupport

/// serve → simulate → record → replay: what IngestCore yields in replay is what the live server
/// stored, in the same order. Needs root or CAP_NET_RAW for libpcap on `lo`.
@Suite(.serialized) struct LiveEndToEndTests {
    /// One empty UDP datagram from a fresh socket to 127.0.0.1:`port`.
    static func sendEmptyDatagram(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw BackgroundFailure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, nil, 0, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard sent >= 0 else { throw BackgroundFailure(description: "sendto: \(String(cString: strerror(errno)))") }
    }

    /// One data point reduced to what both sides carry.
    struct Point: Equatable, CustomStringConvertible {
        var source: String
        var timeNs: Int64
        var name: String
        var type: String
        var value: Double
        var description: String { "\(source) \(timeNs) \(name) \(type) \(value)" }
    }

    @Test func aSignalSentAsSoonAsRecordingStartsSealsTheSet() throws {
        // The signal handlers used to go in after the "Recording" line: a script that stopped the
        // recording on reading it could have its SIGINT ignored (the recording ran for ever) or
        // kill the recorder before it sealed the set. Several rounds, since the window was narrow.
        let folder = try TemporaryFolder("cli-tests")
        for round in 0..<6 {
            let set = folder.path("Captures/at-once-\(round)").path
            let (status, _, stderr) = try signalOnReadyLine(
                try Tools.tetherBinary(), ["record", "--udp", "lo:12399", "--out", set], ready: "Recording UDP", signal: SIGINT)
            #expect(status == 0, "round \(round): \(status.map { "exited \($0)" } ?? "still recording after SIGINT"): \(stderr)")
            let manifest = (try? String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)) ?? ""
            #expect(manifest.contains("status: complete"), "round \(round): \(manifest)")
        }
    }

    @Test func replayYieldsTheDataPointsTheLiveServerStoredInOrder() throws {
        let folder = try TemporaryFolder("cli-tests")
        let tether = try Tools.tetherBinary()
        let database = folder.path("ingest.sqlite").path
        let serve = try BackgroundProcess(tether, ["serve", "ingest", "--port", "0", "--ipv4-only", "--db", database], in: folder, name: "serve")
        let port: Int = try serve.waitFor("the bound port") {
            guard let range = serve.stdout.range(of: "Serving ingest on 127.0.0.1:") else { return nil }
            return Int(serve.stdout[range.upperBound...].prefix { $0.isNumber })
        }
        let set = folder.path("Captures/live").path
        let record = try BackgroundProcess(tether, ["record", "--udp", "lo:\(port)", "--out", set], in: folder, name: "record")
        _ = try record.waitFor("the recorder to start") { record.stdout.contains("Recording UDP") ? true : nil }

        let simulate = try Tools.tether(["simulate", "plugin", "--to", "127.0.0.1:\(port)", "--rate", "50", "--duration", "2", "--malformed", "not-json", "--seed", "3"])
        try #require(simulate.status == 0, "simulate failed: \(simulate.stderr)")
        let sent = try #require(simulate.stdout.split(separator: "\n").first { $0.hasPrefix("Sent ") }.flatMap { Int($0.split(separator: " ")[1]) })

        // Stop recording once every datagram is in the capture file. The recorder writes a frame
        // when the next one arrives or its flush interval (1 s) passes; an empty datagram every
        // 1.2 s keeps it writing (the server and the replay both reject it as not JSON, alike).
        var lastNudge = ContinuousClock.now
        _ = try record.waitFor("\(sent) frames in the capture") { () -> Bool? in
            if ContinuousClock.now - lastNudge > .milliseconds(1200) {
                try Self.sendEmptyDatagram(port: port)
                lastNudge = ContinuousClock.now
            }
            let inspect = try Tools.tether(["inspect", set + "/capture.pcapng", "--json"])
            guard let json = try? JSONSerialization.jsonObject(with: inspect.stdoutBytes) as? [String: Any] else { return nil }
            return (json["frames"] as? Int ?? 0) >= sent ? true : nil
        }
        #expect(record.interruptAndWait() == 0, "record: \(record.stderr)")
        #expect(serve.interruptAndWait() == 0, "serve: \(serve.stderr)")

        let stored = try SQLiteIngestStore(path: database).dataPoints().map { point -> Point in
            guard case .float64(let value) = point.value else { return Point(source: "", timeNs: 0, name: "not float64", type: point.type, value: .nan) }
            return Point(source: point.source.description, timeNs: point.timeNs, name: point.name, type: point.type, value: value)
        }
        let trace = folder.path("trace.jsonl").path
        let replay = try Tools.tether(["replay", set, "--trace", trace])
        #expect(replay.status == 0, "replay: \(replay.stdout) \(replay.stderr)")
        let replayed = try TraceFile.read(trace).filter { $0.event == "datapoint" }.map { event -> Point in
            func string(_ key: String) -> String { if case .string(let text)? = event.fields[key] { return text } else { return "" } }
            var time: Int64 = 0
            if case .int(let value)? = event.fields["time_ns"] { time = value }
            var value = Double.nan
            switch event.fields["value"] {
            case .double(let number)?: value = number
            case .int(let number)?: value = Double(number)
            default: break
            }
            return Point(source: string("source"), timeNs: time, name: string("name"), type: string("type"), value: value)
        }
        // 50 Hz for 2 s, six entries each.
        #expect(stored.count >= 600, "the live server stored only \(stored.count) data points")
        #expect(replayed == stored, "first difference: \(zip(replayed, stored).first { $0 != $1 }.map { "replay \($0.0) vs stored \($0.1)" } ?? "counts \(replayed.count) vs \(stored.count)")")
    }
}
