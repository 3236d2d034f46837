import DequeModule
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One change inotify(7) reported for an entry of a watched folder.
public struct FolderChange: Sendable, Hashable {
    /// What happened, by inotify event.
    public enum Kind: String, Sendable, Hashable {
        /// `IN_CREATE`: the entry appeared (empty, or as a folder).
        case created
        /// `IN_CLOSE_WRITE`: a file opened for writing was closed: its new content is complete.
        case closedWritten = "closed_written"
        /// `IN_CLOSE_NOWRITE`: a file opened only for reading was closed.
        case closedUnwritten = "closed_unwritten"
        /// `IN_OPEN`: the entry was opened.
        case opened
        /// `IN_MOVED_TO`: an entry was renamed to this name (an atomic write lands here).
        case movedIn = "moved_in"
        /// `IN_MOVED_FROM`: an entry was renamed away from this name.
        case movedOut = "moved_out"
        /// `IN_DELETE`: the entry was removed.
        case deleted
    }

    /// What happened.
    public var kind: Kind
    /// The entry's name inside the folder.
    public var name: String
    /// Pairs a ``Kind-swift.enum/movedOut`` with its ``Kind-swift.enum/movedIn`` (0 otherwise).
    public var cookie: UInt32
    /// When the watcher read the event, nanoseconds since the Unix epoch.
    public var timestampNs: Int64

    /// A change from its parts.
    public init(kind: Kind, name: String, cookie: UInt32 = 0, timestampNs: Int64) {
        self.kind = kind
        self.name = name
        self.cookie = cookie
        self.timestampNs = timestampNs
    }
}

/// Watches one folder with inotify(7): opens, reads, writes, renames and deletions of its entries
/// (not of subfolders' entries), in the order the kernel reports them.
///
/// One thread calls ``next(timeoutMilliseconds:)``; ``close()`` after it is done. Linux only: on
/// other systems the initializer throws.
///
/// `@unchecked Sendable` without a lock: it is only handed to the thread that reads it, and under
/// the rule above no two threads touch its state at once.
public final class FolderWatcher: @unchecked Sendable {
    /// The folder watched.
    public let path: String
    private var fd: Int32 = -1
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var pending: Deque<FolderChange> = []
    /// The inotify descriptor, so a caller can poll it together with others (`nil` once closed).
    public var fileDescriptor: Int32? { fd >= 0 ? fd : nil }
    /// Set when the kernel's event queue overflowed (`IN_Q_OVERFLOW`): events were lost.
    public private(set) var overflowed = false

    /// Starts watching `path`, which must be an existing folder.
    public init(path: String) throws(LiveCaptureError) {
        self.path = path
        #if os(Linux)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw LiveCaptureError(
                kind: .noSuchDevice, source: path, step: "inotify_add_watch", detail: "no folder there",
                hint: "Create the App Group folder first (mkdir -p \(path)), or give the folder the live hosts share.")
        }
        let descriptor = inotify_init1(Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC))
        guard descriptor >= 0 else {
            throw LiveCaptureError(kind: .system, source: path, step: "inotify_init1", detail: String(cString: strerror(errno)),
                                   hint: "Raise fs.inotify.max_user_instances if it is exhausted.")
        }
        let mask = UInt32(IN_CREATE | IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE) | UInt32(IN_ONLYDIR)
        guard inotify_add_watch(descriptor, path, mask) >= 0 else {
            let message = String(cString: strerror(errno))
            SystemCalls.close(descriptor)
            throw LiveCaptureError(kind: .system, source: path, step: "inotify_add_watch", detail: message,
                                   hint: "Check that the folder exists and is readable; raise fs.inotify.max_user_watches if it is exhausted.")
        }
        fd = descriptor
        #else
        // inotify(7) is Linux's; Darwin's FSEvents and kqueue report other events (no opens or
        // closes without writing), so the App Group interface would not mean the same there.
        throw LiveCaptureError(kind: .system, source: path, step: "inotify_init1", detail: "watching a folder needs Linux's inotify, and this system has none",
                               hint: "Record or run the widget channel (--app-group, `tether live widget`) on Linux.")
        #endif
    }

    deinit { close() }

    /// The next change, waiting at most `timeoutMilliseconds` (0: do not wait); `nil` when none came.
    public func next(timeoutMilliseconds: Int32) throws(LiveCaptureError) -> FolderChange? {
        if !pending.isEmpty { return pending.removeFirst() }
        #if os(Linux)
        guard fd >= 0 else { return nil }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, timeoutMilliseconds)
        if ready < 0 {
            if errno == EINTR { return nil }
            throw LiveCaptureError(kind: .readFailed, source: path, step: "poll(inotify)", detail: String(cString: strerror(errno)), hint: "")
        }
        guard ready > 0 else { return nil }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return nil }
            throw LiveCaptureError(kind: .readFailed, source: path, step: "read(inotify)", detail: String(cString: strerror(errno)), hint: "")
        }
        let now = Self.nowNs()
        parse(count: count, timestampNs: now)
        return pending.isEmpty ? nil : pending.removeFirst()
        #else
        return nil
        #endif
    }

    /// Stops watching. Later calls do nothing.
    public func close() {
        #if os(Linux)
        if fd >= 0 {
            SystemCalls.close(fd)
            fd = -1
        }
        #endif
    }

    #if os(Linux)
    /// `struct inotify_event`: wd (i32), mask (u32), cookie (u32), len (u32), then `len` bytes of
    /// NUL-padded name, all in host byte order.
    private func parse(count: Int, timestampNs: Int64) {
        var offset = 0
        while offset + 16 <= count {
            let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
            let cookie = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self) }
            let length = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
            let nameBytes = buffer[(offset + 16)..<min(offset + 16 + length, count)].prefix { $0 != 0 }
            offset += 16 + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
            guard !nameBytes.isEmpty else { continue }  // events of the folder itself
            let name = String(decoding: nameBytes, as: UTF8.self)
            let kinds: [(Int32, FolderChange.Kind)] = [
                (IN_CREATE, .created), (IN_OPEN, .opened), (IN_CLOSE_WRITE, .closedWritten), (IN_CLOSE_NOWRITE, .closedUnwritten),
                (IN_MOVED_FROM, .movedOut), (IN_MOVED_TO, .movedIn), (IN_DELETE, .deleted),
            ]
            for (bit, kind) in kinds where mask & UInt32(bit) != 0 {
                pending.append(FolderChange(kind: kind, name: name, cookie: cookie, timestampNs: timestampNs))
            }
        }
    }

    static func nowNs() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
    #endif
}
