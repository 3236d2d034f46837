@testable import IngestIntegration
@testable import WidgetLive
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import Foundation
import MQTT
import Testing

@testable import LiveHosts

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The client against a real mosquitto (`Harness/rigs/mqtt_broker.py`, one per suite, on a free
/// port) and, for what a well-behaved broker never does, against a scripted one on a loopback socket.
/// Topics and client ids are unique per test, so the tests share the broker and run in parallel.
/// Every wait is bounded only to keep a broken test from hanging; nothing asserts how long it took.
@Suite(.mqttBroker) struct MQTTClientConnectionTests {
    private var port: UInt16 {
        get throws { try #require(MQTTBrokerTrait.port, "the suite's broker is not running") }
    }

    /// A connection to the suite's broker that has seen its CONNACK.
    private func connectedClient(_ name: String, keepAlive: UInt16 = 30, version: MQTTVersion = .v3_1_1) throws -> MQTTClientConnection {
        let client = MQTTClientConnection(host: "127.0.0.1", port: try port, clientID: uniqueName(name), keepAlive: keepAlive, version: version)
        try client.open()
        let events = try client.events { $0.contains(.connected(sessionPresent: false)) }
        try #require(events == [.connected(sessionPresent: false)])
        return client
    }

    // MARK: - Against mosquitto

    @Test func openReportsConnectedOnce() throws {
        let client = MQTTClientConnection(host: "127.0.0.1", port: try port, clientID: uniqueName("open"))
        #expect(!client.isOpen)
        #expect(client.fileDescriptor == nil)
        try client.open()
        #expect(client.isOpen)
        #expect(client.fileDescriptor != nil)
        #expect(try client.events { !$0.isEmpty } == [.connected(sessionPresent: false)])
        #expect(try client.poll(waitingAtMost: .milliseconds(50)) == [])
        client.close()
        #expect(!client.isOpen)
        #expect(client.fileDescriptor == nil)
    }

    @Test func subscribingToTwoTopicsGrantsBoth() throws {
        let client = try connectedClient("subscribe")
        defer { client.close() }
        let topics = [uniqueName("t/a"), uniqueName("t/b")]
        let id = try client.subscribe(topics)
        #expect(try client.events { !$0.isEmpty } == [.subscribed(packetID: id, granted: topics)])
    }

    @Test func qos0AndQoS1PublishesComeBackAsMessagesAndQoS1IsAcknowledged() throws {
        let client = try connectedClient("loop")
        defer { client.close() }
        let topic = uniqueName("loop")
        let subscription = try client.subscribe([topic], qos: 1)
        #expect(try client.events { !$0.isEmpty } == [.subscribed(packetID: subscription, granted: [topic])])

        #expect(try client.publish(topic: topic, payload: Array("zero".utf8), qos: 0) == nil)
        let id = try #require(try client.publish(topic: topic, payload: Array("one".utf8), qos: 1))
        let events = try client.events { $0.count >= 3 }
        // The broker's PUBACK and its forwarding of the message are separate flows with no defined order.
        #expect(Set(events) == [
            .message(topic: topic, payload: Array("zero".utf8), qos: 0),
            .message(topic: topic, payload: Array("one".utf8), qos: 1),
            .published(packetID: id),
        ])
        #expect(events.count == 3)
        #expect(try client.poll(waitingAtMost: .milliseconds(50)) == [])
    }

    @Test func aQoS2PublishIsDeliveredOnceAndCompleted() throws {
        let client = try connectedClient("qos2")
        defer { client.close() }
        let topic = uniqueName("qos2")
        let subscription = try client.subscribe([topic], qos: 2)
        #expect(try client.events { !$0.isEmpty } == [.subscribed(packetID: subscription, granted: [topic])])

        let id = try #require(try client.publish(topic: topic, payload: [1, 2, 3], qos: 2))
        let events = try client.events { $0.count >= 2 }
        #expect(Set(events) == [.message(topic: topic, payload: [1, 2, 3], qos: 2), .published(packetID: id)])
        #expect(events.count == 2)
        #expect(try client.poll(waitingAtMost: .milliseconds(100)) == [])
    }

    @Test func oneClientPublishesQoS1ToAnother() throws {
        let receiver = try connectedClient("receiver")
        let sender = try connectedClient("sender")
        defer { receiver.close(); sender.close() }
        let topic = uniqueName("widget/lamp")
        let subscription = try receiver.subscribe([topic])
        #expect(try receiver.events { !$0.isEmpty } == [.subscribed(packetID: subscription, granted: [topic])])

        let id = try #require(try sender.publish(topic: topic, payload: Array("on".utf8), qos: 1))
        #expect(try sender.events { !$0.isEmpty } == [.published(packetID: id)])
        #expect(try receiver.events { !$0.isEmpty } == [.message(topic: topic, payload: Array("on".utf8), qos: 1)])
    }

    @Test func a100KBPayloadArrivesWhole() throws {
        let receiver = try connectedClient("big-receiver")
        let sender = try connectedClient("big-sender")
        defer { receiver.close(); sender.close() }
        let topic = uniqueName("big")
        let subscription = try receiver.subscribe([topic])
        #expect(try receiver.events { !$0.isEmpty } == [.subscribed(packetID: subscription, granted: [topic])])

        // Not a repeating byte, so a chunk delivered twice or out of place would show.
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let id = try #require(try sender.publish(topic: topic, payload: payload, qos: 1))
        #expect(try sender.events { !$0.isEmpty } == [.published(packetID: id)])
        #expect(try receiver.events { !$0.isEmpty } == [.message(topic: topic, payload: payload, qos: 1)])
    }

    @Test func pingRequestsKeepAnIdleConnectionOpen() throws {
        // mosquitto drops a client silent for 1.5 × Keep Alive, so without PINGREQ this connection
        // would end within the idle loop.
        let client = try connectedClient("keepalive", keepAlive: 1)
        defer { client.close() }
        let idleUntil = ContinuousClock.now + .seconds(3)
        var events: [MQTTClientConnection.Event] = []
        while ContinuousClock.now < idleUntil {
            events += try client.poll(waitingAtMost: .milliseconds(200))
        }
        #expect(events == [])
        #expect(client.isOpen)
        #expect(client.pingRequestsSent > 0)
        // Still served, not just not yet noticed as gone.
        let topic = uniqueName("alive")
        let id = try client.subscribe([topic])
        #expect(try client.events { !$0.isEmpty } == [.subscribed(packetID: id, granted: [topic])])
    }

    @Test func aStoppedBrokerIsReportedAsClosedOnce() throws {
        // A broker of its own: stopping the suite's would end every other test's connection.
        let broker = try MQTTBrokerRig.start()
        defer { broker.stop() }
        let client = MQTTClientConnection(host: "127.0.0.1", port: broker.port, clientID: uniqueName("orphan"))
        try client.open()
        #expect(try client.events { !$0.isEmpty } == [.connected(sessionPresent: false)])

        broker.stop()
        let events = try client.events { !$0.isEmpty }
        #expect(events.count == 1)
        guard case .closed(let reason)? = events.first else {
            Issue.record("expected .closed, got \(events)")
            return
        }
        #expect(reason.contains("broker"))
        #expect(!client.isOpen)
        #expect(client.fileDescriptor == nil)
        for _ in 0..<3 { #expect(try client.poll(waitingAtMost: .milliseconds(20)) == []) }
        // Told it ended, the caller publishing anyway is a mistake.
        #expect(throws: LiveHostError.self) { try client.publish(topic: "t", payload: [], qos: 0) }
        client.close()
        #expect(try client.poll(waitingAtMost: .zero) == [])
    }

    @Test func mqtt5ConnectsSubscribesAndPublishes() throws {
        let client = try connectedClient("v5", version: .v5)
        defer { client.close() }
        let topic = uniqueName("v5")
        let subscription = try client.subscribe([topic])
        #expect(try client.events { !$0.isEmpty } == [.subscribed(packetID: subscription, granted: [topic])])
        let id = try #require(try client.publish(topic: topic, payload: [42], qos: 1))
        let events = try client.events { $0.count >= 2 }
        #expect(Set(events) == [.message(topic: topic, payload: [42], qos: 1), .published(packetID: id)])
        #expect(events.count == 2)
    }

    @Test func connectingToAClosedPortThrowsWithAHintToStartTheBroker() throws {
        // Bound but not listening: the port is ours, so nobody else can be listening there.
        let placeholder = try LoopbackSocket.bound()
        defer { Glibc.close(placeholder.fd) }
        let client = MQTTClientConnection(host: "127.0.0.1", port: placeholder.port, clientID: uniqueName("nobody"))
        let error = #expect(throws: LiveHostError.self) { try client.open() }
        #expect(error?.step == "connect")
        #expect(error?.hint.contains("python3 Harness/rigs/mqtt_broker.py") == true)
        #expect(!client.isOpen)
    }

    // MARK: - The caller's mistakes

    @Test func callsBeforeOpenThrow() throws {
        let client = MQTTClientConnection(host: "127.0.0.1", port: try port, clientID: uniqueName("early"))
        #expect(throws: LiveHostError.self) { try client.poll(waitingAtMost: .zero) }
        #expect(throws: LiveHostError.self) { try client.publish(topic: "t", payload: [], qos: 0) }
        #expect(throws: LiveHostError.self) { try client.subscribe(["t"]) }
        client.close()
        client.close()
        #expect(!client.isOpen)
    }

    @Test func badTopicsAndQoSThrowAndLeaveTheConnectionUp() throws {
        let client = try connectedClient("misuse")
        defer { client.close() }
        #expect(throws: LiveHostError.self) { try client.publish(topic: "a/+/b", payload: [], qos: 0) }
        #expect(throws: LiveHostError.self) { try client.publish(topic: "a/#", payload: [], qos: 0) }
        #expect(throws: LiveHostError.self) { try client.publish(topic: "", payload: [], qos: 0) }
        #expect(throws: LiveHostError.self) { try client.publish(topic: "a", payload: [], qos: 3) }
        #expect(throws: LiveHostError.self) { try client.subscribe([]) }
        #expect(throws: LiveHostError.self) { try client.subscribe(["a"], qos: 3) }
        #expect(throws: LiveHostError.self) { try client.open() }
        #expect(client.isOpen)
        #expect(try client.poll(waitingAtMost: .milliseconds(50)) == [])
    }

    @Test func packetIDsWrapFrom65535To1() throws {
        let client = try connectedClient("wrap")
        defer { client.close() }
        client.lastPacketID = 65534
        let topic = uniqueName("wrap")
        let ids = try (0..<3).map { _ throws(LiveHostError) in try client.publish(topic: topic, payload: [], qos: 1) }
        #expect(ids == [65535, 1, 2])
        let events = try client.events { $0.count >= 3 }
        #expect(Set(events) == [.published(packetID: 65535), .published(packetID: 1), .published(packetID: 2)])
    }

    // MARK: - Against a scripted broker

    @Test func aRefusedConnackClosesWithTheCodesName() throws {
        let broker = try ScriptedBroker()
        let client = MQTTClientConnection(host: "127.0.0.1", port: broker.port, clientID: uniqueName("refused"))
        try client.open()
        let peer = try broker.accept()
        #expect(try peer.packets(count: 1).map(\.type) == [.connect])
        try peer.send([0x20, 0x02, 0x00, 0x05])
        #expect(try client.events { !$0.isEmpty }
            == [.closed(reason: "the broker refused the connection: CONNACK 5 (not authorized)")])
        #expect(!client.isOpen)
        #expect(try client.poll(waitingAtMost: .zero) == [])
    }

    @Test func aMalformedPacketClosesNamingTheDecodeError() throws {
        let broker = try ScriptedBroker()
        let client = MQTTClientConnection(host: "127.0.0.1", port: broker.port, clientID: uniqueName("malformed"))
        try client.open()
        let peer = try broker.accept()
        // A good CONNACK, then a PUBACK whose fixed-header flags must be 0.
        try peer.send([0x20, 0x02, 0x00, 0x00, 0x42, 0x02, 0x00, 0x01])
        let events = try client.events { $0.count >= 2 }
        #expect(events.first == .connected(sessionPresent: false))
        guard events.count == 2, case .closed(let reason) = events[1] else {
            Issue.record("expected .connected then .closed, got \(events)")
            return
        }
        #expect(reason.contains("malformed"))
        #expect(reason.contains("MQTT PUBACK: at offset 0"))
        #expect(!client.isOpen)
        // A client must close on a protocol error: the scripted broker sees the end of the stream.
        #expect(try peer.readsEndOfStream())
    }

    @Test func aRepeatedQoS2PublishIsDeliveredOnceAndEveryStepAnswered() throws {
        let broker = try ScriptedBroker()
        let client = MQTTClientConnection(host: "127.0.0.1", port: broker.port, clientID: uniqueName("qos2-dup"))
        try client.open()
        let peer = try broker.accept()
        #expect(try peer.packets(count: 1).map(\.type) == [.connect])
        let publish = MQTTPublish(topic: "lamp", qos: 2, packetID: 7, payload: [1])
        var again = publish
        again.dup = true
        try peer.send([0x20, 0x02, 0x00, 0x00]
            + MQTTPacket(type: .publish, body: .publish(publish)).encoded(version: .v3_1_1)
            + MQTTPacket(type: .publish, body: .publish(again)).encoded(version: .v3_1_1)
            + MQTTPacket(type: .pubrel, body: .acknowledgement(packetID: 7, reasonCode: 0, properties: [])).encoded(version: .v3_1_1))
        let events = try client.events { $0.count >= 2 }
        #expect(events == [.connected(sessionPresent: false), .message(topic: "lamp", payload: [1], qos: 2)])
        #expect(try peer.packets(count: 3).map { "\($0.type) \($0.packetID ?? 0)" } == ["PUBREC 7", "PUBREC 7", "PUBCOMP 7"])
        #expect(try client.poll(waitingAtMost: .milliseconds(20)) == [])
        client.close()
        #expect(try peer.packets(count: 1).map(\.type) == [.disconnect])
    }
}

// MARK: - Helpers

private func uniqueName(_ prefix: String) -> String { "tether-test/\(prefix)/\(UUID().uuidString.prefix(8))" }

extension MQTTClientConnection {
    /// Polls until `done` holds for all events so far. The limit only keeps a broken test from
    /// hanging; a test never depends on how long this took.
    fileprivate func events(limit: Duration = .seconds(10), until done: ([Event]) -> Bool) throws -> [Event] {
        var events: [Event] = []
        let deadline = ContinuousClock.now + limit
        while !done(events), ContinuousClock.now < deadline {
            events += try poll(waitingAtMost: .milliseconds(100))
        }
        return events
    }
}

/// Why the suite's broker or a scripted peer could not do its part.
struct MQTTRigFailure: Error, CustomStringConvertible {
    var description: String
}

/// `python3 Harness/rigs/mqtt_broker.py --port 0`, from its `READY <port>` line until ``stop()``.
///
/// `@unchecked Sendable`: immutable after `init`; every stored property is a `let` (the port, the
/// log's URL, and Foundation's `Process`, which keeps its own state). ``MQTTBrokerTrait`` starts
/// it and calls ``stop()`` after the suite's tests finished, never two calls at once.
final class MQTTBrokerRig: @unchecked Sendable {
    let process: Process
    let port: UInt16
    private let stderrURL: URL

    private init(process: Process, port: UInt16, stderrURL: URL) {
        self.process = process
        self.port = port
        self.stderrURL = stderrURL
    }

    /// Starts the rig and waits (at most 20 s) for READY; when it exits first — mosquitto missing,
    /// say — the error carries the rig's own message, which says what to install.
    static func start() throws -> MQTTBrokerRig {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("Harness/rigs/mqtt_broker.py").path
        let stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent("tether-mqtt-broker-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--port", "0"]
        process.currentDirectoryURL = root
        let stdout = Pipe()
        process.standardOutput = stdout
        // A file, not a pipe: mosquitto logs every connection there and a full pipe would stall it.
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()

        let fd = stdout.fileHandleForReading.fileDescriptor
        var line: [UInt8] = []
        var port: UInt16?
        let deadline = ContinuousClock.now + .seconds(20)
        reading: while port == nil, ContinuousClock.now < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&pfd, 1, 100) > 0 else {
                if process.isRunning { continue } else { break }
            }
            var byte: UInt8 = 0
            guard Glibc.read(fd, &byte, 1) == 1 else { break reading }
            if byte == 0x0A {
                let text = String(decoding: line, as: UTF8.self)
                if text.hasPrefix("READY ") { port = UInt16(text.dropFirst(6)) }
                line = []
            } else {
                line.append(byte)
            }
        }
        let rig = MQTTBrokerRig(process: process, port: port ?? 0, stderrURL: stderrURL)
        guard port != nil else {
            rig.stop()
            let log = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: stderrURL)
            throw MQTTRigFailure(description: "python3 Harness/rigs/mqtt_broker.py --port 0 did not say READY "
                + "(exit status \(process.terminationStatus)): \(log.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return rig
    }

    /// SIGTERM (the rig stops mosquitto and exits), SIGKILL if it is still there after 10 s.
    func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = ContinuousClock.now + .seconds(10)
            while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: stderrURL)
    }
}

/// Runs a suite inside one broker's lifetime and tells its tests the port.
struct MQTTBrokerTrait: SuiteTrait, TestScoping {
    /// The running broker's port, inside the suite.
    @TaskLocal static var port: UInt16?

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let rig = try MQTTBrokerRig.start()
        defer { rig.stop() }
        try await Self.$port.withValue(rig.port) { try await function() }
    }
}

extension Trait where Self == MQTTBrokerTrait {
    /// A mosquitto for the suite, started before its first test and stopped after its last.
    static var mqttBroker: Self { MQTTBrokerTrait() }
}

/// A TCP socket on 127.0.0.1 with a kernel-picked port.
struct LoopbackSocket {
    let fd: Int32
    let port: UInt16

    static func bound() throws -> LoopbackSocket {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw MQTTRigFailure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Glibc.bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw MQTTRigFailure(description: "bind: \(String(cString: strerror(errno)))")
        }
        return LoopbackSocket(fd: fd, port: UInt16(bigEndian: address.sin_port))
    }
}

/// A listening socket standing in for a broker, so a test can send what mosquitto never would.
/// Everything is blocking with a 5 s receive limit and runs on the test's thread: the client's
/// connect completes in the listen backlog before ``accept()``.
final class ScriptedBroker {
    let listener: LoopbackSocket
    var port: UInt16 { listener.port }

    init() throws {
        listener = try LoopbackSocket.bound()
        guard listen(listener.fd, 1) == 0 else { throw MQTTRigFailure(description: "listen: \(String(cString: strerror(errno)))") }
    }

    deinit { Glibc.close(listener.fd) }

    func accept() throws -> Peer {
        let fd = Glibc.accept(listener.fd, nil, nil)
        guard fd >= 0 else { throw MQTTRigFailure(description: "accept: \(String(cString: strerror(errno)))") }
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return Peer(fd: fd)
    }

    /// The broker's end of one connection.
    final class Peer {
        let fd: Int32
        private var framer = MQTTStreamFramer()
        private var pending: [MQTTPacket] = []

        init(fd: Int32) { self.fd = fd }
        deinit { Glibc.close(fd) }

        func send(_ bytes: [UInt8]) throws {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written == bytes.count else { throw MQTTRigFailure(description: "the scripted broker wrote \(written) of \(bytes.count) bytes") }
        }

        /// The next `count` packets the client sent.
        func packets(count: Int) throws -> [MQTTPacket] {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while pending.count < count {
                let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw MQTTRigFailure(description: "the client sent \(pending.count) of \(count) packets, then \(n == 0 ? "closed" : "nothing")") }
                var failure: MQTTDecodeError?
                buffer.withUnsafeBytes { bytes in
                    framer.feed(UnsafeRawBufferPointer(rebasing: bytes[..<n])) { item in
                        guard case .packet(let packet) = item else { return }
                        switch MQTTPacket.decode(packet, version: .v3_1_1) {
                        case .success(let decoded): pending.append(decoded)
                        case .failure(let error): failure = error
                        }
                    }
                }
                if let failure { throw failure }
            }
            defer { pending.removeFirst(count) }
            return Array(pending.prefix(count))
        }

        /// `true` when the client closed its end (after any bytes still unread).
        func readsEndOfStream() throws -> Bool {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
                if n == 0 { return true }
                if n < 0 { return false }
            }
        }
    }
}
