import Foundation
import GRDB
import IngestCore

/// The durable local sink for ``IngestCore`` chunks: a SQLite database in WAL mode.
///
/// Each chunk is written with its points in one transaction, so after a crash the database holds
/// whole chunks only. `synchronous = NORMAL` with WAL keeps every committed chunk across a process
/// crash (a power loss may drop the last few commits), at a fraction of the cost of `FULL`.
///
/// A chunk is identified by source address, port, `streamStartNs` and `sequence`; storing it a
/// second time (a retry after an error, a replay) leaves the database as it was.
///
/// Thread-safe: GRDB's pool serialises writes and lets reads run beside them.
public final class SQLiteIngestStore: Sendable {
    /// The database file's path.
    public let path: String
    private let pool: DatabasePool

    /// Opens the database at `path`, creating it and its tables if needed.
    /// - Throws: ``IngestStoreError/cannotOpen(path:underlying:)`` when the file cannot be opened
    ///   or is not a database this store can use.
    public init(path: String) throws(IngestStoreError) {
        self.path = path
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try pool.write { db in try Self.migrate(db) }
        } catch {
            throw .cannotOpen(path: path, underlying: String(describing: error))
        }
    }

    /// Closes the database. Later calls on this store throw.
    public func close() throws(IngestStoreError) {
        do {
            try pool.close()
        } catch {
            throw .database(path: path, operation: "close", underlying: String(describing: error))
        }
    }

    /// Writes the chunk and its points in one transaction; a chunk already stored is left as is.
    /// - Returns: false when the chunk was already stored.
    @discardableResult
    public func store(_ chunk: IngestChunk) throws(IngestStoreError) -> Bool {
        do {
            return try pool.write { db -> Bool in
                let insertChunk = try db.cachedStatement(sql: """
                    INSERT OR IGNORE INTO chunk (address, port, stream_start_ns, sequence, byte_count, point_count)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """)
                try insertChunk.execute(arguments: [
                    chunk.source.address, Int(chunk.source.port), chunk.streamStartNs, chunk.sequence,
                    chunk.byteCount, chunk.dataPoints.count,
                ])
                guard db.changesCount == 1 else {
                    try Self.checkSameAsStored(chunk, db: db, path: path)
                    return false
                }
                let chunkID = db.lastInsertedRowID
                let insertPoint = try db.cachedStatement(sql: """
                    INSERT INTO data_point (chunk_id, time_ns, name, type, payload) VALUES (?, ?, ?, ?, ?)
                    """)
                for point in chunk.dataPoints {
                    // The statement is ours and has five parameters: skip GRDB's per-row argument check.
                    insertPoint.setUncheckedArguments([chunkID, point.timeNs, point.name, point.type, Data(point.payload)])
                    try insertPoint.execute()
                }
                return true
            }
        } catch let error as IngestStoreError {
            throw error
        } catch {
            throw .database(path: path, operation: "store chunk \(chunk.source) stream \(chunk.streamStartNs) #\(chunk.sequence)",
                            underlying: String(describing: error))
        }
    }

    /// A chunk whose identity is already stored must be the same chunk (a retry). Another chunk
    /// under a stored identity would otherwise be dropped without a word: refuse it loudly.
    private static func checkSameAsStored(_ chunk: IngestChunk, db: Database, path: String) throws {
        let rows = try Row.fetchAll(db, sql: """
            SELECT p.time_ns, p.name, p.type, p.payload
            FROM data_point p JOIN chunk c ON c.id = p.chunk_id
            WHERE c.address = ? AND c.port = ? AND c.stream_start_ns = ? AND c.sequence = ?
            ORDER BY p.id
            """, arguments: [chunk.source.address, Int(chunk.source.port), chunk.streamStartNs, chunk.sequence])
        let same = rows.count == chunk.dataPoints.count && zip(rows, chunk.dataPoints).allSatisfy { row, point in
            let payload: Data = row[3]
            return row[0] == point.timeNs && row[1] == point.name && row[2] == point.type && payload.elementsEqual(point.payload)
        }
        guard same else {
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
                try Row.fetchAll(db, sql: """
                    SELECT c.address, c.port, p.time_ns, p.name, p.type, p.payload
                    FROM data_point p JOIN chunk c ON c.id = p.chunk_id
                    ORDER BY p.id
                    """)
            }
        } catch {
            throw .database(path: path, operation: "read data points", underlying: String(describing: error))
        }
        var points: [DataPoint] = []
        points.reserveCapacity(rows.count)
        for row in rows {
            let address: String = row[0]
            let port: Int = row[1]
            let type: String = row[4]
            let payloadData: Data = row[5]
            let payload = [UInt8](payloadData)
            guard let port16 = UInt16(exactly: port) else {
                throw .corrupt(path: path, detail: "data point \(points.count): port \(port) is not a UDP port")
            }
            let value: DataValue
            do throws(PayloadDecodingError) {
                value = try DataValue.decode(type: type, payload: payload)
            } catch {
                throw .corrupt(path: path, detail: "data point \(points.count): \(error)")
            }
            points.append(DataPoint(source: DatagramSource(address: address, port: port16), timeNs: row[2],
                                    name: row[3], type: type, value: value, payload: payload))
        }
        return points
    }

    /// Number of stored chunks.
    public func chunkCount() throws(IngestStoreError) -> Int {
        try count("chunk")
    }

    /// Number of stored data points.
    public func dataPointCount() throws(IngestStoreError) -> Int {
        try count("data_point")
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

    /// Schema version 1. `user_version` records it so that a later schema can migrate.
    private static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version < 1 else { return }
        try db.execute(sql: """
            CREATE TABLE chunk (
                id INTEGER PRIMARY KEY,
                address TEXT NOT NULL,
                port INTEGER NOT NULL,
                stream_start_ns INTEGER NOT NULL,
                sequence INTEGER NOT NULL,
                byte_count INTEGER NOT NULL,
                point_count INTEGER NOT NULL,
                UNIQUE (address, port, stream_start_ns, sequence)
            );
            CREATE TABLE data_point (
                id INTEGER PRIMARY KEY,
                chunk_id INTEGER NOT NULL REFERENCES chunk(id),
                time_ns INTEGER NOT NULL,
                name TEXT NOT NULL,
                type TEXT NOT NULL,
                payload BLOB NOT NULL
            );
            PRAGMA user_version = 1;
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
        }
    }
}
