import Foundation
import GRDB
import IngestStore
import Testing

/// The store refuses databases that are not its own and a second exclusive writer.
@Suite struct StoreOwnershipTests {
    func temporaryPath() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("StoreOwnershipTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("ingest.sqlite").path
    }

    @Test func aForeignSQLiteDatabaseIsRefusedAndLeftUnchanged() throws {
        let path = try temporaryPath()
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)") }
        try queue.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: IngestStoreError.notATetherStore(path: path, detail: "it holds tables of another program (customers)")) {
            _ = try SQLiteIngestStore(path: path)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aSecondExclusiveWriterIsRefusedAtStart() throws {
        let path = try temporaryPath()
        let first = try SQLiteIngestStore(path: path, exclusiveWriter: true)
        #expect(throws: IngestStoreError.inUse(path: path, holder: "pid \(ProcessInfo.processInfo.processIdentifier): tether serve ingest")) {
            _ = try SQLiteIngestStore(path: path, exclusiveWriter: true)
        }
        try first.close()
        _ = first
    }

    @Test func theExclusiveLockIsReleasedWhenTheStoreGoesAway() throws {
        let path = try temporaryPath()
        do {
            let first = try SQLiteIngestStore(path: path, exclusiveWriter: true)
            try first.close()
        }
        let second = try SQLiteIngestStore(path: path, exclusiveWriter: true)
        #expect(try second.chunkCount() == 0)
    }

    @Test func aFileThatIsNotSQLiteIsRefusedAndLeftUnchanged() throws {
        let path = try temporaryPath()
        let bytes = Data("PK\u{03}\u{04} a zip file, not a store".utf8)
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: IngestStoreError.notATetherStore(
            path: path, detail: "it is not a SQLite database (it begins 50 4b 03 04 20 61 20 7a 69 70 20 66 69 6c 65 2c, not \"SQLite format 3\"): another kind of file, or a store damaged beyond reading")) {
            _ = try SQLiteIngestStore(path: path, exclusiveWriter: true)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aDamagedStoreIsReportedAsDamagedNotAsAFolderProblem() throws {
        let path = try temporaryPath()
        // SQLite's magic string followed by a header and pages of noise: SQLite's own "not a database".
        var bytes = Array("SQLite format 3".utf8) + [0]
        bytes += [UInt8](repeating: 0xA5, count: 4096 - bytes.count)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try SQLiteIngestStore(path: path)
            Issue.record("a damaged store opened")
        } catch {
            guard case .damaged(let where_, _) = error else { Issue.record("expected .damaged, got \(error)"); return }
            #expect(where_ == path)
            #expect(error.description.contains("damaged or not a database"))
            #expect(!error.description.contains("writable directory"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    @Test func anExistingTetherStoreStillOpens() throws {
        let path = try temporaryPath()
        try SQLiteIngestStore(path: path).close()
        let reopened = try SQLiteIngestStore(path: path)
        #expect(try reopened.journalMode() == "wal")
    }
}
