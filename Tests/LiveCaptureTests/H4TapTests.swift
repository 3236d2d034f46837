import CaptureKit
import Foundation
import Testing

@testable import LiveCapture

/// A tap between a fake host and a fake controller on loopback, recording into a capture set.
struct TapRig {
    let controllerListener: TestListener
    let tap: H4Tap
    let recorder: Recorder
    let log = TapLog()
    let setPath: String

    init(flushInterval: Duration = .seconds(1)) throws {
        controllerListener = try TestListener()
        tap = try H4Tap(listen: "127.0.0.1:0", controller: .tcp(host: "127.0.0.1", port: controllerListener.port))
        setPath = temporarySetPath()
        recorder = Recorder(setPath: setPath, title: "tap test", inputs: [tap.recorderInput], flushInterval: flushInterval)
        log.attach(to: tap)
        try recorder.start()
        tap.record(into: recorder, input: 0)
    }

    /// Starts the tap, takes the controller connection it opened, and connects a host.
    func connect() throws -> (host: TestConnection, controller: FakeController) {
        let port = try tap.start()
        let controller = FakeController(try controllerListener.accept())
        return (try TestConnection.connect(port: port), controller)
    }

    /// Stops the tap and seals the set.
    func finish() throws -> RecordingSummary {
        tap.stop()
        return try recorder.finish()
    }
}

/// ACL packets of a given payload length on handle 0x0040.
func aclPacket(_ length: Int, seed: UInt8 = 0) -> [UInt8] {
    [0x02, 0x40, 0x20, UInt8(length & 0xFF), UInt8(length >> 8)] + (0..<length).map { UInt8(truncatingIfNeeded: $0) &+ seed }
}

@Suite struct H4TapTests {
    static let resetComplete = FakeController.commandComplete(opcode: 0x0C03)
    static let shortACL = aclPacket(27, seed: 1)
    static let longACL = aclPacket(1021, seed: 2)

    /// Reset, a short ACL packet written a byte at a time, a long one at once; returns what the host got.
    func exchange(_ host: TestConnection) throws -> [UInt8] {
        var got: [UInt8] = []
        try host.send(H4Vectors.reset)
        got += host.receive(Self.resetComplete.count)
        for byte in Self.shortACL { try host.send([byte]) }
        got += host.receive(Self.shortACL.count)
        try host.send(Self.longACL)
        got += host.receive(Self.longACL.count)
        return got
    }

    static var expectedFrames: [[UInt8]] {
        [
            phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, resetComplete),
            phdrFrame(.sent, shortACL), phdrFrame(.received, shortACL),
            phdrFrame(.sent, longACL), phdrFrame(.received, longACL),
        ]
    }

    @Test func bytesCrossTheTapUnchangedBothWays() throws {
        let rig = try TapRig()
        let (host, controller) = try rig.connect()
        let hostGot = try exchange(host)
        #expect(hostGot == Self.resetComplete + Self.shortACL + Self.longACL)
        #expect(controller.received == H4Vectors.reset + Self.shortACL + Self.longACL)
        _ = try rig.finish()
    }

    @Test func theRecordingHoldsEveryPacketWithItsDirectionInOrder() throws {
        let rig = try TapRig()
        let (host, _) = try rig.connect()
        _ = try exchange(host)
        let summary = try rig.finish()
        let file = try readAll(summary.capturePath)
        #expect(file.frames.map(\.data) == Self.expectedFrames)
        #expect(file.interfaces.map(\.linkType) == [.bluetoothHCIH4WithPHDR])
        #expect(file.interfaces.first?.name == "h4tap:tcp:127.0.0.1:\(rig.controllerListener.port)")
        let times = file.frames.map(\.timestampNs)
        #expect(times == times.sorted())
        #expect(summary.interfaces.map(\.frames) == [6])
        let manifest = try String(contentsOfFile: rig.setPath + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("role: ble-hci"))
        #expect(manifest.contains("frames: 6"))
        #expect(manifest.contains("status: complete"))
    }

    @Test func tsharkReadsTheRecordingWithTheSameCountAndDirections() throws {
        let rig = try TapRig()
        let (host, _) = try rig.connect()
        _ = try exchange(host)
        let summary = try rig.finish()
        let rows = try tsharkRows(summary.capturePath, fields: ["hci_h4.direction", "hci_h4.type"])
        #expect(rows == [["0x00", "0x01"], ["0x01", "0x04"], ["0x00", "0x02"], ["0x01", "0x02"], ["0x00", "0x02"], ["0x01", "0x02"]])
    }

    @Test func thePacketHandlerGetsEachPacketWithDirectionAndArrivalTime() throws {
        let rig = try TapRig()
        let (host, _) = try rig.connect()
        let before = TapIO.wallClockNanoseconds()
        _ = try exchange(host)
        let after = TapIO.wallClockNanoseconds()
        _ = try rig.finish()
        let packets = rig.log.packets
        #expect(packets.map { phdrFrame($0.direction, $0.bytes) } == Self.expectedFrames)
        #expect(packets.allSatisfy { $0.timestampNs >= before && $0.timestampNs <= after })
        #expect(packets.map(\.timestampNs) == packets.map(\.timestampNs).sorted())
        let statistics = rig.tap.statistics
        #expect(statistics.sentPackets == 3 && statistics.receivedPackets == 3)
        #expect(statistics.sentBytes == H4Vectors.reset.count + Self.shortACL.count + Self.longACL.count)
        #expect(statistics.receivedBytes == Self.resetComplete.count + Self.shortACL.count + Self.longACL.count)
    }

    @Test func whenTheHostClosesTheTapClosesTheControllerAndServesTheNextHost() throws {
        let rig = try TapRig()
        let (host, controller) = try rig.connect()
        try host.send(H4Vectors.reset)
        _ = host.receive(Self.resetComplete.count)
        host.close()
        #expect(controller.connection.peerClosed())
        #expect(rig.log.notices.contains { $0.contains("the host 127.0.0.1:") && $0.contains("closed the connection") && $0.contains("waiting for the next host") })

        let second = try TestConnection.connect(port: rig.tap.port)
        _ = FakeController(try rig.controllerListener.accept())
        try second.send(H4Vectors.reset)
        #expect(second.receive(Self.resetComplete.count) == Self.resetComplete)
        #expect(rig.tap.statistics.hostConnections == 2)
        let summary = try rig.finish()
        #expect(try readAll(summary.capturePath).frames.map(\.data) == [
            phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete),
            phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete),
        ])
    }

    @Test func whenTheControllerClosesTheTapClosesTheHost() throws {
        let rig = try TapRig()
        let (host, controller) = try rig.connect()
        try host.send(H4Vectors.reset)
        _ = host.receive(Self.resetComplete.count)
        controller.connection.close()
        #expect(host.peerClosed())
        #expect(rig.log.notices.contains { $0.contains("the controller 127.0.0.1:\(rig.controllerListener.port) closed the connection") })
        _ = try rig.finish()
    }

    @Test func aHostIsClosedWithANoticeWhenTheControllerCannotBeReachedAgain() throws {
        var rig: TapRig? = try TapRig()
        let (host, controller) = try rig!.connect()
        let tap = rig!.tap
        let log = rig!.log
        try host.send(H4Vectors.reset)  // the session is up before the controller goes
        _ = host.receive(Self.resetComplete.count)
        controller.connection.close()
        #expect(host.peerClosed())
        rig = nil  // closes the fake controller's listening socket: nothing answers there any more
        let next = try TestConnection.connect(port: tap.port)
        #expect(next.peerClosed())
        #expect(log.notices.contains { $0.contains("connected but the controller could not be reached") && $0.contains("Connection refused") })
        tap.stop()
    }

    @Test func aFramingErrorStopsRecordingThatDirectionWhileForwardingGoesOn() throws {
        let rig = try TapRig()
        let (host, controller) = try rig.connect()
        try host.send(H4Vectors.reset)
        _ = host.receive(Self.resetComplete.count)
        // 0xFF is no packet indicator; the fake controller skips it and the NUL, and answers the reset after them.
        let garbage: [UInt8] = [0xFF, 0x00] + H4Vectors.reset
        try host.send(garbage)
        #expect(host.receive(Self.resetComplete.count) == Self.resetComplete)
        #expect(controller.received == H4Vectors.reset + garbage)
        let summary = try rig.finish()
        #expect(try readAll(summary.capturePath).frames.map(\.data) == [
            phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete), phdrFrame(.received, Self.resetComplete),
        ])
        #expect(rig.tap.statistics.framingErrors == 1)
        let notice = rig.log.notices.first { $0.contains("framing error") }
        #expect(notice?.contains("host→controller stream, byte offset 4") == true, "\(rig.log.notices)")
        #expect(notice?.contains("forwarding goes on") == true)
    }

    @Test func aQuietTapStillFlushesItsLastPacketToTheFile() async throws {
        let rig = try TapRig(flushInterval: .milliseconds(50))
        let (host, _) = try rig.connect()
        try host.send(H4Vectors.reset)
        _ = host.receive(Self.resetComplete.count)
        // No more traffic: only the tap's idle calls can push the last packet out of the recorder.
        let capture = rig.setPath + "/capture.pcapng"
        let flushed = await eventually { ((try? readAll(capture))?.frames.count ?? 0) == 2 }
        #expect(flushed, "the recorder kept the last packet in memory on a quiet tap")
        _ = try rig.finish()
    }

    @Test func aSecondHostIsRefusedWhileOneIsConnected() throws {
        let rig = try TapRig()
        let (host, _) = try rig.connect()
        try host.send(H4Vectors.reset)
        _ = host.receive(Self.resetComplete.count)
        let intruder = try TestConnection.connect(port: rig.tap.port)
        #expect(intruder.peerClosed())
        try host.send(H4Vectors.reset)
        #expect(host.receive(Self.resetComplete.count) == Self.resetComplete)
        #expect(rig.tap.statistics.refusedHosts == 1)
        #expect(rig.log.notices.contains { $0.contains("refused host") && $0.contains("one host at a time") })
        _ = try rig.finish()
    }

    @Test func aFailedRecorderWriteStopsRecordingButNotForwarding() throws {
        let rig = try TapRig()
        let (host, _) = try rig.connect()
        try rig.recorder.finish()  // every later write is refused
        try host.send(H4Vectors.reset)
        #expect(host.receive(Self.resetComplete.count) == Self.resetComplete)
        rig.tap.stop()
        #expect(rig.tap.recordingFailure?.kind == .misuse)
        #expect(rig.log.notices.contains { $0.contains("recording stopped") && $0.contains("Forwarding goes on") })
    }

    @Test func anUnreachableControllerFailsOpenWithWhatToDo() throws {
        let port = try TestListener().port  // closed again at once: nothing listens there
        let tap = try H4Tap(listen: "127.0.0.1:0", controller: .tcp(host: "127.0.0.1", port: port))
        let error = #expect(throws: LiveCaptureError.self) { try tap.open() }
        #expect(error?.kind == .system)
        #expect(error?.step == "connect to the controller at 127.0.0.1:\(port)")
        #expect(error?.detail.contains("Connection refused") == true)
        #expect(error?.hint.contains("Start the controller first") == true)
    }

    @Test func aListenPortInUseFailsOpenWithWhatToDo() throws {
        let controller = try TestListener()
        let busy = try TestListener()
        let tap = try H4Tap(listen: "127.0.0.1:\(busy.port)", controller: .tcp(host: "127.0.0.1", port: controller.port))
        let error = #expect(throws: LiveCaptureError.self) { try tap.open() }
        #expect(error?.hint.contains("Another program uses port \(busy.port)") == true)
    }

    @Test func afterStopTheTapNoLongerListensAndCannotRestart() throws {
        let rig = try TapRig()
        let port = try rig.tap.start()
        _ = try rig.controllerListener.accept()
        rig.tap.stop()
        rig.tap.stop()
        #expect(throws: TapTestSetupFailure.self) { try TestConnection.connect(port: port) }
        #expect(throws: LiveCaptureError.self) { try rig.tap.start() }
    }

    @Test func aSerialControllerOnAPseudoTerminalWorksLikeATCPOne() throws {
        let terminal = try PseudoTerminal()
        let tap = try H4Tap(listen: "127.0.0.1:0", controller: .serial(path: terminal.slavePath, baudRate: 115_200, flowControl: false))
        let log = TapLog()
        log.attach(to: tap)
        let host = try TestConnection.connect(port: try tap.start())
        try host.send(H4Vectors.reset)
        #expect(terminal.read(H4Vectors.reset.count) == H4Vectors.reset)
        terminal.write(Self.resetComplete)
        #expect(host.receive(Self.resetComplete.count) == Self.resetComplete)
        tap.stop()
        #expect(log.packets.map { phdrFrame($0.direction, $0.bytes) } == [phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete)])
        #expect(tap.interface.name == "h4tap:serial:\(terminal.slavePath),115200")
    }
}

@Suite struct H4AddressTests {
    @Test func tcpControllerParses() throws {
        #expect(try H4ControllerAddress(parsing: "tcp:127.0.0.1:9002") == .tcp(host: "127.0.0.1", port: 9002))
        #expect(try H4ControllerAddress(parsing: "tcp:[::1]:9002") == .tcp(host: "::1", port: 9002))
        #expect(H4ControllerAddress.tcp(host: "::1", port: 9002).description == "tcp:[::1]:9002")
    }

    @Test func serialControllerParsesBumbleStyleOptions() throws {
        #expect(try H4ControllerAddress(parsing: "serial:/dev/ttyUSB0") == .serial(path: "/dev/ttyUSB0", baudRate: 1_000_000, flowControl: false))
        #expect(try H4ControllerAddress(parsing: "serial:/dev/ttyACM0,115200,rtscts") == .serial(path: "/dev/ttyACM0", baudRate: 115_200, flowControl: true))
        #expect(try H4ControllerAddress(parsing: "/dev/ttyS1") == .serial(path: "/dev/ttyS1", baudRate: 1_000_000, flowControl: false))
    }

    @Test(arguments: ["tcp:127.0.0.1", "tcp:127.0.0.1:0", "tcp::9002", "tcp:::1:9002", "serial:", "serial:/dev/ttyUSB0,12345", "usb:0", ""])
    func badControllerSpecsAreRefusedWithTheFormsAccepted(text: String) {
        let error = #expect(throws: LiveCaptureError.self) { try H4ControllerAddress(parsing: text) }
        #expect(error?.kind == .misuse)
        #expect(error?.hint.contains("tcp:HOST:PORT") == true && error?.hint.contains("serial:") == true)
    }

    @Test func listenAddressParses() throws {
        #expect(try H4ListenAddress(parsing: "127.0.0.1:0") == H4ListenAddress(host: "127.0.0.1", port: 0))
        #expect(try H4ListenAddress(parsing: "[::1]:9000").description == "[::1]:9000")
        #expect(throws: LiveCaptureError.self) { try H4ListenAddress(parsing: "9000") }
        #expect(throws: LiveCaptureError.self) { try H4ListenAddress(parsing: "localhost:http") }
    }
}
