import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A UDP socket bound to 127.0.0.1 on a free port, read only when asked: the far end of what a
/// test sends through `tether`, or a receiver left unread on purpose so the kernel drops.
final class LoopbackUDPSocket {
    let descriptor: Int32
    /// The bound port (0 for a socket that only sends).
    private(set) var port: UInt16 = 0

    /// A socket; `listening` binds it to a free port on 127.0.0.1, `receiveBuffer` asks for that
    /// `SO_RCVBUF` before binding (the kernel doubles it and applies its minimum).
    init(listening: Bool = true, receiveBuffer: Int32? = nil) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_DGRAM, 0)
        #endif
        guard descriptor >= 0 else { throw BackgroundFailure(description: "socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer {
            guard setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw BackgroundFailure(description: "SO_RCVBUF: \(String(cString: strerror(errno)))")
            }
        }
        // Reads never block: `drain` takes what is queued and returns.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        guard listening else { return }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw BackgroundFailure(description: "bind: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(port.bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        return address
    }

    /// Sends `bytes` to 127.0.0.1:`port`; `true` when the kernel took it.
    @discardableResult
    func send(_ bytes: [UInt8], to port: UInt16) -> Bool {
        var address = Self.loopback(port: port)
        let sent = bytes.withUnsafeBytes { data in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, data.baseAddress, data.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count
    }

    /// Reads every datagram queued now: how many, and their payload bytes in all.
    func drain() -> (datagrams: Int, bytes: Int) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var datagrams = 0, bytes = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { break }
            datagrams += 1
            bytes += count
        }
        return (datagrams, bytes)
    }
}
