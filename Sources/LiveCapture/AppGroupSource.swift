import CaptureKit
import Foundation

/// An App Group container (a folder two processes share) as a live source: every change inotify
/// reports becomes one `LINKTYPE_USER1` (148) frame holding one JSON object (docs/app-group-link.md),
/// on the recorder's timeline beside the other interfaces.
///
/// A file's content is read when it is complete (`closed_written`, `moved_in`) and carried in the
/// frame (hex, up to ``maximumContent`` bytes), so replay knows what the reader could see at each
/// instant. The opens and closes those reads cause are not recorded. A writer that follows the
/// atomic-write convention (write `.NAME.tmp-ROLE-PID`, then rename it to `NAME`) is named in the
/// `moved_in` frame's `writer`.
///
/// `@unchecked Sendable`: `stopRequested` is read and written under `lock` only; the other `var`s and
/// `watcher` belong to the thread inside `run`, and `statistics()` and `close()` read them only after
/// `run` returned (the ``LiveSource`` lifecycle, which ``Recorder`` keeps).
public final class AppGroupSource: LiveSource, @unchecked Sendable {
    // Thread-safety: `watcher`, `ownReads`, `ownReadsRenamed`, `renamesInFlight` and `framesSeen` are used only by the
    // thread inside `run` (`statistics()` and `close()` come after it returned, as Recorder calls
    // them); `stop()` sets a flag under `lock` that the loop checks every `idleInterval`.

    /// The most content carried in one frame; a longer file's frame has `content_truncated`.
    public static let maximumContent = 64 * 1024

    public let interface: CaptureInterface
    public let notices: [String] = []
    public var idleInterval: Duration { .milliseconds(100) }

    private let watcher: FolderWatcher
    private let lock = NSLock()
    private var stopRequested = false
    /// Opens and closes that this source's own reads will cause, by name.
    private var ownReads: [String: (opens: Int, closes: Int)] = [:]
    private var framesSeen: UInt64 = 0
    /// Writers of temporary files renamed away, by the rename's cookie, until the `moved_in` that
    /// completes the atomic write names them.
    private var renamesInFlight: [UInt32: String] = [:]
    /// Opens and closes still owed by this source's read of an entry renamed away, by the rename's
    /// cookie: the kernel names an event by the entry's name when it happens, so the close of a
    /// read that a rename overtook comes under the new name, and is owed there.
    private var ownReadsRenamed: [UInt32: (opens: Int, closes: Int)] = [:]

    /// Watches `folder`, which must exist.
    public init(folder: String) throws(LiveCaptureError) {
        watcher = try FolderWatcher(path: folder)
        interface = CaptureInterface(
            linkType: .user1, name: "appgroup:" + (folder as NSString).lastPathComponent,
            description: "App Group container events (Tether JSON, docs/app-group-link.md)",
            snapLength: 262_144, nanosecondsPerTick: 1)
    }

    public func run(_ handler: (LiveSourceEvent) throws -> Void) throws {
        while !isStopRequested {
            guard let change = try watcher.next(timeoutMilliseconds: 100) else {
                try handler(.idle)
                continue
            }
            guard let object = record(for: change) else { continue }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            framesSeen += 1
            try data.withUnsafeBytes { bytes in
                try handler(.frame(LiveFrameView(timestampNs: change.timestampNs, originalLength: bytes.count, data: bytes)))
            }
        }
    }

    /// The JSON object for one change, or `nil` for an open or close this source caused itself.
    func record(for change: FolderChange) -> [String: Any]? {
        switch change.kind {
        case .opened, .closedUnwritten:
            if var own = ownReads[change.name] {
                if change.kind == .opened, own.opens > 0 {
                    own.opens -= 1
                } else if change.kind == .closedUnwritten, own.closes > 0 {
                    own.closes -= 1
                } else {
                    break
                }
                ownReads[change.name] = own.opens == 0 && own.closes == 0 ? nil : own
                return nil
            }
        default:
            break
        }
        carryOwnReads(across: change)
        var object: [String: Any] = ["op": change.kind.rawValue, "name": change.name]
        if change.cookie != 0 { object["cookie"] = Int(change.cookie) }
        if let temporary = Self.temporaryName(change.name) {
            object["temporary_for"] = temporary.target
            object["writer"] = temporary.writer
            if change.kind == .movedOut, change.cookie != 0 {
                if renamesInFlight.count >= 1024 { renamesInFlight.removeAll() }
                renamesInFlight[change.cookie] = temporary.writer
            }
        } else if change.kind == .movedIn, let writer = renamesInFlight.removeValue(forKey: change.cookie) {
            // The rename that completes an atomic write: the new value appears to readers here.
            object["writer"] = writer
        }
        if change.kind == .closedWritten || change.kind == .movedIn {
            var own = ownReads[change.name] ?? (0, 0)
            own.opens += 1
            own.closes += 1
            ownReads[change.name] = own
            let path = (watcher.path as NSString).appendingPathComponent(change.name)
            if let content = FileManager.default.contents(atPath: path) {
                object["size"] = content.count
                object["content"] = lowercaseHex(content.prefix(Self.maximumContent))
                if content.count > Self.maximumContent { object["content_truncated"] = true }
            } else {
                // Gone again (renamed or deleted before we read it): the next event says so. Our
                // read did not open it, so this read owes no open or close (an earlier one may).
                own.opens -= 1
                own.closes -= 1
                ownReads[change.name] = own.opens == 0 && own.closes == 0 ? nil : own
                object["content_unavailable"] = true
            }
        }
        return object
    }

    /// Moves what this source's reads still owe an entry across its rename: from the old name at
    /// `moved_out` to the rename's cookie, and from there to the new name at `moved_in`. An
    /// atomic write renamed while the source reads its temporary file (a loaded machine) would
    /// otherwise leave that read's close recorded under the final name, as another process's read.
    private func carryOwnReads(across change: FolderChange) {
        guard change.cookie != 0 else { return }
        switch change.kind {
        case .movedOut:
            guard let owed = ownReads.removeValue(forKey: change.name) else { return }
            if ownReadsRenamed.count >= 1024 { ownReadsRenamed.removeAll() }
            ownReadsRenamed[change.cookie] = owed
        case .movedIn:
            guard let owed = ownReadsRenamed.removeValue(forKey: change.cookie) else { return }
            var own = ownReads[change.name] ?? (0, 0)
            own.opens += owed.opens
            own.closes += owed.closes
            ownReads[change.name] = own
        default:
            return
        }
    }

    /// `.NAME.tmp-ROLE-PID` → (NAME, ROLE): the atomic-write convention's temporary file.
    static func temporaryName(_ name: String) -> (target: String, writer: String)? {
        guard name.hasPrefix("."), let marker = name.range(of: ".tmp-", options: .backwards) else { return nil }
        let target = String(name[name.index(after: name.startIndex)..<marker.lowerBound])
        let suffix = name[marker.upperBound...]
        guard !target.isEmpty, let dash = suffix.lastIndex(of: "-"), Int(suffix[suffix.index(after: dash)...]) != nil else { return nil }
        let writer = String(suffix[..<dash])
        return writer.isEmpty ? nil : (target, writer)
    }

    private var isStopRequested: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    public func stop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
    }

    public func statistics() -> InterfaceStatistics? {
        // inotify drops events only when its queue overflows, and then says so once.
        InterfaceStatistics(received: framesSeen, osDropped: watcher.overflowed ? 1 : 0)
    }

    public func close() { watcher.close() }
}
