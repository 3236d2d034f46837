import SessionIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
import Foundation
import GRDB
import SessionCore
import StoreFiles

/// A live session host's durable state, in one SQLite file (GRDB, WAL): the core's last snapshot
/// and the bytes of the files it is sending, so a host killed at any instant restarts where the
/// core's crash model says (docs/session-core.md, "Durability"). Files being received are written
/// beside it, in `<store>.files/`, at the offsets the core names; a finished one is renamed to
/// `<peer>-<id>.file`.
///
/// Order matters and is the caller's: store a file's bytes before the call that queues it, store
/// each `persist` snapshot before carrying out the actions after it. The crash this guards against
/// is the host process's (`kill -9`): received file bytes go to the page cache without an fsync per
/// chunk; SQLite commits the snapshots.
public final class SessionStore {
    /// The SQLite file.
    public let path: String
    /// The folder of incoming files.
    public let filesDirectory: String
    private let queue: DatabaseQueue
    /// The partial file being written: chunks come one after another, so one open handle serves
    /// them all instead of an open and close per chunk.
    private var incoming: (path: String, handle: FileHandle)?
    /// The file `incoming` is open for: a write of the same file (one per frame) skips building its path.
    private var incomingFile: (peer: SessionDeviceID, id: FileTransferID)?

    /// The store's writer lock (`<store>.lock`), held while this store is open.
    private let writerLock: StoreLock

    /// The tables of a session store; a SQLite file with other tables and none of these is not one.
    static let tables: Set<String> = ["session_snapshot", "session_outgoing_file"]

    /// Opens (or creates) the store at `path`, as its only writer.
    ///
    /// In this order, so a file that is not a store is never written to: the file's first bytes
    /// and tables are read (without SQLite writing anything) and a file that is not a Tether
    /// session store is refused; then the writer lock beside it is taken (``StoreLock``), so a
    /// second host on the same store is refused with the first one's pid and purpose instead of
    /// restoring its snapshot and acting as it; only then is the database opened for writing.
    /// - Parameter purpose: what this process is, for the message a second writer gets
    ///   (`tether live session --role phone --identity …`).
    public init(path: String, purpose: String = "tether live session") throws(LiveHostError) {
        self.path = path
        self.filesDirectory = path + ".files"
        try Self.checkIsSessionStore(path: path)
        do {
            writerLock = try StoreLock(store: path, purpose: purpose)
        } catch {
            switch error {
            case let .held(_, lockFile, holder):
                let who = holder.map { "another process (\($0))" } ?? "another process (it has not written its pid yet)"
                throw LiveHostError(target: path, step: "lock session store", detail: "it is in use by \(who), which holds its lock \(lockFile)",
                                    hint: "A store has one host at a time (two would each restore the other's snapshot and act as it): stop that process first, or give this host another --store.")
            case let .cannotLock(_, lockFile, reason):
                throw LiveHostError(target: path, step: "lock session store", detail: "cannot create or lock \(lockFile): \(reason)",
                                    hint: "Check that the store's folder exists and is writable.")
            }
        }
        do {
            var configuration = Configuration()
            configuration.journalMode = .wal
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS session_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), json BLOB NOT NULL);
                    CREATE TABLE IF NOT EXISTS session_outgoing_file (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL);
                    """)
            }
            try FileManager.default.createDirectory(atPath: filesDirectory, withIntermediateDirectories: true)
        } catch {
            throw Self.openError(path: path, error)
        }
    }

    /// Refuses, reading only, a file that is not a Tether session store: not SQLite at all, a
    /// SQLite file SQLite cannot read, or one with tables of another program. A missing or empty
    /// file, or a SQLite file without tables, becomes a new store.
    static func checkIsSessionStore(path: String) throws(LiveHostError) {
        let leftAlone = "It was left unchanged. Name a new file for --store; to start this host afresh, move the old one away (the peer then sees a reinstall)."
        switch SQLiteFileHeader.inspect(path) {
        case .absentOrEmpty: return
        case .sqlite: break
        case .notSQLite(let first):
            throw LiveHostError(target: path, step: "open session store",
                                detail: "the file is not a Tether session store: it is not a SQLite database (it begins \(SQLiteFileHeader.hex(first)), not \"SQLite format 3\"), so it is another kind of file or a store damaged beyond reading",
                                hint: leftAlone)
        case .unreadable(let reason):
            throw LiveHostError(target: path, step: "open session store", detail: "it cannot be used as a store: \(reason)",
                                hint: "Give --store a regular file that can be read and written (a new name makes a new store).")
        }
        let tables: [String]
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let reader = try DatabaseQueue(path: path, configuration: configuration)
            tables = try reader.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            }
            try reader.close()
        } catch {
            throw openError(path: path, error)
        }
        if !tables.isEmpty, !tables.contains(where: Self.tables.contains) {
            throw LiveHostError(target: path, step: "open session store",
                                detail: "the file is not a Tether session store: it is a SQLite database with tables of another program (\(tables.prefix(5).joined(separator: ", ")))",
                                hint: "It was left unchanged. Name a new file for --store; Tether does not add tables to another program's database.")
        }
    }

    /// A failed write: SQLite finding the file damaged says so (free space is not the problem
    /// then); anything else keeps `hint`.
    static func writeError(path: String, step: String, _ error: any Error, hint: String) -> LiveHostError {
        if let error = error as? DatabaseError, error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            return LiveHostError(target: path, step: step, detail: "the store is corrupt: SQLite says \"\(error.message ?? "\(error.resultCode)")\"",
                                 hint: "Stop the host and move the store away (it then starts afresh and the peer sees a reinstall), or restore it from a backup.")
        }
        return LiveHostError(target: path, step: step, detail: "\(error)", hint: hint)
    }

    /// An error of opening the database: a file SQLite cannot read says it is damaged (the folder
    /// is not the problem), anything else keeps the folder advice.
    static func openError(path: String, _ error: any Error) -> LiveHostError {
        if let error = error as? DatabaseError, error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            return LiveHostError(target: path, step: "open session store",
                                 detail: "the file is corrupt or not a Tether session store: SQLite says \"\(error.message ?? "\(error.resultCode)")\"",
                                 hint: "It was left unchanged. Move it away (the host then starts afresh and the peer sees a reinstall), or restore it from a backup.")
        }
        return LiveHostError(target: path, step: "open session store", detail: "\(error)", hint: "Check that the folder exists and is writable.")
    }

    deinit { closeIncoming() }

    /// The last snapshot stored, or `nil` for a new store.
    public func loadSnapshot() throws(LiveHostError) -> SessionSnapshot? {
        do {
            guard let data = try queue.read({ db in try Data.fetchOne(db, sql: "SELECT json FROM session_snapshot WHERE id = 1") }) else { return nil }
            return try JSONDecoder().decode(SessionSnapshot.self, from: data)
        } catch {
            throw LiveHostError(target: path, step: "read the stored snapshot", detail: "\(error)",
                                hint: "The store is damaged or from another Tether version; move it away to start the session afresh (the peer then sees a reinstall).")
        }
    }

    /// The bytes of every file still being sent, by transfer id.
    public func loadOutgoingFiles() throws(LiveHostError) -> [FileTransferID: [UInt8]] {
        do {
            let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT id, bytes FROM session_outgoing_file") }
            var files: [FileTransferID: [UInt8]] = [:]
            for row in rows {
                let id: Int64 = row["id"]
                let bytes: Data = row["bytes"]
                guard let raw = UInt32(exactly: id) else { continue }
                files[FileTransferID(rawValue: raw)] = [UInt8](bytes)
            }
            return files
        } catch {
            throw LiveHostError(target: path, step: "read the stored outgoing files", detail: "\(error)", hint: "Move the store away to start afresh.")
        }
    }

    /// Replaces the stored snapshot.
    public func store(_ snapshot: SessionSnapshot) throws(LiveHostError) {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let data = try encoder.encode(snapshot)
            try queue.write { db in try db.execute(sql: "INSERT OR REPLACE INTO session_snapshot (id, json) VALUES (1, ?)", arguments: [data]) }
        } catch {
            throw Self.writeError(path: path, step: "store the snapshot", error, hint: "Check free disk space.")
        }
    }

    /// Keeps the bytes of a file about to be queued under `id`.
    public func storeOutgoingFile(_ id: FileTransferID, bytes: [UInt8]) throws(LiveHostError) {
        do {
            try queue.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO session_outgoing_file (id, bytes) VALUES (?, ?)", arguments: [Int64(id.rawValue), Data(bytes)])
            }
        } catch {
            throw Self.writeError(path: path, step: "store an outgoing file", error, hint: "Check free disk space.")
        }
    }

    /// Forgets a file whose transfer ended.
    public func removeOutgoingFile(_ id: FileTransferID) throws(LiveHostError) {
        do {
            try queue.write { db in try db.execute(sql: "DELETE FROM session_outgoing_file WHERE id = ?", arguments: [Int64(id.rawValue)]) }
        } catch {
            throw Self.writeError(path: path, step: "remove an outgoing file", error, hint: "Check the store is writable.")
        }
    }

    /// The partial file of `(peer, id)`.
    public func partialPath(peer: SessionDeviceID, id: FileTransferID) -> String {
        "\(filesDirectory)/\(peer.compactHex)-\(id.rawValue).part"
    }

    /// Where a received file ends up.
    public func finishedPath(peer: SessionDeviceID, id: FileTransferID) -> String {
        "\(filesDirectory)/\(peer.compactHex)-\(id.rawValue).file"
    }

    /// Writes received bytes at `offset` of the partial file (not appended: after a crash some come again).
    public func writeIncoming(peer: SessionDeviceID, id: FileTransferID, offset: Int, bytes: [UInt8]) throws(LiveHostError) {
        let path = incoming != nil && incomingFile?.peer == peer && incomingFile?.id == id
            ? incoming!.path : partialPath(peer: peer, id: id)
        do {
            if incoming?.path != path {
                closeIncoming()
                if !FileManager.default.fileExists(atPath: path) {
                    guard FileManager.default.createFile(atPath: path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
                }
                incoming = (path, try FileHandle(forWritingTo: URL(fileURLWithPath: path)))
                incomingFile = (peer, id)
            }
            try incoming!.handle.seek(toOffset: UInt64(offset))
            try incoming!.handle.write(contentsOf: Data(bytes))
        } catch {
            closeIncoming()
            throw LiveHostError(target: path, step: "write received file bytes", detail: "\(error)", hint: "Check free disk space.")
        }
    }

    private func closeIncoming() {
        // Closing a handle whose writes all succeeded cannot lose data; its error would say nothing new.
        try? incoming?.handle.close()
        incoming = nil
        incomingFile = nil
    }

    /// Drops a partial file the sender cancelled.
    public func discardIncoming(peer: SessionDeviceID, id: FileTransferID) {
        let path = partialPath(peer: peer, id: id)
        if incoming?.path == path { closeIncoming() }
        if FileManager.default.fileExists(atPath: path) {
            _ = try? FileManager.default.removeItem(atPath: path) // already gone is the wanted state
        }
    }

    /// Moves a complete file to its final name; returns that path.
    public func finishIncoming(peer: SessionDeviceID, id: FileTransferID) throws(LiveHostError) -> String {
        let from = partialPath(peer: peer, id: id)
        let to = finishedPath(peer: peer, id: id)
        if incoming?.path == from { closeIncoming() }
        do {
            if !FileManager.default.fileExists(atPath: from) {
                // A zero-length file has no bytes to write.
                guard FileManager.default.createFile(atPath: from, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
            }
            if FileManager.default.fileExists(atPath: to) { try FileManager.default.removeItem(atPath: to) }
            try FileManager.default.moveItem(atPath: from, toPath: to)
            return to
        } catch {
            throw LiveHostError(target: to, step: "keep a received file", detail: "\(error)", hint: "Check the store's folder is writable.")
        }
    }
}
