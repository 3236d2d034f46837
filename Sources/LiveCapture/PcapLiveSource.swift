import CPcap
import CaptureKit
import Foundation

/// A libpcap capture on one interface (`lo`, `any`, `eth0`, …): immediate mode, nanosecond
/// timestamps where the platform allows them, a large kernel buffer, and an optional BPF filter.
///
/// The handle is activated in the initializer, so permission and device errors surface before any
/// file is created. Drops are read from `pcap_stats` (`ps_drop + ps_ifdrop`).
///
/// `@unchecked Sendable`: `stopRequested`, `closed` and `lastStatistics` are used under `lock` only;
/// `handle` is used by the thread inside `run`, by `statistics()`/`close()` only after `run` returned
/// (the ``LiveSource`` lifecycle), and by `stop()` for `pcap_breakloop`, which is safe from any thread.
public final class PcapLiveSource: LiveSource, @unchecked Sendable {
    // Thread-safety: `handle` is used by the one thread inside `run` and by `close()` after `run`
    // returned; `stop()` only calls `pcap_breakloop`, which libpcap documents as safe from another
    // thread. The mutable flags are guarded by `lock`.

    /// How the source was asked to capture.
    public struct Options: Sendable, Hashable {
        /// Bytes kept of each frame.
        public var snapLength: Int32
        /// Kernel ring buffer size in bytes; a larger buffer survives longer bursts without drops.
        public var bufferSize: Int32
        /// libpcap's read timeout: the longest a read blocks before the source reports ``LiveSourceEvent/idle``.
        public var readTimeoutMilliseconds: Int32
        /// A BPF filter expression (`udp port 12345`), or `nil` for every frame.
        public var filter: String?
        /// Whether to ask for promiscuous mode (never needed on `lo` or `any`).
        public var promiscuous: Bool
        /// Where libpcap offers Linux cooked headers (`any`), record `LINUX_SLL2` rather than `LINUX_SLL`.
        public var prefersLinuxSLL2: Bool

        /// Defaults: 262144-byte snap length, 32 MiB buffer, 100 ms read timeout, no filter, SLL2 on `any`.
        public init(
            snapLength: Int32 = 262_144, bufferSize: Int32 = 32 << 20, readTimeoutMilliseconds: Int32 = 100,
            filter: String? = nil, promiscuous: Bool = false, prefersLinuxSLL2: Bool = true
        ) {
            self.prefersLinuxSLL2 = prefersLinuxSLL2
            self.snapLength = snapLength
            self.bufferSize = bufferSize
            self.readTimeoutMilliseconds = readTimeoutMilliseconds
            self.filter = filter
            self.promiscuous = promiscuous
        }

        /// Options for the ingest use: `udp port N`.
        public static func udpPort(_ port: UInt16) -> Options {
            Options(filter: "udp port \(port)")
        }
    }

    /// The interface name given to libpcap.
    public let device: String
    /// The options the source was opened with.
    public let options: Options
    /// Whether libpcap delivers nanosecond timestamps (`false`: microseconds, see ``notices``).
    public let nanosecondTimestamps: Bool
    public let interface: CaptureInterface
    public let notices: [String]
    public var idleInterval: Duration { .milliseconds(Int64(options.readTimeoutMilliseconds)) }

    private let handle: OpaquePointer
    private let lock = NSLock()
    private var stopRequested = false
    private var closed = false
    private var lastStatistics: InterfaceStatistics?

    /// Opens and activates a capture on `device`.
    /// - Throws: ``LiveCaptureError`` with kind `.permissionDenied` (run as root, or
    ///   `setcap cap_net_raw,cap_net_admin+eip` on the binary), `.noSuchDevice` (the message lists
    ///   the devices libpcap can see), `.interfaceDown`, `.badFilter`, or `.system`.
    public init(device: String, options: Options = Options()) throws(LiveCaptureError) {
        self.device = device
        self.options = options
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        guard let handle = pcap_create(device, &errbuf) else {
            throw LiveCaptureError(
                kind: .system, source: device, step: "pcap_create", detail: Self.text(errbuf),
                hint: Self.deviceHint()
            )
        }
        var notices: [String] = []
        func fail(_ step: String, _ code: Int32) -> LiveCaptureError {
            let error = Self.activationError(device: device, step: step, code: code, message: String(cString: pcap_geterr(handle)))
            pcap_close(handle)
            return error
        }
        var code = pcap_set_snaplen(handle, options.snapLength)
        if code != 0 { throw fail("pcap_set_snaplen(\(options.snapLength))", code) }
        code = pcap_set_promisc(handle, options.promiscuous ? 1 : 0)
        if code != 0 { throw fail("pcap_set_promisc", code) }
        code = pcap_set_timeout(handle, options.readTimeoutMilliseconds)
        if code != 0 { throw fail("pcap_set_timeout", code) }
        code = pcap_set_immediate_mode(handle, 1)
        if code != 0 { throw fail("pcap_set_immediate_mode", code) }
        code = pcap_set_buffer_size(handle, options.bufferSize)
        if code != 0 { throw fail("pcap_set_buffer_size(\(options.bufferSize))", code) }
        code = pcap_set_tstamp_precision(handle, Int32(PCAP_TSTAMP_PRECISION_NANO))
        if code != 0 {
            notices.append(
                "\(device): libpcap refused nanosecond timestamps (\(String(cString: pcap_statustostr(code)))); "
                    + "recording with microsecond precision"
            )
        }
        code = pcap_activate(handle)
        if code < 0 { throw fail("pcap_activate", code) }
        if code > 0 {
            notices.append("\(device): pcap_activate warned: \(String(cString: pcap_statustostr(code))) \(String(cString: pcap_geterr(handle)))")
        }
        let nano = pcap_get_tstamp_precision(handle) == Int32(PCAP_TSTAMP_PRECISION_NANO)
        if !nano, notices.allSatisfy({ !$0.contains("microsecond") }) {
            notices.append("\(device): the capture delivers microsecond timestamps; recording with microsecond precision")
        }

        if let filter = options.filter {
            var program = bpf_program()
            if pcap_compile(handle, &program, filter, 1, PCAP_NETMASK_UNKNOWN) != 0 {
                let message = String(cString: pcap_geterr(handle))
                pcap_close(handle)
                throw LiveCaptureError(
                    kind: .badFilter, source: device, step: "pcap_compile(\"\(filter)\")", detail: message,
                    hint: "Check the filter expression against pcap-filter(7), for example \"udp port 12345\"."
                )
            }
            defer { pcap_freecode(&program) }
            if pcap_setfilter(handle, &program) != 0 {
                let message = String(cString: pcap_geterr(handle))
                pcap_close(handle)
                throw LiveCaptureError(
                    kind: .badFilter, source: device, step: "pcap_setfilter(\"\(filter)\")", detail: message,
                    hint: "The kernel refused the compiled filter; try a simpler expression."
                )
            }
        }

        if options.prefersLinuxSLL2, pcap_datalink(handle) == Int32(LinkType.linuxSLL.rawValue) {
            // SLL2 also carries the interface index, which tells the interfaces of `any` apart.
            var list: UnsafeMutablePointer<Int32>?
            let count = pcap_list_datalinks(handle, &list)
            if count > 0, let list {
                let offered = UnsafeBufferPointer(start: list, count: Int(count))
                if offered.contains(Int32(LinkType.linuxSLL2.rawValue)), pcap_set_datalink(handle, Int32(LinkType.linuxSLL2.rawValue)) != 0 {
                    notices.append("\(device): libpcap refused LINUX_SLL2 (\(String(cString: pcap_geterr(handle)))); recording LINUX_SLL")
                }
            }
            if let list { pcap_free_datalinks(list) }
        }
        let linkType = LinkType(rawValue: UInt32(bitPattern: pcap_datalink(handle)))
        self.handle = handle
        self.nanosecondTimestamps = nano
        self.notices = notices
        self.interface = CaptureInterface(
            linkType: linkType, name: device, description: options.filter.map { "filter: \($0)" },
            snapLength: UInt32(bitPattern: pcap_snapshot(handle)), nanosecondsPerTick: nano ? 1 : 1000
        )
    }

    deinit { close() }

    public func run(_ handler: (LiveSourceEvent) throws -> Void) throws {
        if lock.withLock({ closed }) {
            throw LiveCaptureError(kind: .misuse, source: device, step: "run", detail: "the source is closed", hint: "Open a new PcapLiveSource.")
        }
        let nanosPerFrac: Int64 = nanosecondTimestamps ? 1 : 1000
        // In immediate mode libpcap on Linux may block in its own poll() without ever honouring the
        // read timeout, so a quiet interface would never report `.idle` and the recorder would not
        // flush. Reading non-blocking and waiting in our own poll() bounds every wait.
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE))
        if pcap_setnonblock(handle, 1, &errbuf) != 0 {
            throw LiveCaptureError(
                kind: .system, source: device, step: "pcap_setnonblock", detail: Self.text(errbuf),
                hint: "This capture device cannot be read without blocking; report the device type."
            )
        }
        let descriptor = pcap_get_selectable_fd(handle)
        if descriptor < 0 {
            throw LiveCaptureError(
                kind: .system, source: device, step: "pcap_get_selectable_fd", detail: "no selectable descriptor",
                hint: "This capture device cannot be waited on; report the device type."
            )
        }
        let waitMilliseconds = Int32(clamping: max(1, options.readTimeoutMilliseconds))
        while !lock.withLock({ stopRequested }) {
            var header: UnsafeMutablePointer<pcap_pkthdr>?
            var data: UnsafePointer<UInt8>?
            let result = pcap_next_ex(handle, &header, &data)
            switch result {
            case 1:
                guard let header, let data else { continue }
                let h = header.pointee
                let seconds = Int64(h.ts.tv_sec)
                let fraction = Int64(h.ts.tv_usec)
                let timestamp = seconds &* 1_000_000_000 &+ fraction &* nanosPerFrac
                let bytes = UnsafeRawBufferPointer(start: data, count: Int(h.caplen))
                try handler(.frame(LiveFrameView(timestampNs: timestamp, originalLength: Int(h.len), data: bytes)))
            case 0:
                var waiter = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&waiter, 1, waitMilliseconds)
                if ready == 0 {
                    try handler(.idle)
                } else if ready < 0, errno != EINTR {
                    throw LiveCaptureError(
                        kind: .readFailed, source: device, step: "poll",
                        detail: String(cString: strerror(errno)),
                        hint: "The interface may have gone away; frames read before this point are in the capture."
                    )
                }
            case Int32(PCAP_ERROR_BREAK):
                return
            default:
                throw LiveCaptureError(
                    kind: .readFailed, source: device, step: "pcap_next_ex",
                    detail: String(cString: pcap_geterr(handle)),
                    hint: "The interface may have gone away; frames read before this point are in the capture."
                )
            }
        }
    }

    public func stop() {
        lock.withLock {
            stopRequested = true
            if !closed { pcap_breakloop(handle) }
        }
    }

    public func statistics() -> InterfaceStatistics? {
        lock.withLock {
            if closed { return lastStatistics }
            var stats = pcap_stat()
            guard pcap_stats(handle, &stats) == 0 else { return lastStatistics }
            let result = Self.statistics(from: stats)
            lastStatistics = result
            return result
        }
    }

    public func close() {
        lock.withLock {
            guard !closed else { return }
            var stats = pcap_stat()
            if pcap_stats(handle, &stats) == 0 { lastStatistics = Self.statistics(from: stats) }
            closed = true
            pcap_close(handle)
        }
    }

    /// libpcap's counters as an interface statistics record: `ps_recv` → received,
    /// `ps_drop + ps_ifdrop` → interface drops (the buffer overflowed or the driver dropped).
    static func statistics(from stats: pcap_stat) -> InterfaceStatistics {
        InterfaceStatistics(
            received: UInt64(stats.ps_recv),
            interfaceDropped: UInt64(stats.ps_drop) + UInt64(stats.ps_ifdrop),
            timestampNs: Self.wallClockNanoseconds()
        )
    }

    /// A NUL-terminated C buffer as text.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func wallClockNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// The names libpcap can capture on (`pcap_findalldevs`), for messages and `tether record --list`.
    /// - Throws: ``LiveCaptureError`` when libpcap cannot list them.
    public static func devices() throws(LiveCaptureError) -> [String] {
        var errbuf = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
        var list: UnsafeMutablePointer<pcap_if_t>?
        guard pcap_findalldevs(&list, &errbuf) == 0 else {
            throw LiveCaptureError(
                kind: .system, source: "libpcap", step: "pcap_findalldevs", detail: Self.text(errbuf),
                hint: "Run as root or give the binary cap_net_raw,cap_net_admin to list capture devices."
            )
        }
        defer { if list != nil { pcap_freealldevs(list) } }
        var names: [String] = []
        var cursor = list
        while let entry = cursor {
            names.append(String(cString: entry.pointee.name))
            cursor = entry.pointee.next
        }
        return names
    }

    private static func deviceHint() -> String {
        do {
            let names = try devices()
            if !names.isEmpty { return "Devices libpcap can capture on: \(names.joined(separator: ", "))." }
            return "No capture devices are visible; run as root or give the binary cap_net_raw,cap_net_admin."
        } catch {
            return "The device list is unavailable too (\(error.detail)); run as root or give the binary cap_net_raw,cap_net_admin."
        }
    }

    /// Maps a libpcap status code from setup or activation to an error that says what to do.
    static func activationError(device: String, step: String, code: Int32, message: String) -> LiveCaptureError {
        let status = String(cString: pcap_statustostr(code))
        let detail = message.isEmpty ? status : "\(status): \(message)"
        switch code {
        case Int32(PCAP_ERROR_PERM_DENIED), Int32(PCAP_ERROR_PROMISC_PERM_DENIED):
            return LiveCaptureError(
                kind: .permissionDenied, source: device, step: step, detail: detail,
                hint: "Capturing needs privileges: run as root, or once `sudo setcap cap_net_raw,cap_net_admin+eip <path to tether>`."
            )
        case Int32(PCAP_ERROR_NO_SUCH_DEVICE):
            return LiveCaptureError(kind: .noSuchDevice, source: device, step: step, detail: detail, hint: deviceHint())
        case Int32(PCAP_ERROR_IFACE_NOT_UP):
            return LiveCaptureError(
                kind: .interfaceDown, source: device, step: step, detail: detail,
                hint: "Bring the interface up (`ip link set \(device) up`) or capture on another one."
            )
        default:
            return LiveCaptureError(
                kind: .system, source: device, step: step, detail: detail,
                hint: "Check the interface name and options; \(deviceHint())"
            )
        }
    }
}
