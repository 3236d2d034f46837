import IngestIntegration
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The kernel's count of datagrams it dropped on a socket before the program read them — chiefly
/// because the socket's receive buffer was full. Such datagrams never reach Tether, so no count of
/// Tether's own can show them; only the kernel knows.
///
/// On Linux the counter is the socket's `sk_drops`: the same number `SO_RXQ_OVFL` attaches to each
/// datagram as a control message and `/proc/net/udp` shows in its `drops` column. It is read here
/// with `getsockopt(SOL_SOCKET, SO_MEMINFO)`, whose array of counters ends with it
/// (`SK_MEMINFO_DROPS`): one call per socket, whenever the count is wanted, rather than a control
/// message parsed per datagram.
///
/// Other systems keep no such per-socket counter: the count is then `nil`, "unknown", never 0.
public enum SocketReceiveDrops {
    /// `SO_MEMINFO` fills `SK_MEMINFO_VARS` 32-bit counters (`linux/sock_diag.h`); drops are the
    /// last, `SK_MEMINFO_DROPS` = 8. A kernel that knows fewer fills fewer and leaves the rest 0.
    typealias MemoryInfo = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    /// Whether this system can count a socket's receive drops.
    public static var isSupported: Bool {
        #if os(Linux)
        true
        #else
        false
        #endif
    }

    /// The drops counter of socket `descriptor` (cumulative since the socket was made, wrapping at
    /// 2³²), or `nil` when the system keeps none or refuses the query.
    public static func count(descriptor: Int32) -> UInt32? {
        #if os(Linux)
        var info: MemoryInfo = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        var length = socklen_t(MemoryLayout<MemoryInfo>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_MEMINFO, &info, &length) == 0 else { return nil }
        // Fewer bytes back: a kernel that predates SK_MEMINFO_DROPS; unknown, not zero.
        guard Int(length) >= MemoryLayout<MemoryInfo>.size else { return nil }
        return info.8
        #else
        return nil
        #endif
    }
}

/// Sums the drops counters of several sockets into one running total that does not wrap: each
/// socket's counter is 32 bits and wraps, so the total grows by the wrapping difference from the
/// socket's last reading.
struct ReceiveDropTally: Sendable, Hashable {
    private var last: [UInt32]
    /// Datagrams dropped on all the sockets since they were made.
    private(set) var total = 0

    /// A tally of `sockets` sockets, each counted from 0 (a new socket's counter starts there).
    init(sockets: Int) { last = Array(repeating: 0, count: sockets) }

    /// Takes socket `index`'s counter as read now.
    mutating func record(_ counter: UInt32, socket index: Int) {
        guard last.indices.contains(index) else { return }
        total += Int(counter &- last[index])
        last[index] = counter
    }
}
