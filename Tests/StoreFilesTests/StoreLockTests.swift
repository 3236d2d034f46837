import Foundation
import StoreFiles
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One writer per store, and telling SQLite files from others by their first bytes.
@Suite struct StoreLockTests {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-storelock-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    var pid: Int32 { ProcessInfo.processInfo.processIdentifier }

    @Test func aSecondWriterIsRefusedWithTheHoldersPidAndPurpose() throws {
        let store = folder + "/phone.sqlite"
        let first = try StoreLock(store: store, purpose: "tether live session --role phone")
        #expect(throws: StoreLockError.held(store: store, lockFile: store + ".lock", holder: "pid \(pid): tether live session --role phone")) {
            _ = try StoreLock(store: store, purpose: "tether live session --role watch")
        }
        _ = first
    }

    @Test func theRefusalSentenceNamesTheHolderAndWhatToDo() throws {
        let error = StoreLockError.held(store: "/tmp/s.sqlite", lockFile: "/tmp/s.sqlite.lock", holder: "pid 42: tether serve ingest")
        #expect(error.description == "/tmp/s.sqlite is in use by another process (pid 42: tether serve ingest), which holds its lock /tmp/s.sqlite.lock; "
            + "a store has one writer at a time. Stop that process first, or give this one another store file.")
    }

    @Test func theLockIsFreeOnceItsHolderIsGone() throws {
        let store = folder + "/watch.sqlite"
        do { _ = try StoreLock(store: store, purpose: "first") }
        let second = try StoreLock(store: store, purpose: "second")
        #expect(try String(contentsOfFile: second.lockPath, encoding: .utf8) == "pid \(pid): second\n")
    }

    @Test func aStaleLockFileLeftByAKilledWriterDoesNotBlock() throws {
        let store = folder + "/killed.sqlite"
        try Data("pid 999999: tether live session (killed)\n".utf8).write(to: URL(fileURLWithPath: store + ".lock"))
        let lock = try StoreLock(store: store, purpose: "restarted")
        #expect(try String(contentsOfFile: lock.lockPath, encoding: .utf8) == "pid \(pid): restarted\n")
    }

    @Test func aLockInAMissingFolderSaysSo() throws {
        let store = folder + "/no/such/folder/s.sqlite"
        #expect(throws: StoreLockError.cannotLock(store: store, lockFile: store + ".lock", reason: "No such file or directory")) {
            _ = try StoreLock(store: store, purpose: "x")
        }
    }

    @Test func aLockFileThatIsASymbolicLinkIsRefusedAndItsTargetLeftUnchanged() throws {
        let store = folder + "/linked.sqlite"
        let target = folder + "/precious.txt"
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: store + ".lock", withDestinationPath: target)
        #expect(throws: StoreLockError.cannotLock(store: store, lockFile: store + ".lock",
                                                  reason: "it is a symbolic link, which Tether does not follow for a file it writes")) {
            _ = try StoreLock(store: store, purpose: "x")
        }
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep me\n")
    }

    @Test func aFileOfTheLockFilesNameThatTetherDidNotWriteIsLeftUnchanged() throws {
        let store = folder + "/notes"
        try Data("my lock notes\n".utf8).write(to: URL(fileURLWithPath: store + ".lock"))
        #expect(throws: StoreLockError.cannotLock(store: store, lockFile: store + ".lock",
                                                  reason: "it exists and is not a Tether lock file (it begins \"my lock notes\\n\"); it was left unchanged, move it away")) {
            _ = try StoreLock(store: store, purpose: "x")
        }
        #expect(try String(contentsOfFile: store + ".lock", encoding: .utf8) == "my lock notes\n")
    }

    @Test func aFolderOfTheLockFilesNameIsRefused() throws {
        let store = folder + "/dir"
        try FileManager.default.createDirectory(atPath: store + ".lock", withIntermediateDirectories: true)
        #expect(throws: StoreLockError.self) { _ = try StoreLock(store: store, purpose: "x") }
    }

    @Test func aMissingOrEmptyFileIsANewStore() throws {
        #expect(SQLiteFileHeader.inspect(folder + "/absent") == .absentOrEmpty)
        #expect(FileManager.default.createFile(atPath: folder + "/empty", contents: Data()))
        #expect(SQLiteFileHeader.inspect(folder + "/empty") == .absentOrEmpty)
    }

    @Test func sqlitesMagicStringIsRecognised() throws {
        #expect(FileManager.default.createFile(atPath: folder + "/db", contents: Data(SQLiteFileHeader.magic + [0x10, 0x00])))
        #expect(SQLiteFileHeader.inspect(folder + "/db") == .sqlite)
    }

    @Test(arguments: [
        [UInt8](),
        Array("SQLite format 2\u{0}".utf8),
        Array("SQLite format 3".utf8),
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A],
        Array("{\"snapshot\": {}}".utf8),
    ])
    func otherBytesAreNotSQLite(_ bytes: [UInt8]) throws {
        let path = folder + "/other"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes + [0x21])))
        #expect(SQLiteFileHeader.inspect(path) == .notSQLite(firstBytes: Array((bytes + [0x21]).prefix(16))))
    }

    @Test func aFolderIsNotAStore() throws {
        #expect(SQLiteFileHeader.inspect(folder) == .unreadable(reason: "it is a folder, not a file"))
    }

    @Test func aFIFOIsRefusedWithoutOpeningIt() throws {
        let fifo = folder + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(SQLiteFileHeader.inspect(fifo) == .unreadable(reason: "it is not a regular file (a FIFO, a device or a socket)"))
    }

    @Test func aDeviceIsRefused() throws {
        #expect(SQLiteFileHeader.inspect("/dev/zero") == .unreadable(reason: "it is not a regular file (a FIFO, a device or a socket)"))
    }
}
