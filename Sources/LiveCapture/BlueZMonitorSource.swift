#if canImport(CBluetooth)
import CBluetooth
#endif
import CaptureKit
import Foundation

/// The BlueZ HCI monitor channel: every HCI packet of every adapter on this Linux machine, as btmon
/// sees it, presented as `LINKTYPE_BLUETOOTH_LINUX_MONITOR` (254) frames.
///
/// Needs a kernel with Bluetooth (`CONFIG_BT`) and `CAP_NET_RAW`. On a kernel without it, and on
/// any system but Linux, the initializer throws
/// ``LiveCaptureError/Kind-swift.enum/bluetoothUnsupported``; record through the H4 tap instead,
/// or import a `btmon -w` / Android `btsnoop_hci.log` file (or, on macOS, a PacketLogger file).
///
/// The read path (socket, bind, `SO_TIMESTAMP`, header conversion) follows the kernel's monitor
/// channel layout (capture-formats.md, "BlueZ monitor channel"); it cannot run on machines without
/// Bluetooth, so only the header conversion and the unsupported-kernel error are tested there.
///
/// `@unchecked Sendable`: `stopRequested` and `closed` are read and written under `lock` only; `fd`
/// and the other `let`s never change after `init`, and the read buffers are locals of `run`.
public final class BlueZMonitorSource: LiveSource, @unchecked Sendable {
    // Thread-safety: `fd` is read by the one thread inside `run` and closed by `close()` after `run`
    // returned; the flags are guarded by `lock`; `stop()` only sets a flag that the poll loop checks
    // every `idleInterval`.

    /// `AF_BLUETOOTH` / `PF_BLUETOOTH`.
    static let addressFamily: Int32 = 31
    /// `BTPROTO_HCI`.
    static let protocolHCI: Int32 = 1
    /// `HCI_DEV_NONE`: the monitor channel is bound to no single adapter.
    static let deviceNone: UInt16 = 0xFFFF
    /// `HCI_CHANNEL_MONITOR`.
    static let channelMonitor: UInt16 = 2
    /// `SO_TIMESTAMP` (= `SCM_TIMESTAMP`) in the generic Linux socket ABI.
    static let soTimestamp: Int32 = 29
    /// The monitor header: opcode, index, length, each u16 little-endian.
    static let monitorHeaderLength = 6

    /// The pseudo-device name libpcap uses for the same channel; used as `if_name`.
    public static let deviceName = "bluetooth-monitor"

    public let interface = CaptureInterface(
        linkType: .bluetoothLinuxMonitor, name: BlueZMonitorSource.deviceName,
        description: "BlueZ HCI monitor channel", snapLength: 65_535 + 4, nanosecondsPerTick: 1000
    )
    public let notices: [String]
    public var idleInterval: Duration { .milliseconds(100) }

    private let fd: Int32
    private let lock = NSLock()
    private var stopRequested = false
    private var closed = false

    /// Opens and binds the monitor channel.
    /// - Throws: ``LiveCaptureError`` with kind `.bluetoothUnsupported` when the kernel has no
    ///   Bluetooth, `.permissionDenied` without `CAP_NET_RAW`, `.system` otherwise.
    public init() throws(LiveCaptureError) {
        #if os(Linux)
        let fd = SystemCalls.socket(family: Self.addressFamily, type: SystemCalls.rawSocket, protocol: Self.protocolHCI)
        guard fd >= 0 else { throw Self.error(step: "socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)", errno: errno) }

        var address = sockaddr_hci()
        address.hci_family = sa_family_t(Self.addressFamily)
        address.hci_dev = Self.deviceNone
        address.hci_channel = Self.channelMonitor
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            _ = SystemCalls.close(fd)
            throw Self.error(step: "bind(HCI_CHANNEL_MONITOR)", errno: code)
        }
        var on: Int32 = 1
        var notices: [String] = []
        if setsockopt(fd, SOL_SOCKET, Self.soTimestamp, &on, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            notices.append(
                "\(Self.deviceName): SO_TIMESTAMP refused (\(String(cString: strerror(errno)))); frames are stamped when read, not when the kernel saw them"
            )
        }
        self.fd = fd
        self.notices = notices
        #else
        throw LiveCaptureError(
            kind: .bluetoothUnsupported, source: Self.deviceName, step: "socket(AF_BLUETOOTH)",
            detail: "the BlueZ monitor channel exists on Linux only",
            hint: "Record BLE through the H4 tap (between a host stack and its controller), or import a "
                + "PacketLogger (.pklg), btmon `-w` or Android btsnoop_hci.log file with `tether import`.")
        #endif
    }

    deinit { close() }

    public func run(_ handler: (LiveSourceEvent) throws -> Void) throws {
        if lock.withLock({ closed }) {
            throw LiveCaptureError(kind: .misuse, source: Self.deviceName, step: "run", detail: "the source is closed", hint: "Open a new BlueZMonitorSource.")
        }
        #if os(Linux)
        let capacity = Self.monitorHeaderLength + 65_535
        var readBuffer = [UInt8](repeating: 0, count: capacity)
        var frameBuffer = [UInt8](repeating: 0, count: capacity)
        // Room for one timeval control message, with slack for alignment.
        var control = [UInt8](repeating: 0, count: 64)

        while !lock.withLock({ stopRequested }) {
            var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollfd, 1, Int32(100))
            if ready == 0 {
                try handler(.idle)
                continue
            }
            if ready < 0 {
                if errno == EINTR { continue }
                throw Self.error(step: "poll", errno: errno, kind: .readFailed)
            }

            var received = 0
            var timestampNs: Int64?
            readBuffer.withUnsafeMutableBytes { buffer in
                control.withUnsafeMutableBytes { controlBytes in
                    var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                    withUnsafeMutablePointer(to: &iov) { iovPointer in
                        var message = msghdr()
                        message.msg_iov = iovPointer
                        message.msg_iovlen = 1
                        message.msg_control = controlBytes.baseAddress
                        message.msg_controllen = controlBytes.count
                        received = recvmsg(fd, &message, 0)
                        if received >= 0 {
                            let length = min(Int(message.msg_controllen), controlBytes.count)
                            timestampNs = Self.timestamp(fromControl: UnsafeRawBufferPointer(rebasing: controlBytes[0..<length]))
                        }
                    }
                }
            }
            if received < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Self.error(step: "recvmsg", errno: errno, kind: .readFailed)
            }
            let stamp = timestampNs ?? PcapLiveSource.wallClockNanoseconds()
            let frameLength = try readBuffer.withUnsafeBytes { record in
                try frameBuffer.withUnsafeMutableBytes { out in
                    try Self.convertMonitorRecord(UnsafeRawBufferPointer(rebasing: record[0..<received]), into: out)
                }
            }
            try frameBuffer.withUnsafeBytes { out in
                let frame = UnsafeRawBufferPointer(rebasing: out[0..<frameLength])
                try handler(.frame(LiveFrameView(timestampNs: stamp, originalLength: frameLength, data: frame)))
            }
        }
        #endif
    }

    public func stop() {
        lock.withLock { stopRequested = true }
    }

    /// The monitor channel reports no drop counters.
    public func statistics() -> InterfaceStatistics? { nil }

    public func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            _ = SystemCalls.close(fd)
        }
    }

    /// Rewrites one monitor-channel read — `opcode u16 LE, index u16 LE, len u16 LE, payload` — as a
    /// link type 254 frame — `index u16 BE, opcode u16 BE, payload` — into `output`, returning the
    /// frame's length.
    /// - Throws: ``LiveCaptureError`` (`.readFailed`) when the record is shorter than its header or
    ///   its length field disagrees with the bytes read, or `output` is too small.
    public static func convertMonitorRecord(_ record: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(LiveCaptureError) -> Int {
        guard record.count >= monitorHeaderLength else {
            throw LiveCaptureError(
                kind: .readFailed, source: deviceName, step: "read monitor record",
                detail: "expected a 6-byte header (opcode, index, length), got \(record.count) bytes",
                hint: "The kernel sent a record Tether does not understand; report it with `btmon` output."
            )
        }
        let opcode = UInt16(record[0]) | UInt16(record[1]) << 8
        let index = UInt16(record[2]) | UInt16(record[3]) << 8
        let length = Int(UInt16(record[4]) | UInt16(record[5]) << 8)
        let payloadCount = record.count - monitorHeaderLength
        guard payloadCount == length else {
            throw LiveCaptureError(
                kind: .readFailed, source: deviceName, step: "read monitor record (opcode \(opcode), index \(index))",
                detail: "header length field says \(length) payload bytes, the read returned \(payloadCount)",
                hint: "The record was cut or padded; report it with `btmon` output."
            )
        }
        let frameLength = 4 + payloadCount
        guard output.count >= frameLength else {
            throw LiveCaptureError(
                kind: .misuse, source: deviceName, step: "convert monitor record",
                detail: "output buffer holds \(output.count) bytes, the frame needs \(frameLength)",
                hint: "Pass a buffer of at least 65539 bytes."
            )
        }
        output[0] = UInt8(index >> 8)
        output[1] = UInt8(index & 0xFF)
        output[2] = UInt8(opcode >> 8)
        output[3] = UInt8(opcode & 0xFF)
        if payloadCount > 0 {
            UnsafeMutableRawBufferPointer(rebasing: output[4..<frameLength])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: record[monitorHeaderLength...]))
        }
        return frameLength
    }

    /// Finds an `SCM_TIMESTAMP` control message (a `struct timeval`) and returns it in nanoseconds.
    static func timestamp(fromControl control: UnsafeRawBufferPointer) -> Int64? {
        // struct cmsghdr { size_t cmsg_len; int cmsg_level; int cmsg_type; } then data aligned to size_t.
        let word = MemoryLayout<Int>.size
        let headerLength = (MemoryLayout<Int>.size + 8 + word - 1) / word * word
        var offset = 0
        while offset + headerLength <= control.count {
            let length = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
            let level = control.loadUnaligned(fromByteOffset: offset + word, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + word + 4, as: Int32.self)
            guard length >= headerLength, offset + length <= control.count else { return nil }
            if level == SOL_SOCKET, type == soTimestamp, length - headerLength >= 2 * word {
                let seconds = control.loadUnaligned(fromByteOffset: offset + headerLength, as: Int.self)
                let micros = control.loadUnaligned(fromByteOffset: offset + headerLength + word, as: Int.self)
                return Int64(seconds) &* 1_000_000_000 &+ Int64(micros) &* 1000
            }
            offset += (length + word - 1) / word * word
        }
        return nil
    }

    /// Maps an errno from opening the channel to an error that says what to do.
    static func error(step: String, errno code: Int32, kind: LiveCaptureError.Kind? = nil) -> LiveCaptureError {
        let text = String(cString: strerror(code))
        switch (kind, code) {
        case (nil, EAFNOSUPPORT):
            return LiveCaptureError(
                kind: .bluetoothUnsupported, source: deviceName, step: step,
                detail: "this kernel has no Bluetooth support (AF_BLUETOOTH: EAFNOSUPPORT)",
                hint: "Record BLE through the H4 tap (between a host stack and its controller, e.g. Bumble's virtual controllers), "
                    + "or import a btmon `-w` file or an Android btsnoop_hci.log with `tether import`."
            )
        case (nil, EPERM), (nil, EACCES):
            return LiveCaptureError(
                kind: .permissionDenied, source: deviceName, step: step, detail: "\(text) (errno \(code))",
                hint: "The monitor channel needs CAP_NET_RAW: run as root, or `sudo setcap cap_net_raw+eip <path to tether>`."
            )
        default:
            return LiveCaptureError(
                kind: kind ?? .system, source: deviceName, step: step, detail: "\(text) (errno \(code))",
                hint: "Check that the bluetooth kernel module is loaded (`lsmod | grep bluetooth`), or use the H4 tap."
            )
        }
    }
}
