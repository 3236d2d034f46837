import IngestIntegration
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CaptureSet
import IngestCore

/// A non-blocking UDP socket bound to one local address, for the ingest server to read with its
/// own thread (``DatagramReader``).
///
/// Shared between threads as it is: its stored properties are `let` integers set in `init`, system
/// calls on one socket are safe from any thread, and ``IngestServer`` closes it once, after the
/// reader stopped.
final class BoundUDPSocket: Sendable {
    // Thread-safety: `descriptor` is immutable; `close()` is called once, after the reader stopped.

    /// Why a socket could not be made or bound.
    struct Failure: Error, CustomStringConvertible {
        /// The call that failed (`getaddrinfo`, `socket`, `bind`…).
        var step: String
        /// The system's words for it.
        var reason: String
        var description: String { "\(step): \(reason)" }
    }

    /// The socket.
    let descriptor: Int32
    /// The port it is bound to (the one the kernel picked when 0 was asked).
    let port: Int

    private init(descriptor: Int32, port: Int) {
        self.descriptor = descriptor
        self.port = port
    }

    /// Binds `host` (an address or a name; the first address of the name is used) and `port`.
    /// An IPv6 socket takes IPv6 only, so it never competes with the IPv4 one for a port.
    /// No `SO_REUSEADDR`: on Linux it lets a second UDP socket share the port and take the
    /// datagrams, so a second server would silently starve the first instead of failing.
    static func bind(host: String, port: Int) throws(Failure) -> BoundUDPSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        #else
        hints.ai_socktype = SOCK_DGRAM
        #endif
        hints.ai_flags = AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw Failure(step: "resolve \(host)", reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(found) }
        let info = first.pointee
        let descriptor = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
        guard descriptor >= 0 else { throw Failure(step: "socket", reason: FileIO.errnoText()) }
        do throws(Failure) {
            let flags = fcntl(descriptor, F_GETFL)
            guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0,
                  fcntl(descriptor, F_SETFD, FD_CLOEXEC) == 0 else {
                throw Failure(step: "make the socket non-blocking", reason: FileIO.errnoText())
            }
            if info.ai_family == AF_INET6 {
                var one: Int32 = 1
                guard setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                    throw Failure(step: "IPV6_V6ONLY", reason: FileIO.errnoText())
                }
            }
            guard systemBind(descriptor, info.ai_addr, info.ai_addrlen) == 0 else {
                throw Failure(step: "bind", reason: FileIO.errnoText())
            }
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0, let boundPort = SenderAddress(bound).port else {
                throw Failure(step: "getsockname", reason: FileIO.errnoText())
            }
            return BoundUDPSocket(descriptor: descriptor, port: Int(boundPort))
        } catch {
            _ = systemClose(descriptor)
            throw error
        }
    }

    /// The receive buffer as `SO_RCVBUF` reports it (Linux doubles the request for its
    /// bookkeeping), or nil if the query failed.
    var receiveBufferBytes: Int? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &value, &length) == 0 else { return nil }
        return Int(value)
    }

    /// Asks for a receive buffer of `bytes`; when the kernel caps it and `force` is set, asks again
    /// with `SO_RCVBUFFORCE` (Linux; refused without `CAP_NET_ADMIN`). Returns the buffer it got.
    @discardableResult
    func requestReceiveBuffer(_ bytes: Int, force: Bool) -> Int? {
        var asked = Int32(clamping: bytes)
        // A refusal leaves the kernel's default, which the caller reports as a short buffer.
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &asked, socklen_t(MemoryLayout<Int32>.size))
        #if os(Linux)
        if force, let actual = receiveBufferBytes, actual < bytes {
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUFFORCE, &asked, socklen_t(MemoryLayout<Int32>.size))
        }
        #endif
        return receiveBufferBytes
    }

    /// Closes the socket. Called once, when nothing reads it any more.
    func close() {
        _ = systemClose(descriptor)
    }
}

/// `bind` and `close` of the C library: this file's own names would otherwise shadow them.
private func systemBind(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    bind(descriptor, address, length)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

/// A datagram's sender as the kernel wrote it, and its address as text.
struct SenderAddress {
    var storage: sockaddr_storage

    init(_ storage: sockaddr_storage) { self.storage = storage }

    /// The bytes that tell two senders apart: 16 for IPv4, 28 for IPv6, 0 for anything else.
    var significantLength: Int {
        switch Int32(storage.ss_family) {
        case AF_INET: return MemoryLayout<sockaddr_in>.size
        case AF_INET6: return MemoryLayout<sockaddr_in6>.size
        default: return 0
        }
    }

    /// Whether `other` is the same sender (same family, address and port).
    func isSame(as other: SenderAddress) -> Bool {
        let length = significantLength
        guard length > 0, length == other.significantLength else { return false }
        return withUnsafeBytes(of: storage) { a in
            withUnsafeBytes(of: other.storage) { b in memcmp(a.baseAddress!, b.baseAddress!, length) == 0 }
        }
    }

    /// The UDP port, or nil for another family.
    var port: UInt16? {
        withUnsafeBytes(of: storage) { raw -> UInt16? in
            switch Int32(storage.ss_family) {
            case AF_INET: return UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout.offset(of: \sockaddr_in.sin_port)!, as: UInt16.self))
            case AF_INET6: return UInt16(bigEndian: raw.load(fromByteOffset: MemoryLayout.offset(of: \sockaddr_in6.sin6_port)!, as: UInt16.self))
            default: return nil
            }
        }
    }

    /// The sender as the core keys its streams: the address as text (`127.0.0.1`, `::1`) and the port.
    var source: DatagramSource {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(storage.ss_family)
        let written: Bool = withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET:
                let offset = MemoryLayout.offset(of: \sockaddr_in.sin_addr)!
                return inet_ntop(AF_INET, raw.baseAddress! + offset, &text, socklen_t(text.count)) != nil
            case AF_INET6:
                let offset = MemoryLayout.offset(of: \sockaddr_in6.sin6_addr)!
                return inet_ntop(AF_INET6, raw.baseAddress! + offset, &text, socklen_t(text.count)) != nil
            default:
                return false
            }
        }
        let address = written ? text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } : "family \(family)"
        return DatagramSource(address: address, port: port ?? 0)
    }
}
