import CaptureKit
import Dissectors
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import TetherTestSupport

/// `tether record --ble …`: the H4 tap in front of Bumble's virtual controllers, BLE and UDP in
/// one set, the BlueZ path on a kernel without Bluetooth, and the command line's checks.
@Suite(.serialized) struct RecordBLETests {
    static var smokeRig: URL { Tools.repositoryRoot.appendingPathComponent("Harness/rigs/h4tap_smoke.py") }

    /// A TCP port on 127.0.0.1 that nothing listens on right now.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BackgroundFailure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw BackgroundFailure(description: "bind 127.0.0.1:0: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// One UDP datagram from a fresh socket to 127.0.0.1:`port`.
    static func sendDatagram(_ payload: [UInt8], port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw BackgroundFailure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let sent = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard sent == payload.count else { throw BackgroundFailure(description: "sendto: errno \(errno)") }
    }

    /// Every frame of a capture file with its interface's link type.
    static func frames(_ path: String) throws -> (interfaces: [CaptureInterface], frames: [CaptureFrame]) {
        let reader = try CaptureFile.open(path: path)
        var frames: [CaptureFrame] = []
        while let frame = try reader.next() { frames.append(frame) }
        return (reader.interfaces, frames)
    }

    /// Bumble's two virtual controllers, a `tether record` with the tap in front of the first, and
    /// the smoke rig's GATT exchange through the tap. `extra` is added to the record command line;
    /// `after` runs once the exchange is done, before the recorder is interrupted.
    static func recordBumbleExchange(in folder: TemporaryFolder, extra: [String] = [], after: () throws -> Void = {}) throws -> (set: String, stdout: String) {
        let python = try Tools.pythonWithBumble()
        let tether = try Tools.tetherBinary()
        let (tapped, direct, listen) = (try freePort(), try freePort(), try freePort())
        let controllers = try BackgroundProcess(
            python, [Tools.repositoryRoot.appendingPathComponent("Harness/rigs/ciq_controllers.py").path,
                     "tcp-server:127.0.0.1:\(tapped)", "tcp-server:127.0.0.1:\(direct)"],
            in: folder, name: "controllers")
        defer { controllers.stop() }
        _ = try controllers.waitFor("Bumble's controllers to listen") { accepts(port: tapped) && accepts(port: direct) ? true : nil }

        let set = folder.path("Captures/bumble-tap").path
        let record = try BackgroundProcess(
            tether, ["record", "--ble", "tcp:127.0.0.1:\(tapped)", "--ble-listen", "127.0.0.1:\(listen)", "--out", set] + extra,
            in: folder, name: "record")
        _ = try record.waitFor("the recorder to start") { record.stdout.contains("Point the host stack at 127.0.0.1:\(listen)") ? true : nil }

        let rig = try Tools.run(python, [smokeRig.path, "--central", "tcp-client:127.0.0.1:\(listen)", "--peripheral", "tcp-client:127.0.0.1:\(direct)"])
        try #require(rig.status == 0, "h4tap_smoke.py exited \(rig.status): \(rig.stderr)\nrecord: \(record.stderr)")
        try after()
        let status = record.interruptAndWait()
        controllers.stop()
        try #require(status == 0, "record exited \(status.map(String.init) ?? "nothing: still running after SIGINT"): \(record.stderr)")
        return (set, record.stdout)
    }

    @Test func bumbleThroughTheTapRecordsAnLEConnectionAndATTTraffic() throws {
        let folder = try TemporaryFolder("cli-tests")
        let (set, stdout) = try Self.recordBumbleExchange(in: folder)
        #expect(stdout.contains("BLUETOOTH_HCI_H4_WITH_PHDR (201)"))
        let (interfaces, frames) = try Self.frames(set + "/capture.pcapng")
        #expect(interfaces.map(\.linkType) == [.bluetoothHCIH4WithPHDR])

        var dissector = FrameDissector()
        let dissected = frames.map { dissector.dissect($0, linkType: .bluetoothHCIH4WithPHDR) }
        #expect(dissected.allSatisfy { $0.problem == nil }, "\(dissected.compactMap(\.problem))")
        #expect(dissected.first?.summary == "HCI Command Reset")
        #expect(dissected.first?.direction == .sent)
        #expect(dissected.contains { $0.direction == .received && ($0.summary.contains("LE Connection Complete") || $0.summary.contains("LE Enhanced Connection Complete")) })
        let att = dissected.flatMap(\.att)
        #expect(att.contains { $0.direction == .sent && $0.opcode == .readRequest }, "no Read Request from the central")
        #expect(att.contains { $0.direction == .received && $0.opcode == .readResponse && $0.value == [1, 2, 3] }, "no Read Response 010203")
        #expect(att.contains { $0.direction == .sent && $0.opcode == .writeRequest && $0.value == [0x10, 0x11] }, "no Write Request 1011")
        #expect(att.filter { $0.direction == .received && $0.opcode == .handleValueNotification }.map(\.value) == [[0xAA], [0xBB, 0xCC]])
        #expect(Set(att.map(\.connectionHandle)).count == 1)

        let manifest = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("role: ble-hci"))
        #expect(manifest.contains("frames: \(frames.count)"))
        #expect(manifest.contains("status: complete"))
    }

    @Test func bleAndUDPTogetherGoIntoOneSetOnOneTimeline() throws {
        let folder = try TemporaryFolder("cli-tests")
        let udpPort = try Self.freePort()
        let datagrams: [[UInt8]] = [Array("one".utf8), Array("two".utf8), Array("three".utf8)]
        var capturePath = ""
        let (set, _) = try Self.recordBumbleExchange(in: folder, extra: ["--udp", "lo:\(udpPort)"]) {
            for datagram in datagrams { try Self.sendDatagram(datagram, port: udpPort) }
            capturePath = folder.path("Captures/bumble-tap/capture.pcapng").path
            // The recorder flushes within a second; wait for all three before stopping it.
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(30)
            while clock.now < deadline {
                if let read = try? Self.frames(capturePath), read.frames.filter({ $0.interfaceIndex == 0 }).count >= datagrams.count { return }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let (interfaces, frames) = try Self.frames(capturePath)
        #expect(interfaces.map(\.linkType.rawValue) == [1, 201])
        let udp = frames.filter { $0.interfaceIndex == 0 }
        let ble = frames.filter { $0.interfaceIndex == 1 }
        #expect(udp.count == datagrams.count)
        #expect(ble.count > 20)
        // The datagrams were sent after the BLE exchange ended: later on the one timeline, and after it in the file.
        let lastBLE = try #require(ble.map(\.timestampNs).max())
        #expect(udp.allSatisfy { $0.timestampNs > lastBLE })
        #expect(frames.suffix(datagrams.count).allSatisfy { $0.interfaceIndex == 0 })
        let manifest = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("role: ingest-udp"))
        #expect(manifest.contains("role: ble-hci"))
    }

    @Test func bluezWithoutKernelBluetoothFailsWithThePlainMessage() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = folder.path("Captures/hci0").path
        // socket(AF_BLUETOOTH = 31, SOCK_RAW = 3, BTPROTO_HCI = 1)
        let probe = socket(31, 3, 1)
        let probeErrno = errno
        if probe >= 0 { close(probe) }
        if probe < 0 && probeErrno == EAFNOSUPPORT {
            let result = try Tools.tether(["record", "--ble", "hci0", "--out", set])
            #expect(result.status == 1)
            #expect(result.stderr.contains("this kernel has no Bluetooth support (AF_BLUETOOTH: EAFNOSUPPORT)"), "\(result.stderr)")
            #expect(result.stderr.contains("H4 tap"))
            #expect(!FileManager.default.fileExists(atPath: set), "a failed start left a set behind")
        } else {
            // A machine with kernel Bluetooth: the recording works, or needs CAP_NET_RAW and says so.
            let result = try Tools.tether(["record", "--ble", "bluez:hci0", "--out", set, "--duration", "0.5"])
            #expect(result.status == 0 || (result.status == 1 && result.stderr.contains("CAP_NET_RAW")), "\(result.stderr)")
            if result.status == 0 {
                #expect(try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8).contains("role: ble-monitor"))
            }
        }
    }

    @Test func anUnreachableControllerFailsBeforeCreatingTheSet() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = folder.path("Captures/nothing").path
        let port = try Self.freePort()
        let result = try Tools.tether(["record", "--ble", "tcp:127.0.0.1:\(port)", "--out", set])
        #expect(result.status == 1)
        #expect(result.stderr.contains("connect to the controller at 127.0.0.1:\(port) failed"), "\(result.stderr)")
        #expect(result.stderr.contains("Harness/rigs/ciq_controllers.py"))
        #expect(!FileManager.default.fileExists(atPath: set))
    }

    @Test func aTapListeningBeyondLoopbackWarnsOnStderrNamingTheAddress() throws {
        let folder = try TemporaryFolder("cli-tests")
        // A controller that only needs to take the tap's connection: a listening socket's backlog does.
        let controller = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(controller >= 0)
        defer { close(controller) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(controller, $0, length) == 0 && listen(controller, 4) == 0 && getsockname(controller, $0, &length) == 0 }
        }
        try #require(listening, "listen on 127.0.0.1: errno \(errno)")
        let port = UInt16(bigEndian: address.sin_port)
        let set = folder.path("Captures/exposed").path
        let result = try Tools.tether(["record", "--ble", "tcp:127.0.0.1:\(port)", "--ble-listen", "0.0.0.0:0", "--out", set, "--duration", "0.2"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: the H4 tap listens on 0.0.0.0:"), "\(result.stderr)")
        #expect(result.stderr.contains("any host on the network that can reach this machine can connect"), "\(result.stderr)")
    }

    @Test(arguments: [
        (["record", "--out", "X"], "Nothing to record"),
        (["record", "--ble", "usb:0", "--out", "X"], "tcp:HOST:PORT"),
        (["record", "--ble", "bluez:eth0", "--out", "X"], "bluez:hciN"),
        (["record", "--ble", "hci0", "--ble-listen", "127.0.0.1:9000", "--out", "X"], "needs --ble tcp:HOST:PORT"),
        (["record", "--ble", "tcp:127.0.0.1:9001", "--ble-listen", "9000", "--out", "X"], "expected HOST:PORT"),
        (["record", "--ble", "tcp:127.0.0.1:9001", "--filter", "udp", "--out", "X"], "--filter applies to the UDP capture"),
    ])
    func badCommandLinesExitWithTheUsageCodeAndSayWhatToWrite(arguments: [String], message: String) throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try Tools.tether(arguments.map { $0 == "X" ? folder.path("set").path : $0 })
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
