import Foundation
@testable import IngestLive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IngestCore
import Testing

@testable import IngestIntegration
import LiveHosts

/// A UDP socket on 127.0.0.1, non-blocking, with the receive buffer asked for.
private func loopbackSocket(receiveBuffer: Int32? = nil, bound: Bool) throws -> (descriptor: Int32, port: UInt16) {
    #if canImport(Glibc)
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    #else
    let descriptor = socket(AF_INET, SOCK_DGRAM, 0)
    #endif
    try #require(descriptor >= 0)
    if var size = receiveBuffer {
        try #require(setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0)
    }
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    guard bound else { return (descriptor, 0) }
    var address = loopback(port: 0)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    try #require(result == 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return (descriptor, UInt16(bigEndian: address.sin_port))
}

private func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(port.bigEndian)
    address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
    return address
}

/// Sends `count` datagrams of `size` bytes to 127.0.0.1:`port`; returns how many the kernel took.
private func flood(_ sender: Int32, port: UInt16, count: Int, size: Int) -> Int {
    var address = loopback(port: port)
    let payload = [UInt8](repeating: 0x78, count: size)
    var taken = 0
    for _ in 0..<count {
        let sent = payload.withUnsafeBytes { data in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sender, data.baseAddress, data.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if sent == size { taken += 1 }
    }
    return taken
}

/// Datagrams queued on `descriptor` now, read and counted.
private func drain(_ descriptor: Int32) -> Int {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var count = 0
    while buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, 0) }) >= 0 { count += 1 }
    return count
}

@Suite struct SocketReceiveDropsTests {
    @Test func aFloodedSocketThatIsNotReadCountsWhatTheKernelDropped() throws {
        try #require(SocketReceiveDrops.isSupported, "the drops counter is Linux's; this test runs on Linux")
        // The smallest buffer the kernel allows holds a few datagrams; the rest of the flood is dropped.
        let receiver = try loopbackSocket(receiveBuffer: 1024, bound: true)
        let sender = try loopbackSocket(bound: false)
        defer { close(receiver.descriptor); close(sender.descriptor) }
        let sent = flood(sender.descriptor, port: receiver.port, count: 500, size: 512)
        let drops = try #require(SocketReceiveDrops.count(descriptor: receiver.descriptor))
        let queued = drain(receiver.descriptor)
        #expect(drops > 0)
        // On loopback a datagram is either queued for the reader or dropped: nothing else loses it.
        #expect(Int(drops) + queued == sent)
    }

    @Test func aSocketWithRoomDropsNothing() throws {
        try #require(SocketReceiveDrops.isSupported, "the drops counter is Linux's; this test runs on Linux")
        let receiver = try loopbackSocket(bound: true)
        let sender = try loopbackSocket(bound: false)
        defer { close(receiver.descriptor); close(sender.descriptor) }
        let sent = flood(sender.descriptor, port: receiver.port, count: 5, size: 100)
        #expect(SocketReceiveDrops.count(descriptor: receiver.descriptor) == 0)
        #expect(drain(receiver.descriptor) == sent)
    }

    @Test func aDescriptorThatIsNoSocketHasNoCount() {
        #expect(SocketReceiveDrops.count(descriptor: -1) == nil)
    }

    @Test func theTallyAddsEverySocketsGrowthAcrossTheCounterWrapping() {
        var tally = ReceiveDropTally(sockets: 2)
        tally.record(10, socket: 0)
        tally.record(3, socket: 1)
        tally.record(12, socket: 0)
        #expect(tally.total == 15)
        // Socket 1's 32-bit counter wraps: 2³² − 2 → 5 is seven more drops, not minus four billion.
        tally.record(UInt32.max - 1, socket: 1)
        tally.record(5, socket: 1)
        #expect(tally.total == 12 + (Int(UInt32.max) - 1) + 7)
        // A socket the tally does not know changes nothing.
        tally.record(100, socket: 2)
        #expect(tally.total == 12 + (Int(UInt32.max) - 1) + 7)
    }

    @Test func theStatusLineShowsKernelDropsWhereTheyAreCounted() {
        var counters = IngestCounters()
        counters.datagrams = 12
        counters.dataPoints = 60
        counters.streamsStarted = 1
        var status = IngestServerStatus(counters: counters, chunksStored: 3, dataPointsStored: 60, chunksPending: 0, lastStoreError: nil, socketErrors: 0)
        status.kernelDrops = 7
        #expect(status.description == "datagrams 12 · kernel drops 7 · points 60 stored 60 · rejected 0 · streams 1")
    }

    @Test func aServerThatKeepsUpReportsZeroKernelDrops() async throws {
        try #require(SocketReceiveDrops.isSupported, "the drops counter is Linux's; this test runs on Linux")
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: MemoryIngestSink())
        try await server.start()
        let port = try #require(server.port)
        let sender = try loopbackSocket(bound: false)
        defer { close(sender.descriptor) }
        #expect(flood(sender.descriptor, port: UInt16(port), count: 3, size: 10) == 3)
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .seconds(10))
        while server.status.counters.datagrams < 3, clock.now < end { try await Task.sleep(for: .milliseconds(10)) }
        let status = try await server.stop()
        #expect(status.counters.datagrams == 3)
        #expect(status.kernelDrops == 0)
    }
}
