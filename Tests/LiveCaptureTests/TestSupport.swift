import CaptureKit
import Foundation

/// A fresh folder under the system's temporary folder; the set goes in a child that does not exist yet.
func temporarySetPath(_ name: String = "set") -> String {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("tether-live-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
    return base.appendingPathComponent(name).path
}

/// Every frame of a capture file, with the reader's warnings. Throws on any read error.
func readAll(_ path: String) throws -> (interfaces: [CaptureInterface], frames: [CaptureFrame], warnings: [CaptureWarning]) {
    let reader = try CaptureFile.open(path: path)
    var frames: [CaptureFrame] = []
    while let frame = try reader.next() { frames.append(frame) }
    return (reader.interfaces, frames, reader.warnings)
}

/// Polls `condition` every 10 ms; gives up after `limit` so a broken test fails instead of hanging.
/// The limit is generous because it is not a timing check: in a full parallel run, suites that
/// wait on subprocesses can hold both of Swift Testing's threads for seconds, and the recorder's
/// task only starts when one is free. A condition that holds returns at once.
func eventually(limit: Duration = .seconds(60), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: limit)
    while clock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// A UDP socket bound to 127.0.0.1 on a free port, so datagrams sent to it are delivered (no ICMP).
final class LoopbackReceiver {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(fd) }

    /// Sends `payload` from a new socket to this receiver.
    func send(_ payload: [UInt8]) throws {
        let sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let sent = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(sender, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == payload.count else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }
}

/// `haystack` ends with `needle`.
func endsWith(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    haystack.count >= needle.count && Array(haystack.suffix(needle.count)) == needle
}
