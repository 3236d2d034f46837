import Foundation

/// One `transferUserInfo(_:)` or `transferCurrentComplicationUserInfo(_:)`: queued until the
/// watch has it, then handed to `session(_:didFinish:error:)`.
///
/// The core names a transfer by an id it gives when it accepts the call, which comes back after
/// `transferUserInfo` has returned; the object is bound to it then, so a ``cancel()`` made before
/// is held and sent as soon as the id is known.
///
/// `@unchecked Sendable`: its mutable state is in `lifecycle`, behind that object's lock; `session` is
/// a weak reference set once in `init`; `userInfo` (not Sendable) is the app's dictionary, never mutated.
public final class WCSessionUserInfoTransfer: @unchecked Sendable {
    /// The dictionary being transferred.
    public let userInfo: [String: Any]
    /// Whether it was sent with `transferCurrentComplicationUserInfo(_:)`.
    public let isCurrentComplicationInfo: Bool

    private let lifecycle: TransferLifecycle
    private weak var session: WCSession?

    init(userInfo: [String: Any], isCurrentComplicationInfo: Bool, session: WCSession?, transferring: Bool) {
        self.userInfo = userInfo
        self.isCurrentComplicationInfo = isCurrentComplicationInfo
        self.session = session
        self.lifecycle = TransferLifecycle(transferring: transferring)
    }

    /// Whether the transfer is still queued or under way (false once it finished, failed or
    /// was cancelled).
    public var isTransferring: Bool { lifecycle.isTransferring }

    /// Stops the transfer if the watch does not have it yet. The core reports nothing more for a
    /// cancelled transfer, so no `didFinish` follows; it leaves the outstanding list when the core
    /// accepts the cancel.
    public func cancel() {
        guard let id = lifecycle.requestCancel() else { return }
        session?.cancelUserInfoTransfer(self, id: id)
    }

    /// The core's id, once bound.
    var id: Int64? { lifecycle.id }

    /// Binds the core's id; true when a cancel was asked for before it was known.
    func bind(id: Int64) -> Bool { lifecycle.bind(id: id) }

    /// Marks it ended (finished, failed or cancelled).
    func end() { lifecycle.end() }
}

/// What both kinds of transfer go through: bound to the core's id once the core accepts the call,
/// transferring until it ends, and a cancel that may come before the id is known.
///
/// `@unchecked Sendable`: `id_`, `transferring` and `cancelRequested` are read and written only
/// under `lock`.
final class TransferLifecycle: @unchecked Sendable {
    private let lock = NSLock()
    private var id_: Int64?
    private var transferring: Bool
    private var cancelRequested = false

    init(transferring: Bool) { self.transferring = transferring }

    var isTransferring: Bool { lock.withLock { transferring } }

    var id: Int64? { lock.withLock { id_ } }

    /// Marks a cancel asked for; `nil` when there is nothing to cancel (ended, or asked already),
    /// else the core's id when it is known (`.some(nil)`: not yet, the cancel is sent on binding).
    func requestCancel() -> Int64?? {
        lock.withLock {
            guard transferring, !cancelRequested else { return nil }
            cancelRequested = true
            return .some(id_)
        }
    }

    /// Binds the core's id; true when a cancel was asked for before it was known.
    func bind(id: Int64) -> Bool {
        lock.withLock {
            id_ = id
            return cancelRequested && transferring
        }
    }

    /// Marks it ended.
    func end() { lock.withLock { transferring = false } }
}

/// One `transferFile(_:metadata:)`: queued and sent in the background, its progress in
/// ``progress``, then handed to `session(_:didFinish:error:)`.
///
/// `@unchecked Sendable`: the mutable state is in `lifecycle`, behind its lock; `session` is a weak
/// reference set once in `init`; ``progress`` changes on the session's driving thread and is read
/// there, which its documentation asks (Foundation's `Progress` has no lock on Linux).
public final class WCSessionFileTransfer: @unchecked Sendable {
    /// The file being transferred and its metadata.
    public let file: WCSessionFile
    /// The bytes sent so far out of the file's size, updated as the core reports progress, on the
    /// thread that drives the session. Read it there: in a callback, in test code between runs, or
    /// in a task on the session's `taskExecutor` (on Linux, Foundation's `Progress` has no lock, so
    /// a task on Swift's pool reading it while a run updates it races).
    public let progress: Progress

    private let lifecycle: TransferLifecycle
    private weak var session: WCSession?

    init(file: WCSessionFile, session: WCSession?, transferring: Bool) {
        self.file = file
        self.progress = Progress(totalUnitCount: 0)
        self.session = session
        self.lifecycle = TransferLifecycle(transferring: transferring)
    }

    /// Whether the transfer is still queued or under way.
    public var isTransferring: Bool { lifecycle.isTransferring }

    /// Stops the transfer. The core reports nothing more for it, so no `didFinish` follows.
    public func cancel() {
        guard let id = lifecycle.requestCancel() else { return }
        session?.cancelFileTransfer(self, id: id)
    }

    /// The core's file id, once bound.
    var id: Int64? { lifecycle.id }

    /// Binds the core's id; true when a cancel was asked for before it was known.
    func bind(id: Int64) -> Bool { lifecycle.bind(id: id) }

    /// Marks it ended.
    func end() { lifecycle.end() }
}

/// A file sent or received, with its metadata.
///
/// A received file's bytes are not in the trace (the core stores them; its events give only the
/// size), so the facade cannot hand the app the watch's real content: ``fileURL`` names an empty
/// file it creates in the temporary directory, enough for an app that moves or opens the file,
/// not for one that reads what the watch wrote.
///
/// `@unchecked Sendable`: both properties are `let`s; `metadata` (not Sendable: `Any` values) is the
/// dictionary the sender gave, never mutated.
public final class WCSessionFile: @unchecked Sendable {
    /// Where the file is.
    public let fileURL: URL
    /// The metadata the sender attached, if any.
    public let metadata: [String: Any]?

    init(fileURL: URL, metadata: [String: Any]?) {
        self.fileURL = fileURL
        self.metadata = metadata
    }
}
