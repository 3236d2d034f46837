import IngestIntegration
import LiveHosts
import Foundation
import LiveCapture

/// What a ``PluginSender`` did.
public struct PluginSendReport: Sendable, Hashable {
    /// Datagrams handed to the kernel.
    public var sent: Int
    /// Datagrams the kernel refused (`sendto` failed; counted, sending went on).
    public var failed: Int
    /// The first refusal's message, if any.
    public var firstFailure: String?
    /// The largest lateness of a send against its scheduled instant.
    public var maxLateness: Duration
    /// Payload bytes of the datagrams handed to the kernel (UDP payload, no headers).
    public var bytesSent: Int = 0
    /// Time from the start of sending to the last datagram, or to the moment sending stopped.
    public var elapsed: Duration = .zero
    /// Datagrams of the schedule that were never attempted because sending was cancelled.
    public var unsent: Int = 0
    /// Whether sending was cancelled before the schedule's end: its last datagram (the end
    /// message, when the schedule has one) was then never sent.
    public var cancelled: Bool { unsent > 0 }

    /// A report; the counts that are not given start at zero.
    public init(
        sent: Int, failed: Int, firstFailure: String?, maxLateness: Duration,
        bytesSent: Int = 0, elapsed: Duration = .zero, unsent: Int = 0
    ) {
        self.sent = sent
        self.failed = failed
        self.firstFailure = firstFailure
        self.maxLateness = maxLateness
        self.bytesSent = bytesSent
        self.elapsed = elapsed
        self.unsent = unsent
    }
}

/// Sends a ``PluginTrafficGenerator`` schedule as UDP datagrams to HOST:PORT, each at its offset
/// from the start, paced on a monotonic clock (a plugin on a phone does the same with its timer).
///
/// Nothing in it changes after `init`, and `sendto` on one UDP socket is safe from several threads
/// at once.
public final class PluginSender: Sendable {
    /// Where datagrams go, for messages.
    public let target: String
    private let fd: Int32
    private let address: [UInt8]

    /// Resolves `host` (a name such as `localhost`, or a literal address) and opens a UDP socket.
    /// - Throws: ``LiveHostError`` when the host does not resolve or no socket can be made.
    public init(host: String, port: UInt16) throws(LiveHostError) {
        target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_socktype = SystemCalls.datagramSocket
        hints.ai_flags = AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &result)
        guard code == 0, let info = result else {
            throw LiveHostError(
                target: target, step: "getaddrinfo", detail: String(cString: gai_strerror(code)),
                hint: "Use a host name that resolves here, or a literal address such as 127.0.0.1 or ::1.")
        }
        defer { freeaddrinfo(result) }
        let entry = info.pointee
        let fd = SystemCalls.socket(family: entry.ai_family, type: SystemCalls.datagramSocket)
        guard fd >= 0 else {
            throw LiveHostError(target: target, step: "socket", detail: String(cString: strerror(errno)), hint: "Check the process's file descriptor limit.")
        }
        self.fd = fd
        self.address = Array(UnsafeRawBufferPointer(start: entry.ai_addr, count: Int(entry.ai_addrlen)))
    }

    deinit { SystemCalls.close(fd) }

    /// Sends one datagram now.
    /// - Throws: ``LiveHostError`` when the kernel refuses it (for example `EMSGSIZE`).
    public func send(_ bytes: [UInt8]) throws(LiveHostError) {
        let sent = bytes.withUnsafeBytes { data in
            address.withUnsafeBytes { addr in
                sendto(fd, data.baseAddress, data.count, 0, addr.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(addr.count))
            }
        }
        if sent < 0 {
            throw LiveHostError(
                target: target, step: "sendto (\(bytes.count) bytes)", detail: String(cString: strerror(errno)),
                hint: "Check that the address is reachable and the datagram fits the path MTU.")
        }
    }

    /// Sends every datagram of `schedule` at `start + offset` on `clock`, in order. A datagram the
    /// kernel refuses is counted in the report and sending goes on (a plugin learns nothing of loss).
    ///
    /// Cancelling the task stops sending and returns what went out so far, with
    /// ``PluginSendReport/unsent`` counting the rest: an interrupted run must still say what it
    /// sent (the receiver's counts are compared with it).
    /// - Throws: only what `clock.sleep` throws other than `CancellationError`.
    public func send<C: Clock>(_ schedule: [ScheduledDatagram], clock: C) async throws -> PluginSendReport
    where C.Duration == Duration {
        let start = clock.now
        var report = PluginSendReport(sent: 0, failed: 0, firstFailure: nil, maxLateness: .zero)
        for (index, datagram) in schedule.enumerated() {
            let due = start.advanced(by: datagram.offset)
            do {
                if clock.now < due { try await clock.sleep(until: due, tolerance: nil) }
                try Task.checkCancellation()
            } catch is CancellationError {
                report.unsent = schedule.count - index
                break
            }
            let lateness = due.duration(to: clock.now)
            if lateness > report.maxLateness { report.maxLateness = lateness }
            do {
                try send(datagram.bytes)
                report.sent += 1
                report.bytesSent += datagram.bytes.count
            } catch {
                report.failed += 1
                if report.firstFailure == nil { report.firstFailure = error.description }
            }
            report.elapsed = start.duration(to: clock.now)
        }
        if report.unsent > 0 { report.elapsed = start.duration(to: clock.now) }
        return report
    }
}
