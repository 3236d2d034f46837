#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One writer per store: an advisory `flock` on `<store>.lock`, a file beside the store that also
/// says who holds it (pid and purpose), so a second writer is refused with a sentence naming the
/// first instead of interleaving with it (two session hosts on one store would otherwise restore
/// each other's snapshots and act as each other).
///
/// The lock is the kernel's: it goes away when the holder exits, however it exits (`kill -9`
/// included), so a stale lock file never blocks a new run; its text is only read while someone
/// holds the lock. The file is left in place on release: removing it would open a window in which
/// a second process locks the old, unlinked file while a third creates and locks a new one.
public final class StoreLock: Sendable {
    /// The store the lock guards.
    public let storePath: String
    /// The lock file, `<store>.lock`.
    public let lockPath: String
    private let descriptor: Int32
    private let identity: FileIdentity

    /// A lock file, by device and inode.
    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// The lock files this process holds now. A `flock` belongs to the open file description, which
    /// a child process shares from its fork until its exec closes the (close-on-exec) descriptor:
    /// a lock this process has just released can still be held, for that moment, by a child being
    /// spawned on another thread. Knowing which locks are really held here tells that moment from
    /// a second writer in this process.
    private static let heldHere = Mutex<Set<FileIdentity>>([])

    /// How many times a lock is tried again while only a spawning child of this process holds it.
    static let spawnRetries = 100

    /// The lock file's path for a store.
    public static func lockPath(forStore store: String) -> String { store + ".lock" }

    /// Takes the lock for `store`, or throws at once when another process (or another
    /// ``StoreLock`` in this one) holds it; it does not wait for a holder to finish.
    /// - Parameters:
    ///   - store: the store's path (the lock file is `<store>.lock`).
    ///   - purpose: what this process is, for the message another writer gets
    ///     (`tether live session --role phone`).
    /// - Throws: ``StoreLockError/held(store:lockFile:holder:)`` when another process holds it,
    ///   ``StoreLockError/cannotLock(store:lockFile:reason:)`` when the lock file cannot be made.
    public init(store: String, purpose: String) throws(StoreLockError) {
        storePath = store
        lockPath = Self.lockPath(forStore: store)
        // Not through a symbolic link: the lock file is truncated and written, and a link could
        // point at any file of the user's.
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link, which Tether does not follow for a file it writes" : String(cString: strerror(errno))
            throw .cannotLock(store: store, lockFile: lockPath, reason: reason)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            let reason = (info.st_mode & S_IFMT) != S_IFREG ? "it is not a regular file" : String(cString: strerror(errno))
            _ = closeFile(fd)
            throw .cannotLock(store: store, lockFile: lockPath, reason: reason)
        }
        let identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        var retries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let busy = errno == EWOULDBLOCK
            let reason = String(cString: strerror(errno))
            let holder = busy ? Self.readHolder(fd) : nil
            if busy, retries < Self.spawnRetries, holder?.hasPrefix("pid \(getpid()):") == true,
               !Self.heldHere.withLock({ $0.contains(identity) }) {
                // Our own released lock, still shared with a child between fork and exec.
                retries += 1
                usleep(5_000)
                continue
            }
            _ = closeFile(fd)
            if busy { throw .held(store: store, lockFile: lockPath, holder: holder) }
            throw .cannotLock(store: store, lockFile: lockPath, reason: reason)
        }
        // A file of that name that Tether did not write is someone's: leave it as it is.
        let existing = Self.readStart(fd)
        if !existing.isEmpty, !existing.starts(with: Array("pid ".utf8)) {
            _ = closeFile(fd)
            throw .cannotLock(store: store, lockFile: lockPath,
                              reason: "it exists and is not a Tether lock file (it begins \(String(decoding: existing.prefix(16), as: UTF8.self).debugDescription)); it was left unchanged, move it away")
        }
        Self.heldHere.withLock { _ = $0.insert(identity) }
        // Who holds it, for the next writer's message. A failed write leaves the lock held and
        // only makes that message vaguer, so it does not stop this writer.
        let text = "pid \(getpid()): \(purpose)\n"
        _ = ftruncate(fd, 0)
        _ = text.utf8CString.withUnsafeBufferPointer { buffer in
            pwrite(fd, buffer.baseAddress, buffer.count - 1, 0)
        }
        descriptor = fd
        self.identity = identity
    }

    deinit {
        // Forgotten first: another StoreLock here that finds the lock still taken in between
        // then waits for the close below instead of calling this process a second writer.
        Self.heldHere.withLock { _ = $0.remove(identity) }
        _ = closeFile(descriptor)
    }

    /// The lock file's first bytes (at most 512; none when it cannot be read).
    private static func readStart(_ fd: Int32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(bytes[..<count]) : []
    }

    /// The holder's line from the lock file; `nil` when it has not written it yet.
    private static func readHolder(_ fd: Int32) -> String? {
        let bytes = readStart(fd)
        guard !bytes.isEmpty else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        return line.isEmpty ? nil : line
    }
}

/// `close(2)`, apart from any `close()` method in scope.
private func closeFile(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #elseif canImport(Darwin)
    Darwin.close(fd)
    #endif
}

/// Why a store's writer lock could not be taken.
public enum StoreLockError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another process holds the lock; `holder` is its line from the lock file (`pid 4242: tether
    /// live session --role phone`), `nil` when it had not written it yet.
    case held(store: String, lockFile: String, holder: String?)
    /// The lock file could not be created or locked (permissions, a missing folder).
    case cannotLock(store: String, lockFile: String, reason: String)

    /// One sentence naming the store, the other process and what to do.
    public var description: String {
        switch self {
        case let .held(store, lockFile, holder):
            let who = holder.map { "another process (\($0))" } ?? "another process (it has not yet written its pid to \(lockFile))"
            return "\(store) is in use by \(who), which holds its lock \(lockFile); a store has one writer at a time. "
                + "Stop that process first, or give this one another store file."
        case let .cannotLock(store, lockFile, reason):
            return "cannot lock \(store): \(lockFile) cannot be created or locked: \(reason). "
                + "Check that the store's folder exists and is writable."
        }
    }
}
