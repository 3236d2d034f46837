import Foundation
import GRDB
import IngestCore
import StoreFiles

/// The durable local sink for ``IngestCore`` chunks: a SQLite database in WAL mode.
///
/// Each chunk is one row: its identity, its counts, and its points packed into one blob, as the
/// chunk holds them (``PackedDataPoints``: format 2 since its names and types are written once per
/// chunk, format 1 in older stores; both read), decoded again on read. One row per chunk instead of one per data point
/// makes a durable write a few hundred times fewer B-tree inserts, and a row is all-or-nothing, so
/// after a crash the database holds whole chunks only. ``store(_:)-(IngestChunk)`` commits one
/// chunk, ``store(_:)-([IngestChunk])`` several in one transaction. `synchronous = NORMAL` with
/// WAL keeps every committed chunk across a process crash (a power loss may drop the last few
/// commits), at a fraction of the cost of `FULL`.
///
/// A chunk is identified by source address, port, `streamStartNs` and `sequence`; storing it a
/// second time (a retry after an error, a replay) leaves the database as it was. A database of
/// schema version 1 (one row per data point) is converted on open.
///
/// Thread-safe: GRDB's pool serialises writes and lets reads run beside them.
public final class SQLiteIngestStore: Sendable {
    /// The database file's path.
    public let path: String
    private let pool: DatabasePool
    /// With `exclusiveWriter`: the store's writer lock (`<db>.lock`), held for this store's
    /// lifetime; `nil` otherwise.
    private let writerLock: StoreLock?

    /// Opens the database at `path`, creating it and its tables if needed.
    ///
    /// A file that is not a Tether store (not SQLite at all, damaged, or a SQLite database with
    /// tables of its own or an unknown schema) is refused before anything is written to it. With
    /// `exclusiveWriter`, the store also takes the writer lock beside it (``StoreLock``,
    /// `<db>.lock`), so a second exclusive writer (a second `tether serve ingest` on one database)
    /// is refused at start, told which process holds it, instead of interleaving.
    /// - Parameter purpose: what this writer is, for the message a second writer gets.
    /// - Throws: ``IngestStoreError/cannotOpen(path:underlying:)`` when the file cannot be opened,
    ///   ``IngestStoreError/notATetherStore(path:detail:)`` when it belongs to something else,
    ///   ``IngestStoreError/damaged(path:detail:)`` when SQLite cannot read it,
    ///   ``IngestStoreError/inUse(path:holder:)`` when another exclusive writer holds it.
    public init(path: String, exclusiveWriter: Bool = false, purpose: String = "tether serve ingest") throws(IngestStoreError) {
        self.path = path
        try Self.checkIsTetherStore(path: path)
        if exclusiveWriter {
            do {
                writerLock = try StoreLock(store: path, purpose: purpose)
            } catch {
                switch error {
                case let .held(_, _, holder): throw .inUse(path: path, holder: holder)
                case let .cannotLock(_, lockFile, reason): throw .cannotOpen(path: path, underlying: "cannot lock \(lockFile): \(reason)")
                }
            }
        } else {
            writerLock = nil
        }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try pool.write { db in try Self.migrate(db, path: path) }
        } catch {
            if let damage = Self.damage(error) { throw .damaged(path: path, detail: damage) }
            throw .cannotOpen(path: path, underlying: String(describing: error))
        }
    }

    /// SQLite's word for a file it cannot read as a database (not one, or damaged); `nil` for
    /// other failures (permissions, a full disk), which keep their own advice.
    static func damage(_ error: any Error) -> String? {
        guard let error = error as? DatabaseError else { return nil }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT: return error.message ?? "\(error.resultCode)"
        default: return nil
        }
    }

    /// Refuses a database that is not (or not yet) a Tether ingest store, reading it without
    /// changing it: a SQLite file with tables of its own would otherwise gain ours, and be
    /// switched to WAL mode. A missing or empty file is fine (it becomes a new store). Its first
    /// bytes are read before SQLite opens it, so a file that is not SQLite at all is refused as such.
    static func checkIsTetherStore(path: String) throws(IngestStoreError) {
        switch SQLiteFileHeader.inspect(path) {
        case .absentOrEmpty: return
        case .sqlite: break
        case .notSQLite(let first):
            throw .notATetherStore(path: path, detail: "it is not a SQLite database (it begins \(SQLiteFileHeader.hex(first)), not \"SQLite format 3\"): another kind of file, or a store damaged beyond reading")
        case .unreadable(let reason):
            throw .cannotOpen(path: path, underlying: reason)
        }
        var configuration = Configuration()
        configuration.readonly = true
        let found: (version: Int, tables: [String])
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            found = try queue.read { db in
                (try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
                 try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"))
            }
            try queue.close()
        } catch {
            if let damage = damage(error) { throw .damaged(path: path, detail: damage) }
            throw .cannotOpen(path: path, underlying: String(describing: error))
        }
        switch found.version {
        case 0 where found.tables.isEmpty:
            return
        case 0:
            throw .notATetherStore(path: path, detail: "it holds tables of another program (\(found.tables.prefix(5).joined(separator: ", ")))")
        case 1, 2:
            guard found.tables.contains("chunk") else {
                throw .notATetherStore(path: path, detail: "user_version is \(found.version) but it has no `chunk` table")
            }
        default:
            return // A newer Tether schema: migrate() says so with the version numbers.
        }
    }

    /// Closes the database. Later calls on this store throw. The exclusive-writer lock is released
    /// with the store itself (or when the process ends), not here.
    public func close() throws(IngestStoreError) {
        do {
            try pool.close()
        } catch {
            throw .database(path: path, operation: "close", underlying: String(describing: error))
        }
    }

    /// Writes the chunk in one transaction; a chunk already stored is left as is.
    /// - Returns: false when the chunk was already stored.
    /// - Throws: ``IngestStoreError/conflictingChunk(path:source:streamStartNs:sequence:)`` when
    ///   another chunk is stored under its identity, ``IngestStoreError/database(path:operation:underlying:)``
    ///   when the write fails.
    @discardableResult
    public func store(_ chunk: IngestChunk) throws(IngestStoreError) -> Bool {
        try store([chunk]) == 1
    }

    /// Writes the chunks in order in one transaction: all are committed or, on a throw, none.
    /// Chunks already stored are left as they are.
    /// - Returns: how many chunks were new.
    /// - Throws: as ``store(_:)-(IngestChunk)``; the error names the chunk that failed.
    @discardableResult
    public func store(_ chunks: [IngestChunk]) throws(IngestStoreError) -> Int {
        guard !chunks.isEmpty else { return 0 }
        // The chunks hold their points packed already, in the form stored (see PackedDataPoints);
        // copied out before the write transaction, which then holds the write lock only for the inserts.
        let packed = chunks.map { Data($0.packedPoints.bytes) }
        var current = 0
        do {
            return try pool.write { db -> Int in
                let insert = try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO chunk (address, port, stream_start_ns, sequence, byte_count, point_count, points)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
                var added = 0
                for (index, chunk) in chunks.enumerated() {
                    current = index
                    // The statement is ours and has seven parameters: skip GRDB's per-row argument check.
                    insert.setUncheckedArguments([
                        chunk.source.address, Int(chunk.source.port), chunk.streamStartNs, chunk.sequence,
                        chunk.byteCount, chunk.dataPointCount, packed[index],
                    ])
                    try insert.execute()
                    if db.changesCount == 1 {
                        added += 1
                    } else {
                        try Self.checkSameAsStored(chunk, packed: packed[index], db: db, path: path)
                    }
                }
                return added
            }
        } catch let error as IngestStoreError {
            throw error
        } catch {
            let chunk = chunks[min(current, chunks.count - 1)]
            throw .database(path: path, operation: "store chunk \(chunk.source) stream \(chunk.streamStartNs) #\(chunk.sequence)",
                            underlying: String(describing: error))
        }
    }

    /// A chunk whose identity is already stored must be the same chunk (a retry). Another chunk
    /// under a stored identity would otherwise be dropped without a word: refuse it loudly.
    private static func checkSameAsStored(_ chunk: IngestChunk, packed: Data, db: Database, path: String) throws {
        let stored = try Data.fetchOne(db, sql: """
            SELECT points FROM chunk WHERE address = ? AND port = ? AND stream_start_ns = ? AND sequence = ?
            """, arguments: [chunk.source.address, Int(chunk.source.port), chunk.streamStartNs, chunk.sequence])
        // The encoding is deterministic, so the same points give the same bytes.
        guard stored == packed else {
            throw IngestStoreError.conflictingChunk(path: path, source: chunk.source.description,
                                                    streamStartNs: chunk.streamStartNs, sequence: chunk.sequence)
        }
    }

    /// Every stored point in arrival order (the order chunks were stored, then their order inside
    /// the chunk), with its value decoded again from the stored payload.
    public func dataPoints() throws(IngestStoreError) -> [DataPoint] {
        let rows: [Row]
        do {
            rows = try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT id, address, port, point_count, points FROM chunk ORDER BY id")
            }
        } catch {
            throw .database(path: path, operation: "read data points", underlying: String(describing: error))
        }
        var points: [DataPoint] = []
        // point_count is read from the file: the reservation is bounded by the packed bytes actually
        // present (a point takes more than 8 of them), so a doctored count cannot exhaust memory.
        let claimed = rows.reduce(0) { $0 &+ max(0, ($1[3] as Int?) ?? 0) }
        let packedBytes = rows.reduce(0) { $0 &+ (($1[4] as Data?)?.count ?? 0) }
        points.reserveCapacity(max(0, min(claimed, packedBytes / 8)))
        for row in rows {
            let id: Int64 = row[0]
            let address: String = row[1]
            let port: Int = row[2]
            let pointCount: Int = row[3]
            let packed: Data = row[4]
            guard let port16 = UInt16(exactly: port) else {
                throw .corrupt(path: path, detail: "chunk row \(id): port \(port) is not a UDP port")
            }
            let source = DatagramSource(address: address, port: port16)
            let before = points.count
            do throws(PackedDataPointsError) {
                try PackedDataPoints(validating: [UInt8](packed)).decode(source: source, into: &points)
            } catch {
                throw .corrupt(path: path, detail: "chunk row \(id): \(error)")
            }
            guard points.count - before == pointCount else {
                throw .corrupt(path: path, detail: "chunk row \(id): \(points.count - before) points packed, point_count says \(pointCount)")
            }
        }
        return points
    }

    /// Number of stored chunks.
    public func chunkCount() throws(IngestStoreError) -> Int {
        try count("chunk")
    }

    /// Number of stored data points.
    public func dataPointCount() throws(IngestStoreError) -> Int {
        do {
            return try pool.read { db in try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(point_count), 0) FROM chunk") ?? 0 }
        } catch {
            throw .database(path: path, operation: "count data points", underlying: String(describing: error))
        }
    }

    /// The database's journal mode as SQLite reports it (`wal`).
    public func journalMode() throws(IngestStoreError) -> String {
        do {
            return try pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
        } catch {
            throw .database(path: path, operation: "read journal mode", underlying: String(describing: error))
        }
    }

    private func count(_ table: String) throws(IngestStoreError) -> Int {
        do {
            return try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 }
        } catch {
            throw .database(path: path, operation: "count \(table)", underlying: String(describing: error))
        }
    }

    /// The schema this code writes: `user_version` records it so that a later schema can migrate.
    /// Version 1 had one `data_point` row per point; version 2 packs a chunk's points into its row.
    static let schemaVersion = 2

    private static func migrate(_ db: Database, path: String) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        switch version {
        case 0:
            try db.execute(sql: """
                CREATE TABLE chunk (
                    id INTEGER PRIMARY KEY,
                    address TEXT NOT NULL,
                    port INTEGER NOT NULL,
                    stream_start_ns INTEGER NOT NULL,
                    sequence INTEGER NOT NULL,
                    byte_count INTEGER NOT NULL,
                    point_count INTEGER NOT NULL,
                    points BLOB NOT NULL,
                    UNIQUE (address, port, stream_start_ns, sequence)
                );
                PRAGMA user_version = 2;
                """)
        case 1:
            try migrateVersion1(db)
        case schemaVersion:
            return
        default:
            throw IngestStoreError.corrupt(
                path: path,
                detail: "schema version \(version) is newer than this Tether's \(schemaVersion); open it with a newer Tether")
        }
    }

    /// Version 1 → 2: each chunk's `data_point` rows, in id order (the arrival order), become the
    /// chunk's packed blob; the `data_point` table goes. One transaction (the caller's).
    private static func migrateVersion1(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE chunk ADD COLUMN points BLOB NOT NULL DEFAULT x''")
        let chunkIDs = try Int64.fetchAll(db, sql: "SELECT id FROM chunk ORDER BY id")
        let update = try db.makeStatement(sql: "UPDATE chunk SET points = ?, point_count = ? WHERE id = ?")
        let select = try db.makeStatement(sql: "SELECT time_ns, name, type, payload FROM data_point WHERE chunk_id = ? ORDER BY id")
        let placeholder = DatagramSource(address: "", port: 0)
        for id in chunkIDs {
            let rows = try Row.fetchAll(select, arguments: [id])
            let points = rows.map { row -> DataPoint in
                let payload: Data = row[3]
                // Only the fields the codec keeps matter here; the value is decoded again on read.
                return DataPoint(source: placeholder, timeNs: row[0], name: row[1], type: row[2], value: .bytes([]), payload: [UInt8](payload))
            }
            try update.execute(arguments: [Data(PackedDataPoints(points).bytes), points.count, id])
        }
        try db.execute(sql: """
            DROP TABLE data_point;
            PRAGMA user_version = 2;
            """)
    }
}

/// A store operation that failed, naming the database file and what to do.
public enum IngestStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be opened or set up (permissions, a full disk, not a SQLite database).
    case cannotOpen(path: String, underlying: String)
    /// A read or write failed.
    case database(path: String, operation: String, underlying: String)
    /// A chunk with other points was already stored under the same source, stream start and
    /// sequence: two streams got one identity (typically a `now` origin reused across runs).
    case conflictingChunk(path: String, source: String, streamStartNs: Int64, sequence: Int)
    /// A stored row cannot be turned back into a data point.
    case corrupt(path: String, detail: String)
    /// The file is a SQLite database of something other than Tether; it was left untouched.
    case notATetherStore(path: String, detail: String)
    /// SQLite cannot read the file as a database: it is damaged (or not a database after all).
    /// It was left unchanged.
    case damaged(path: String, detail: String)
    /// Another exclusive writer (a running `tether serve ingest`) holds the database; `holder` is
    /// its line from the lock file (`pid 4242: tether serve ingest`), when it wrote one.
    case inUse(path: String, holder: String?)

    /// One line naming the file, the operation and what to check.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let underlying):
            "cannot open ingest store \(path): \(underlying); check the path is a writable directory and the file a Tether ingest database"
        case .database(let path, let operation, let underlying):
            "ingest store \(path): \(operation) failed: \(underlying); check free disk space and that no other process holds the database"
        case .conflictingChunk(let path, let source, let streamStartNs, let sequence):
            "ingest store \(path) already holds a different chunk \(sequence) of stream \(source) started at \(streamStartNs) ns; give each run a `now` origin that does not repeat (or a new store file)"
        case .corrupt(let path, let detail):
            "ingest store \(path) holds a bad row: \(detail); the file was changed outside Tether"
        case .notATetherStore(let path, let detail):
            "\(path) is a SQLite database but not a Tether ingest store: \(detail). It was left unchanged; give --db a new file name or a store Tether made"
        case .damaged(let path, let detail):
            "ingest store \(path) is damaged or not a database: SQLite says \"\(detail)\". It was left unchanged; move it away (or restore it from a backup) and give --db a new file name"
        case .inUse(let path, let holder):
            "ingest store \(path) is in use by \(holder.map { "another process (\($0))" } ?? "another `tether serve ingest`"), which holds its lock \(StoreLock.lockPath(forStore: path)); stop that process first, or give this one another --db"
        }
    }
}
