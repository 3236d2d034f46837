import CaptureKit
import Foundation
import Testing
import TetherTestSupport
@testable import TetherCLI
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether replay --realtime` re-sends every captured ingest datagram, in order, over real UDP.
@Suite struct RealtimeReplayTests {
    /// A UDP socket on 127.0.0.1 with a free port, for receiving what the replay sends.
    final class Receiver {
        let descriptor: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            descriptor = fd
            guard fd >= 0, bound else { throw BackgroundFailure(description: "cannot bind a UDP socket: \(String(cString: strerror(errno)))") }
            port = Int(UInt16(bigEndian: address.sin_port))
            var buffer: Int32 = 8 << 20
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
            // A receive timeout only ends the wait if the sender stopped early; it is no assertion.
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        /// The next datagram, or `nil` when none came within the receive timeout.
        func receive() -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { return nil }
            return Array(buffer[0..<count])
        }
    }

    @Test func realtimeReplaySendsEveryCapturedIngestDatagramInOrder() throws {
        let folder = try TemporaryFolder("cli-tests")
        let payloads = (0..<40).map { Array("{\"name\":\"datagram \($0)\"}".utf8) }
        var frames: [CaptureFrame] = []
        for (index, payload) in payloads.enumerated() {
            let data = FrameBuilder.ethernetUDP(source: [127, 0, 0, 1], sourcePort: 40000, destination: [127, 0, 0, 1], destinationPort: 12345, payload: payload)
            frames.append(CaptureFrame(number: index + 1, interfaceIndex: 0, timestampNs: 1_700_000_000_000_000_000 + Int64(index) * 5_000_000, originalLength: data.count, data: data))
            // A datagram to another port, which realtime replay must leave out.
            let other = FrameBuilder.ethernetUDP(source: [127, 0, 0, 1], sourcePort: 40000, destination: [127, 0, 0, 1], destinationPort: 53, payload: [0xFF])
            frames.append(CaptureFrame(number: index + 2, interfaceIndex: 0, timestampNs: 1_700_000_000_000_000_000 + Int64(index) * 5_000_000 + 1, originalLength: other.count, data: other))
        }
        let source = folder.path("paced.pcapng").path
        try FrameBuilder.writePcapng([CaptureInterface(linkType: .ethernet, name: "lo")], frames, to: source)
        let set = folder.path("paced").path
        try Tools.tetherSucceeds(["import", source, "--out", set])

        let receiver = try Receiver()
        let result = try Tools.tetherSucceeds(["replay", "--realtime", "--speed", "2", "--to", "127.0.0.1:\(receiver.port)", set])
        var received: [[UInt8]] = []
        while received.count < payloads.count, let datagram = receiver.receive() { received.append(datagram) }
        #expect(received == payloads)
        let pacing = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("pacing ") }, "no pacing line in \(result.stdout)")
        #expect(pacing.contains("sent=40 failed=0"), "\(pacing)")
        for key in ["p50_ns=", "p99_ns=", "max_ns=", "drift_ns=", "speed=2.0"] {
            #expect(pacing.contains(key), "\(pacing) lacks \(key)")
        }
    }

    /// The sender's own thread sends every datagram once and in order — bursts with no gap, gaps
    /// shorter than the spin window, a gap much longer, a timestamp that steps back — and progress
    /// reaches the count on the calling thread without going backwards.
    @Test func pacedSenderSendsEveryDatagramInOrderWithProgressOnTheCallingThread() throws {
        let receiver = try Receiver()
        var offset: Int64 = 0
        var datagrams: [RecordedDatagram] = []
        for index in 0..<120 {
            // Mostly 1 ms apart, every tenth in a burst with the one before, one 60 ms pause.
            offset += index % 10 == 0 ? 0 : (index == 55 ? 60_000_000 : 1_000_000)
            datagrams.append(RecordedDatagram(offsetNs: offset, payload: Array("datagram \(index)".utf8) + [UInt8](repeating: UInt8(index), count: index % 7)))
        }
        datagrams.append(RecordedDatagram(offsetNs: offset + 1_000_000, payload: [])) // an empty datagram is sent too
        datagrams[30].offsetNs -= 3_000_000 // a timestamp that steps back: still sent in its place
        let sender = try PacedUDPSender(host: "127.0.0.1", port: UInt16(receiver.port))
        let caller = pthread_self()
        var seen: [Int] = []
        var onCaller = true
        let report = sender.run(datagrams, speed: 2) { sent in
            seen.append(sent)
            onCaller = onCaller && pthread_equal(pthread_self(), caller) != 0
        }
        var received: [[UInt8]] = []
        while received.count < datagrams.count, let datagram = receiver.receive() { received.append(datagram) }
        #expect(received == datagrams.map(\.payload))
        #expect(report.sent == datagrams.count && report.failed == 0)
        #expect(report.gapErrorsNs.count == datagrams.count - 1)
        #expect(report.gapErrorsNs == report.gapErrorsNs.sorted())
        #expect(seen.last == datagrams.count)
        #expect(seen == seen.sorted())
        #expect(onCaller)
        #expect(report.scheduling.contains("spin window"), "\(report.scheduling)")
        // Recorded span 168 ms at twice the speed: at least 84 ms, and not far beyond it.
        #expect(report.elapsedNs >= 84_000_000 && report.elapsedNs < 2_000_000_000, "\(report.elapsedNs)")
    }

    @Test func realtimeWithoutATargetIsAUsageError() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try Tools.tether(["replay", "--realtime", folder.url.path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--to HOST:PORT"))
    }
}
