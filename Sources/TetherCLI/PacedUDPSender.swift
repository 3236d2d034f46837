#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture

/// One captured datagram to send again, at its offset from the first one.
struct PacedDatagram: Sendable {
    /// Recorded time since the first datagram, in nanoseconds.
    var offsetNs: Int64
    var payload: [UInt8]
}

/// How faithfully a realtime replay kept the recorded pace.
struct PacingReport: Sendable {
    /// Datagrams sent.
    var sent: Int
    /// Datagrams the kernel refused (`sendto` failed, e.g. ECONNREFUSED from an earlier ICMP).
    var failed: Int
    /// |sent gap − recorded gap ÷ speed| over consecutive datagrams, in nanoseconds, sorted.
    var gapErrorsNs: [Int64]
    /// (last send − first send) − (last offset − first offset) ÷ speed: positive means late.
    var totalDriftNs: Int64
    /// Wall time the replay took.
    var elapsedNs: Int64
    /// Whether the sending thread ran under real-time scheduling (SCHED_FIFO), or why not.
    var scheduling: String = "normal"

    /// The `q`-quantile (0…1) of the gap errors by nearest rank, 0 when there are none.
    func gapErrorQuantile(_ q: Double) -> Int64 {
        guard !gapErrorsNs.isEmpty else { return 0 }
        let rank = Int((q * Double(gapErrorsNs.count)).rounded(.up))
        return gapErrorsNs[min(max(rank, 1), gapErrorsNs.count) - 1]
    }
}

/// Why a realtime replay could not start.
struct PacedSendError: Error, CustomStringConvertible {
    var description: String
}

/// Sends datagrams over UDP at their recorded pace, scaled by a speed factor.
///
/// Pacing uses CLOCK_MONOTONIC: sleep (absolute `clock_nanosleep`) until shortly before each
/// datagram's due time, then spin on the clock for the last stretch, because a sleeping thread
/// wakes tens of microseconds late on a busy machine while a spin is accurate to the clock's
/// resolution. The spin window adapts: it starts at `spinWindowNs` and grows to twice the worst
/// oversleep seen (capped at 20 ms), because on a loaded machine a sleeping thread may wake
/// milliseconds late. Every due time is computed from the start, never from the previous send, so
/// a late datagram does not push the rest later (no accumulated drift).
///
/// On a machine with few cores, other processes (the receiver, a capture) can preempt the sender in
/// the middle of its spin, which makes the rare gap milliseconds late. The sender therefore asks
/// for real-time scheduling (SCHED_FIFO) for the sending thread, as a pacing tool should; it gets
/// it as root or with CAP_SYS_NICE, and otherwise runs normally and says so in the report. It
/// sleeps between datagrams, so it never holds a core for longer than its spin window.
final class PacedUDPSender {
    private let socketDescriptor: Int32
    /// How long before a due time the sender stops sleeping and starts spinning.
    private var spinWindowNs: Int64
    /// The largest spin window the adaptation may reach.
    private let maxSpinWindowNs: Int64 = 20_000_000

    /// Open a UDP socket connected to `host:port` (IPv4 or IPv6; names are resolved).
    init(host: String, port: UInt16, spinWindowNs: Int64 = 2_000_000) throws(PacedSendError) {
        self.spinWindowNs = spinWindowNs
        var hints = addrinfo()
        hints.ai_socktype = SystemCalls.datagramSocket
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            let reason = String(cString: gai_strerror(status))
            throw PacedSendError(description: "cannot resolve \(host): \(reason). Give an address such as 127.0.0.1:12345.")
        }
        defer { freeaddrinfo(result) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else {
            throw PacedSendError(description: "cannot open a UDP socket: \(String(cString: strerror(errno)))")
        }
        guard connect(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw PacedSendError(description: "cannot address \(host):\(port): \(reason)")
        }
        var sendBuffer: Int32 = 4 * 1024 * 1024
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        socketDescriptor = descriptor
    }

    deinit { close(socketDescriptor) }

    /// Send every datagram at `offsetNs ÷ speed` after the start; `progress` is called after each
    /// send with the number sent so far. Returns how far the real gaps strayed from the recorded ones.
    func run(_ datagrams: [PacedDatagram], speed: Double, progress: (Int) -> Void = { _ in }) -> PacingReport {
        guard let firstOffset = datagrams.first?.offsetNs else {
            return PacingReport(sent: 0, failed: 0, gapErrorsNs: [], totalDriftNs: 0, elapsedNs: 0)
        }
        var sendTimes: [Int64] = []
        sendTimes.reserveCapacity(datagrams.count)
        var failed = 0
        let scheduling = Self.enterRealtimeScheduling()
        defer { Self.leaveRealtimeScheduling(scheduling.previous) }
        let start = Self.monotonicNs() + 1_000_000  // a millisecond to get going
        for datagram in datagrams {
            let due = start + Int64((Double(datagram.offsetNs &- firstOffset) / speed).rounded())
            wait(until: due)
            let sentAt = Self.monotonicNs()
            let result = datagram.payload.withUnsafeBytes { raw in
                send(socketDescriptor, raw.baseAddress, raw.count, 0)
            }
            if result < 0 { failed += 1 }
            sendTimes.append(sentAt)
            progress(sendTimes.count)
        }
        var errors: [Int64] = []
        errors.reserveCapacity(max(datagrams.count - 1, 0))
        for index in datagrams.indices.dropFirst() {
            let recordedGap = Double(datagrams[index].offsetNs &- datagrams[index - 1].offsetNs) / speed
            let sentGap = Double(sendTimes[index] &- sendTimes[index - 1])
            errors.append(Int64(abs(sentGap - recordedGap).rounded()))
        }
        errors.sort()
        let recordedSpan = Double(datagrams[datagrams.count - 1].offsetNs &- firstOffset) / speed
        let sentSpan = Double(sendTimes[sendTimes.count - 1] &- sendTimes[0])
        return PacingReport(
            sent: datagrams.count - failed, failed: failed, gapErrorsNs: errors,
            totalDriftNs: Int64((sentSpan - recordedSpan).rounded()),
            elapsedNs: sendTimes[sendTimes.count - 1] &- start, scheduling: scheduling.description)
    }

    /// Moves the calling thread to SCHED_FIFO at a low real-time priority. Returns the policy to
    /// restore and a description for the report.
    private static func enterRealtimeScheduling() -> (previous: (policy: Int32, parameters: sched_param)?, description: String) {
        var policy: Int32 = 0
        var parameters = sched_param()
        guard pthread_getschedparam(pthread_self(), &policy, &parameters) == 0 else {
            return (nil, "normal (the thread's scheduling could not be read)")
        }
        var realtime = sched_param()
        realtime.sched_priority = 10
        let code = pthread_setschedparam(pthread_self(), SCHED_FIFO, &realtime)
        guard code == 0 else {
            return (nil, "normal (SCHED_FIFO refused: \(String(cString: strerror(code))); run as root or grant CAP_SYS_NICE for steadier pacing)")
        }
        return ((policy, parameters), "SCHED_FIFO priority 10")
    }

    private static func leaveRealtimeScheduling(_ previous: (policy: Int32, parameters: sched_param)?) {
        guard var previous else { return }
        _ = pthread_setschedparam(pthread_self(), previous.policy, &previous.parameters)
    }

    private func wait(until due: Int64) {
        let sleepUntil = due - spinWindowNs
        if Self.monotonicNs() < sleepUntil {
            var target = timespec(tv_sec: Int(sleepUntil / 1_000_000_000), tv_nsec: Int(sleepUntil % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
            let oversleep = Self.monotonicNs() - sleepUntil
            if oversleep * 2 > spinWindowNs { spinWindowNs = min(oversleep * 2, maxSpinWindowNs) }
        }
        while Self.monotonicNs() < due {}
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    static func monotonicNs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }
}
