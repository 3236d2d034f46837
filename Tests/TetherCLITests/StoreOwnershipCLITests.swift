import Foundation
import Testing
import TetherTestSupport

/// `tether live session --store`: one host per store, and a file that is not a store left as it was.
@Suite(.serialized) struct StoreOwnershipCLITests {

    /// A script that keeps a host running until the test stops it.
    static func idleScript(_ folder: TemporaryFolder) throws -> String {
        let script = folder.path("idle.yaml")
        try "steps:\n  - wait: 120s\n".write(to: script, atomically: true, encoding: .utf8)
        return script.path
    }

    /// The file's bytes, size and modification time.
    static func footprint(_ path: String) throws -> (Data, Date?) {
        (try Data(contentsOf: URL(fileURLWithPath: path)), try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
    }

    @Test func aSecondLiveSessionOnOneStoreIsRefusedNamingTheFirst() throws {
        let folder = try TemporaryFolder("cli-tests")
        let (controllers, ports) = try LiveMessagingEndToEndTests.twoControllers(in: folder)
        defer { controllers.stop() }
        let store = folder.path("watch.sqlite").path
        let first = try BackgroundProcess(try Tools.tetherBinary(),
                                          ["live", "session", "--role", "watch", "--hci", "tcp-client:127.0.0.1:\(ports[0])",
                                           "--script", try Self.idleScript(folder), "--store", store], in: folder, name: "first")
        defer { first.stop() }
        _ = try first.waitFor("the first host to lock its store") {
            ((try? String(contentsOfFile: store + ".lock", encoding: .utf8)) ?? "").hasPrefix("pid ") ? true : nil
        }
        let second = try Tools.tether(["live", "session", "--role", "watch", "--identity", "0ff1ce00-0000-4000-8000-0000000000b2",
                                       "--hci", "tcp-client:127.0.0.1:\(ports[1])", "--script", try Self.idleScript(folder), "--store", store])
        #expect(second.status == 1)
        #expect(second.stderr.contains("\(store): lock session store failed: it is in use by another process (pid \(first.process.processIdentifier): tether live session --role watch --identity "),
                "\(second.stderr)")
        #expect(first.process.isRunning)
    }

    @Test func aForeignSQLiteFileGivenAsStoreIsRefusedBeforeAnythingIsWritten() throws {
        let folder = try TemporaryFolder("cli-tests")
        let store = folder.path("app.sqlite").path
        let python = try Tools.require("python3", install: "sudo apt-get install -y python3")
        _ = try Tools.run(python, ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE contacts (name)'); c.commit()", store])
        let before = try Self.footprint(store)
        let result = try Tools.tether(["live", "session", "--role", "watch", "--hci", "tcp-client:127.0.0.1:1",
                                       "--script", try Self.idleScript(folder), "--store", store])
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a Tether session store"), "\(result.stderr)")
        let after = try Self.footprint(store)
        #expect(after.0 == before.0)
        #expect(after.1 == before.1)
        for companion in ["-wal", "-shm", "-journal", ".lock", ".files"] {
            #expect(!FileManager.default.fileExists(atPath: store + companion), "\(companion)")
        }
    }

    @Test func aCorruptStoreIsCalledCorruptNotAFolderProblem() throws {
        let folder = try TemporaryFolder("cli-tests")
        let store = folder.path("phone.sqlite").path
        let bytes = Data(Array("SQLite format 3".utf8) + [0] + [UInt8](repeating: 0x5A, count: 8176))
        try bytes.write(to: URL(fileURLWithPath: store))
        let result = try Tools.tether(["live", "session", "--role", "watch", "--hci", "tcp-client:127.0.0.1:1",
                                       "--script", try Self.idleScript(folder), "--store", store])
        #expect(result.status == 1)
        #expect(result.stderr.contains("corrupt or not a Tether session store"), "\(result.stderr)")
        #expect(!result.stderr.contains("writable"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == bytes)
    }
}
