@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import Foundation
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
