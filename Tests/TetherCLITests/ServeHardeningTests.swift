import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import GRDB
import Testing
import TetherTestSupport

/// `serve ingest` on a database it must not use, and on SIGHUP.
@Suite struct ServeHardeningTests {
    /// Start `serve ingest` on a free port and wait until it says it is serving.
    static func startServe(_ folder: TemporaryFolder, database: String, name: String) throws -> BackgroundProcess {
        let serve = try BackgroundProcess(try Tools.tetherBinary(), ["serve", "ingest", "--port", "0", "--ipv4-only", "--db", database], in: folder, name: name)
        _ = try serve.waitFor("the server to start") { serve.stdout.contains("Serving ingest on") ? true : nil }
        return serve
    }

    @Test func sighupDrainsAndReportsLikeSigterm() throws {
        let folder = try TemporaryFolder("cli-tests")
        let serve = try Self.startServe(folder, database: folder.path("ingest.sqlite").path, name: "serve")
        kill(serve.process.processIdentifier, SIGHUP)
        let status = serve.exitStatus()
        #expect(status != nil, "serve ingest did not stop on SIGHUP: \(serve.stderr)")
        #expect(serve.process.terminationReason == .exit)
        #expect(status == 0, "\(serve.stderr)")
        #expect(serve.stderr.contains("SIGHUP: draining"), "\(serve.stderr)")
        #expect(serve.stdout.contains("Stopped."), "\(serve.stdout)")
    }

    @Test func aSignalSentAsSoonAsTheServerSaysItIsServingIsHeard() throws {
        // The signal handlers used to go in after the "Serving" line: a signal sent on reading it
        // could land while they were being set up and be ignored (the server then ran for ever)
        // or kill the server before it drained. Several rounds, since the window was narrow.
        let folder = try TemporaryFolder("cli-tests")
        for round in 0..<10 {
            let (status, stdout, stderr) = try signalOnReadyLine(
                try Tools.tetherBinary(), ["serve", "ingest", "--port", "0", "--ipv4-only", "--db", folder.path("ingest-\(round).sqlite").path],
                ready: "Serving ingest on", signal: SIGHUP)
            #expect(status == 0, "round \(round): \(status.map { "exited \($0)" } ?? "still serving after SIGHUP"): \(stderr)")
            #expect(stdout.contains("Stopped."), "round \(round): \(stdout)")
        }
    }

    @Test func aSecondServerOnOneDatabaseRefusesAtStart() throws {
        let folder = try TemporaryFolder("cli-tests")
        let database = folder.path("ingest.sqlite").path
        let first = try Self.startServe(folder, database: database, name: "first")
        let second = try Tools.tether(["serve", "ingest", "--port", "0", "--ipv4-only", "--db", database])
        #expect(second.status == 1)
        #expect(second.stderr.contains("in use by another process (pid \(first.process.processIdentifier): tether serve ingest)"), "\(second.stderr)")
        #expect(first.interruptAndWait() == 0)
    }

    @Test func serveRefusesASQLiteFileThatIsNotATetherStore() throws {
        let folder = try TemporaryFolder("cli-tests")
        let database = folder.path("app.sqlite").path
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in try db.execute(sql: "CREATE TABLE notes (body TEXT)") }
        try queue.close()
        let result = try Tools.tether(["serve", "ingest", "--port", "0", "--ipv4-only", "--db", database])
        #expect(result.status == 1)
        #expect(result.stderr.contains("not a Tether ingest store"), "\(result.stderr)")
    }

    @Test func serveRefusesAFileThatIsNotSQLiteAndLeavesItUnchanged() throws {
        let folder = try TemporaryFolder("cli-tests")
        let database = folder.path("notes.txt").path
        let text = Data("these are my notes, not a database\n".utf8)
        try text.write(to: URL(fileURLWithPath: database))
        let before = try FileManager.default.attributesOfItem(atPath: database)[.modificationDate] as? Date
        let result = try Tools.tether(["serve", "ingest", "--port", "0", "--ipv4-only", "--db", database])
        #expect(result.status == 1)
        #expect(result.stderr.contains("it is not a SQLite database"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == text)
        #expect(try FileManager.default.attributesOfItem(atPath: database)[.modificationDate] as? Date == before)
        #expect(!FileManager.default.fileExists(atPath: database + "-wal"))
    }
}
