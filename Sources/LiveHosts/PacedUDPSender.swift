#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CaptureKit
import Foundation
import LiveCapture
import Synchronization

/// How faithfully a realtime replay kept the recorded pace.
public struct PacingReport: Sendable {
    /// Datagrams sent.
    public var sent: Int
    /// Datagrams the kernel refused (`sendto` failed, e.g. ECONNREFUSED from an earlier ICMP).
    public var failed: Int
    /// |sent gap − recorded gap ÷ speed| over consecutive datagrams, in nanoseconds, sorted.
    public var gapErrorsNs: [Int64]
    /// (last send − first send) − (last offset − first offset) ÷ speed: positive means late.
    public var totalDriftNs: Int64
    /// Wall time the replay took.
    public var elapsedNs: Int64
    /// How the sending thread ran: real-time scheduling (SCHED_FIFO) or why not, whether its memory
    /// was locked, the spin window it used and the page faults it took while sending.
    public var scheduling: String = "normal"

    /// The `q`-quantile (0…1) of the gap errors by nearest rank, 0 when there are none.
    public func gapErrorQuantile(_ q: Double) -> Int64 {
        guard !gapErrorsNs.isEmpty else { return 0 }
        let rank = Int((q * Double(gapErrorsNs.count)).rounded(.up))
        return gapErrorsNs[min(max(rank, 1), gapErrorsNs.count) - 1]
    }
}

/// Why a realtime replay could not start.
public struct PacedSendError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public var description: String
}

/// Sends datagrams over UDP at their recorded pace, scaled by a speed factor.
///
/// Pacing uses CLOCK_MONOTONIC: sleep (absolute `clock_nanosleep`) until shortly before each
/// datagram's due time, then spin on the clock for the last stretch, because a sleeping thread
/// wakes tens of microseconds late on a busy machine while a spin is accurate to the clock's
/// resolution. Every due time is computed from the start, never from the previous send, so a late
/// datagram does not push the rest later (no accumulated drift).
///
/// The sending happens on a thread of its own that does nothing else: the schedule and every
/// payload are laid out in one buffer before it starts, the process's memory is locked when the
/// kernel allows it (root or CAP_IPC_LOCK), and progress is read from an atomic counter by the
/// calling thread, so no allocation, page fault, terminal write or lock lands between two sends.
/// The thread asks for real-time scheduling (SCHED_FIFO), as a pacing tool should: on a machine
/// with few cores, other processes would otherwise preempt it in the middle of its spin. It gets it
/// as root or with CAP_SYS_NICE, and otherwise runs normally and says so.
///
/// The spin window starts at `spinWindowNs` (2 ms), widens to twice an oversleep it sees and
/// narrows back by 1/64 of the excess a datagram, but never beyond `maxSpinWindowNs` (5 ms) nor
/// beyond half the gap since the previous datagram was due. That bound matters: a real-time thread
/// that spins nearly all the time (a window grown to the whole gap after one long stall, as an
/// unbounded adaptation does) makes the kernel's real-time throttling (the deadline "fair server",
/// 50 ms a second for ordinary tasks) take the core away for milliseconds at a time — the 15–50 ms
/// outliers this sender used to show on a loaded machine.
public final class PacedUDPSender {
    private let socketDescriptor: Int32
    /// How long before a due time the sender stops sleeping and starts spinning, at rest.
    private let spinWindowNs: Int64
    /// The widest the spin window may grow after oversleeps.
    private let maxSpinWindowNs: Int64
    /// The real-time priority asked for the sending thread.
    static let realtimePriority: Int32 = 10

    /// Open a UDP socket connected to `host:port` (IPv4 or IPv6; names are resolved).
    public init(host: String, port: UInt16, spinWindowNs: Int64 = 2_000_000, maxSpinWindowNs: Int64 = 5_000_000) throws(PacedSendError) {
        self.spinWindowNs = max(spinWindowNs, 0)
        self.maxSpinWindowNs = max(maxSpinWindowNs, self.spinWindowNs)
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

    /// Send every datagram at `offsetNs ÷ speed` after the start; `progress` is called on the
    /// calling thread, a few times a second and once at the end, with the number sent so far.
    /// Returns how far the real gaps strayed from the recorded ones.
    public func run(_ datagrams: [RecordedDatagram], speed: Double, progress: (Int) -> Void = { _ in }) -> PacingReport {
        guard let firstOffset = datagrams.first?.offsetNs else {
            return PacingReport(sent: 0, failed: 0, gapErrorsNs: [], totalDriftNs: 0, elapsedNs: 0)
        }
        let plan = PacedPlan(datagrams, firstOffset: firstOffset, speed: speed, socket: socketDescriptor,
                             spinWindowNs: spinWindowNs, maxSpinWindowNs: maxSpinWindowNs)
        // Locked memory cannot be paged out or taken back under pressure, and MCL_FUTURE makes the
        // sending thread's stack resident before it starts. Refused without privilege: then the
        // plan is still touched in full, so the sends find it resident.
        let locked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0
        defer { if locked { munlockall() } }
        plan.start()
        var reported = 0
        while !plan.finished.load(ordering: .acquiring) {
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
            nanosleep(&pause, nil)
            let sent = plan.sent.load(ordering: .relaxed)
            if sent != reported {
                reported = sent
                progress(sent)
            }
        }
        plan.join()
        if plan.count != reported { progress(plan.count) }
        return plan.report(memoryLocked: locked)
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    static func monotonicNs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }
}

/// Everything the sending thread touches, laid out and touched before it starts, and what it
/// measured. The thread writes `sendTimes`, `failed` and the outcome fields; the calling thread
/// reads them only after joining it. `sent` and `finished` are the only shared state while it runs.
private final class PacedPlan {
    let count: Int
    private let socketDescriptor: Int32
    private let spinWindowNs: Int64
    private let maxSpinWindowNs: Int64
    /// Due times, nanoseconds after the start (offset ÷ speed, rounded).
    private let due: UnsafeMutableBufferPointer<Int64>
    /// Where each payload starts in `bytes`; `payloadStart[count]` is the end of the last.
    private let payloadStart: UnsafeMutableBufferPointer<Int>
    private let bytes: UnsafeMutableRawBufferPointer
    /// CLOCK_MONOTONIC when each datagram was handed to the kernel.
    private let sendTimes: UnsafeMutableBufferPointer<Int64>
    private let recordedGapsNs: [Double]

    let sent = Atomic<Int>(0)
    let finished = Atomic<Bool>(false)
    private var thread: pthread_t?
    // Outcome, written by the sending thread.
    private var startNs: Int64 = 0
    private var failed = 0
    private var widestWindowNs: Int64 = 0
    private var pageFaults = 0
    private var scheduling = "normal"

    init(_ datagrams: [RecordedDatagram], firstOffset: Int64, speed: Double, socket: Int32, spinWindowNs: Int64, maxSpinWindowNs: Int64) {
        count = datagrams.count
        socketDescriptor = socket
        self.spinWindowNs = spinWindowNs
        self.maxSpinWindowNs = maxSpinWindowNs
        due = .allocate(capacity: count)
        payloadStart = .allocate(capacity: count + 1)
        sendTimes = .allocate(capacity: count)
        sendTimes.initialize(repeating: 0)
        var total = 0
        for (index, datagram) in datagrams.enumerated() {
            due[index] = Int64((Double(datagram.offsetNs &- firstOffset) / speed).rounded())
            payloadStart[index] = total
            total += datagram.payload.count
        }
        payloadStart[count] = total
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
        var at = bytes.baseAddress!
        for datagram in datagrams {
            datagram.payload.withUnsafeBytes { source in
                if let from = source.baseAddress { at.copyMemory(from: from, byteCount: source.count) }
            }
            at += datagram.payload.count
        }
        self.bytes = bytes
        recordedGapsNs = datagrams.indices.dropFirst().map {
            Double(datagrams[$0].offsetNs &- datagrams[$0 - 1].offsetNs) / speed
        }
    }

    deinit {
        due.deallocate()
        payloadStart.deallocate()
        sendTimes.deallocate()
        bytes.deallocate()
    }

    /// Start the sending thread.
    func start() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        // A small stack of its own: with the memory locked (MCL_FUTURE) it is resident from the start.
        pthread_attr_setstacksize(&attributes, 512 * 1024)
        #if os(Linux)
        var created = pthread_t()
        #else
        var created: pthread_t?
        #endif
        let context = Unmanaged.passRetained(self).toOpaque()
        let code = pthread_create(&created, &attributes, { raw in
            let plan = Unmanaged<PacedPlan>.fromOpaque(raw!).takeRetainedValue()
            plan.sendAll()
            return nil
        }, context)
        if code == 0 {
            #if os(Linux)
            thread = created
            #else
            thread = created!
            #endif
        } else {
            // No thread to be had: send from this one (progress then only at the end).
            Unmanaged<PacedPlan>.fromOpaque(context).release()
            sendAll()
        }
    }

    func join() {
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    /// The sending thread's whole life: scheduling, then the paced loop, then `finished`.
    private func sendAll() {
        scheduling = Self.enterRealtimeScheduling()
        Self.touchStack()
        let faultsBefore = Self.threadPageFaults()
        let base = due.baseAddress!
        let times = sendTimes.baseAddress!
        let starts = payloadStart.baseAddress!
        let payloads = bytes.baseAddress!
        var window = spinWindowNs
        var widest = window
        var failures = 0
        let start = PacedUDPSender.monotonicNs() + 1_000_000 // a millisecond to get going
        var previousDue = start - 1_000_000
        for index in 0..<count {
            let dueNs = start + base[index]
            // Spin for at most half the gap since the previous due time: the thread then sleeps
            // at least half of every gap, so it never holds a core long enough to be throttled.
            // (A capture's timestamps may step back; such a datagram is due at once.)
            let spin = min(window, max(dueNs - previousDue, 0) / 2)
            previousDue = max(previousDue, dueNs)
            let sleepUntil = dueNs - spin
            if PacedUDPSender.monotonicNs() < sleepUntil {
                Self.sleep(until: sleepUntil)
                let oversleep = PacedUDPSender.monotonicNs() - sleepUntil
                if oversleep * 2 > window {
                    window = min(oversleep * 2, maxSpinWindowNs)
                    widest = max(widest, window)
                } else if window > spinWindowNs {
                    window -= (window - spinWindowNs + 63) / 64
                }
            }
            var now = PacedUDPSender.monotonicNs()
            while now < dueNs { now = PacedUDPSender.monotonicNs() }
            let result = send(socketDescriptor, payloads + starts[index], starts[index + 1] - starts[index], 0)
            times[index] = now
            if result < 0 { failures += 1 }
            sent.store(index + 1, ordering: .relaxed)
        }
        pageFaults = Self.threadPageFaults() - faultsBefore
        startNs = start
        failed = failures
        widestWindowNs = widest
        finished.store(true, ordering: .releasing)
    }

    /// The gap errors and the rest, once the sending thread has been joined.
    func report(memoryLocked: Bool) -> PacingReport {
        var errors: [Int64] = []
        errors.reserveCapacity(recordedGapsNs.count)
        for index in recordedGapsNs.indices {
            let sentGap = Double(sendTimes[index + 1] &- sendTimes[index])
            errors.append(Int64(abs(sentGap - recordedGapsNs[index]).rounded()))
        }
        errors.sort()
        let recordedSpan = Double(due[count - 1] &- due[0])
        let sentSpan = Double(sendTimes[count - 1] &- sendTimes[0])
        var description = scheduling
        description += memoryLocked ? ", memory locked" : ", memory not locked (needs root or CAP_IPC_LOCK)"
        description += "; spin window \(pacingDurationText(spinWindowNs))"
        if widestWindowNs > spinWindowNs { description += " (widened to \(pacingDurationText(widestWindowNs)) after a late wake-up)" }
        description += "; \(pageFaults) page faults while sending"
        return PacingReport(
            sent: count - failed, failed: failed, gapErrorsNs: errors,
            totalDriftNs: Int64((sentSpan - recordedSpan).rounded()),
            elapsedNs: sendTimes[count - 1] &- startNs, scheduling: description)
    }

    /// Sleeps until `deadline` on CLOCK_MONOTONIC, through interruptions by signals.
    private static func sleep(until deadline: Int64) {
        #if os(Linux)
        // Absolute, so a wake-up that comes late does not make the next sleep longer.
        var target = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
        #else
        // Darwin has no clock_nanosleep: a relative sleep, recomputed after each interruption.
        while true {
            let remaining = deadline - PacedUDPSender.monotonicNs()
            guard remaining > 0 else { return }
            var pause = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
            if nanosleep(&pause, nil) == 0 { return }
        }
        #endif
    }

    /// Moves the calling thread to SCHED_FIFO at a low real-time priority. Returns a description
    /// for the report. (Timer slack needs no change: real-time threads have none, and an ordinary
    /// thread's 50 µs falls inside the spin window, so it never delays a send.)
    private static func enterRealtimeScheduling() -> String {
        var realtime = sched_param()
        realtime.sched_priority = PacedUDPSender.realtimePriority
        let code = pthread_setschedparam(pthread_self(), SCHED_FIFO, &realtime)
        guard code == 0 else {
            return "normal (SCHED_FIFO refused: \(String(cString: strerror(code))); run as root or grant CAP_SYS_NICE for steadier pacing)"
        }
        return "SCHED_FIFO priority \(PacedUDPSender.realtimePriority)"
    }

    /// Writes to the first 64 KiB of the thread's stack so the loop never faults one in.
    @inline(never)
    private static func touchStack() {
        withUnsafeTemporaryAllocation(byteCount: 64 * 1024, alignment: 16) { buffer in
            #if os(Linux)
            explicit_bzero(buffer.baseAddress!, buffer.count) // a write the optimizer keeps
            #else
            _ = memset_s(buffer.baseAddress!, buffer.count, 0, buffer.count)
            #endif
        }
    }

    /// Minor and major page faults the calling thread has taken (the whole process's on Darwin,
    /// which counts no faults per thread).
    private static func threadPageFaults() -> Int {
        var usage = rusage()
        #if os(Linux)
        let rusageThread: Int32 = 1 // RUSAGE_THREAD, which Glibc's Swift module leaves out
        guard getrusage(__rusage_who_t(rusageThread), &usage) == 0 else { return 0 }
        #else
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        #endif
        return Int(usage.ru_minflt + usage.ru_majflt)
    }
}

/// A duration for the scheduling line: `850 ns`, `12.5 µs`, `2.00 ms`, `1.250 s`.
func pacingDurationText(_ nanoseconds: Int64) -> String {
    let value = Double(nanoseconds)
    switch abs(value) {
    case ..<1_000: return "\(nanoseconds) ns"
    case ..<1_000_000: return String(format: "%.1f µs", value / 1_000)
    case ..<1_000_000_000: return String(format: "%.2f ms", value / 1_000_000)
    default: return String(format: "%.3f s", value / 1_000_000_000)
    }
}
