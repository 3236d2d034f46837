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
        #expect(throws: IngestStoreError.inUse(path: path)) {
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

    @Test func anExistingTetherStoreStillOpens() throws {
        let path = try temporaryPath()
        try SQLiteIngestStore(path: path).close()
        let reopened = try SQLiteIngestStore(path: path)
        #expect(try reopened.journalMode() == "wal")
    }
}
