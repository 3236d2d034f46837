@testable import IngestIntegration
@testable import SessionLive
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import Foundation
import GRDB
import LiveHosts
import SessionCore
import Testing

@Suite struct SessionStoreTests {
    func temporaryPath(_ name: String) -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-session-store-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) // the store's own open reports a failure
        return folder.appendingPathComponent(name).path
    }

    @Test func aStoredSnapshotAndOutgoingFileReadBackAfterReopening() throws {
        let path = temporaryPath("phone.sqlite")
        var core = SessionCore(role: .phone, identity: SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!, randomSource: SeededSessionRandom(seed: 3))
        _ = core.setPairedDevice(SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!, now: .zero)
        do {
            let store = try SessionStore(path: path)
            #expect(try store.loadSnapshot() == nil)
            try store.store(core.snapshot)
            try store.storeOutgoingFile(FileTransferID(rawValue: 4), bytes: [1, 2, 3])
        }
        let reopened = try SessionStore(path: path)
        #expect(try reopened.loadSnapshot() == core.snapshot)
        #expect(try reopened.loadOutgoingFiles() == [FileTransferID(rawValue: 4): [1, 2, 3]])
        try reopened.removeOutgoingFile(FileTransferID(rawValue: 4))
        #expect(try reopened.loadOutgoingFiles().isEmpty)
    }

    @Test func receivedBytesAreWrittenAtTheirOffsetsAndKeptWhole() throws {
        let store = try SessionStore(path: temporaryPath("watch.sqlite"))
        let peer = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
        let id = FileTransferID(rawValue: 1)
        try store.writeIncoming(peer: peer, id: id, offset: 0, bytes: Array("abcdef".utf8))
        try store.writeIncoming(peer: peer, id: id, offset: 3, bytes: Array("DEFghi".utf8)) // after a crash, bytes come again
        let path = try store.finishIncoming(peer: peer, id: id)
        #expect(FileManager.default.contents(atPath: path) == Data("abcDEFghi".utf8))
    }

    @Test func aSQLiteFileOfAnotherProgramIsRefused() throws {
        #expect(throws: LiveHostError.self) { try SessionStore(path: try Self.foreignDatabase()) }
    }

    /// The file's bytes, size and modification time, and which of the store's companions exist.
    struct Footprint: Equatable {
        var bytes: Data
        var modified: Date?
        var companions: [String]

        init(_ path: String) throws {
            bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            modified = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
            companions = ["-wal", "-shm", "-journal", ".files", ".lock"].filter { FileManager.default.fileExists(atPath: path + $0) }
        }
    }

    @Test func aForeignSQLiteFileIsRefusedBeforeAnythingIsWrittenToIt() throws {
        let path = try Self.foreignDatabase()
        let before = try Footprint(path)
        let error = #expect(throws: LiveHostError.self) { try SessionStore(path: path) }
        #expect(error?.description.contains("not a Tether session store") == true, "\(String(describing: error))")
        #expect(error?.description.contains("(notes)") == true)
        #expect(try Footprint(path) == before)
        #expect(before.companions.isEmpty)
    }

    @Test(arguments: [
        ("text", Array("my shopping list\n".utf8)),
        ("json", Array("{\"session_snapshot\": 1}".utf8)),
        ("png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]),
        ("one byte", [0x53]),
        ("truncated magic", Array("SQLite form".utf8)),
    ] as [(String, [UInt8])])
    func aFileThatIsNotSQLiteIsRefusedAsNotAStoreAndLeftUnchanged(_ kind: String, _ bytes: [UInt8]) throws {
        let path = temporaryPath("\(kind).sqlite")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let before = try Footprint(path)
        let error = #expect(throws: LiveHostError.self) { try SessionStore(path: path) }
        #expect(error?.detail.contains("is not a Tether session store: it is not a SQLite database") == true, "\(kind): \(String(describing: error))")
        #expect(error?.hint.contains("writable") == false)
        #expect(try Footprint(path) == before)
    }

    @Test func aCorruptStoreSaysCorruptAndWhatToDoNotThatTheFolderIsUnwritable() throws {
        let path = temporaryPath("corrupt.sqlite")
        // SQLite's magic string, then a page of noise where its header and schema should be.
        let bytes = Data(Array("SQLite format 3".utf8) + [0] + [UInt8](repeating: 0xA5, count: 4080))
        try bytes.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: LiveHostError.self) { try SessionStore(path: path) }
        #expect(error?.detail.contains("corrupt or not a Tether session store") == true, "\(String(describing: error))")
        #expect(error?.hint.contains("Move it away") == true)
        #expect(error?.hint.contains("writable") == false)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
    }

    @Test func aWriteSQLiteFindsCorruptSaysTheStoreIsCorruptNotThatTheDiskIsFull() {
        let error = SessionStore.writeError(path: "/tmp/s.sqlite", step: "store the snapshot",
                                            DatabaseError(resultCode: .SQLITE_CORRUPT, message: "database disk image is malformed"), hint: "Check free disk space.")
        #expect(error.detail == "the store is corrupt: SQLite says \"database disk image is malformed\"")
        #expect(!error.hint.contains("disk space"))
    }

    @Test func anOrdinaryWriteFailureKeepsItsOwnAdvice() {
        let error = SessionStore.writeError(path: "/tmp/s.sqlite", step: "store the snapshot",
                                            DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full"), hint: "Check free disk space.")
        #expect(error.hint == "Check free disk space.")
    }

    @Test func aSecondWriterOnOneStoreIsRefusedNamingTheFirst() throws {
        let path = temporaryPath("phone.sqlite")
        let first = try SessionStore(path: path, purpose: "tether live session --role phone --identity A")
        let error = #expect(throws: LiveHostError.self) { try SessionStore(path: path, purpose: "tether live session --role phone --identity B") }
        #expect(error?.detail.contains("in use by another process (pid \(ProcessInfo.processInfo.processIdentifier): tether live session --role phone --identity A)") == true,
                "\(String(describing: error))")
        _ = first
    }

    @Test func aStoreIsWritableAgainOnceItsWriterIsGone() throws {
        let path = temporaryPath("watch.sqlite")
        do { _ = try SessionStore(path: path, purpose: "first") }
        let second = try SessionStore(path: path, purpose: "second")
        #expect(try second.loadSnapshot() == nil)
    }

    /// A SQLite file with one table that is not Tether's, made by Python's sqlite3.
    static func foreignDatabase() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-foreign-\(UUID().uuidString).sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE notes (x)'); c.commit()", path]
        try process.run()
        process.waitUntilExit()
        return path
    }
}
