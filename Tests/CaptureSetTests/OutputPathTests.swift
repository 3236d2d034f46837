import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CaptureKit
@testable import CaptureSet

/// Output paths (`--out`, `--trace`, `--junit`): a regular file is replaced atomically, a
/// character device or FIFO is written through and stays what it is, anything else is refused.
/// The devices are made in a temporary folder (`mknod`, as root), never the machine's own.
@Suite struct OutputPathTests {
    static func folder() throws -> String {
        var template = Array("/tmp/tether-output-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CaptureSetError.io(path: "/tmp", operation: "mkdtemp", reason: FileIO.errnoText()) }
        return String(cString: made)
    }

    /// A device number in Linux's encoding for small numbers (major < 4096, minor < 256).
    static func device(_ major: UInt64, _ minor: UInt64) -> dev_t { dev_t(major << 8 | minor) }

    static func kind(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & S_IFMT
    }

    @Test func nothingThereOrARegularFileIsReplacedAtomically() throws {
        let dir = try Self.folder()
        #expect(try OutputPath.resolve(dir + "/new.xml") == .replaceAtomically(path: dir + "/new.xml"))
        try FileIO.writeOutput(Array("old".utf8), to: dir + "/new.xml")
        #expect(try OutputPath.resolve(dir + "/new.xml") == .replaceAtomically(path: dir + "/new.xml"))
        try FileIO.writeOutput(Array("new".utf8), to: dir + "/new.xml")
        #expect(try FileIO.readAll(dir + "/new.xml") == Array("new".utf8))
    }

    @Test func aLinkToARegularFileWritesTheFileAndKeepsTheLink() throws {
        let dir = try Self.folder()
        try FileIO.writeOutput(Array("old".utf8), to: dir + "/target.xml")
        #expect(symlink(dir + "/target.xml", dir + "/link.xml") == 0)
        try FileIO.writeOutput(Array("new".utf8), to: dir + "/link.xml")
        #expect(Self.kind(dir + "/link.xml") == S_IFLNK)
        #expect(try FileIO.readAll(dir + "/target.xml") == Array("new".utf8))
    }

    @Test func aCharacterDeviceIsWrittenThroughAndStaysADevice() throws {
        let dir = try Self.folder()
        let device = dir + "/null"
        // The same device as /dev/null (major 1, minor 3), made here so a regression cannot
        // replace the machine's own.
        try #require(mknod(device, S_IFCHR | 0o666, Self.device(1, 3)) == 0, "mknod needs root: \(FileIO.errnoText())")
        #expect(try OutputPath.resolve(device) == .writeThrough(path: device))
        try FileIO.writeOutput(Array(repeating: 0x41, count: 100_000), to: device)
        #expect(Self.kind(device) == S_IFCHR)
    }

    @Test func aFullDeviceReportsTheWriteFailureAndStaysADevice() throws {
        let dir = try Self.folder()
        let device = dir + "/full"
        try #require(mknod(device, S_IFCHR | 0o666, Self.device(1, 7)) == 0, "mknod needs root: \(FileIO.errnoText())")
        #expect(throws: CaptureSetError.self) { try FileIO.writeOutput(Array("x".utf8), to: device) }
        #expect(Self.kind(device) == S_IFCHR)
    }

    @Test func aFIFOIsWrittenThroughToItsReader() throws {
        let dir = try Self.folder()
        let fifo = dir + "/pipe"
        try #require(mkfifo(fifo, 0o600) == 0)
        let reader = Foundation.Thread { _ = FileIO.readFIFOForTest(fifo) }
        reader.start()
        try FileIO.writeOutput(Array("through".utf8), to: fifo)
        #expect(Self.kind(fifo) == S_IFIFO)
    }

    @Test func aFolderABlockDeviceAndASocketAreRefusedSayingWhatTheyAre() throws {
        let dir = try Self.folder()
        #expect(throws: OutputPath.Refusal(path: dir, what: "a folder")) { try OutputPath.resolve(dir) }
        let block = dir + "/block"
        try #require(mknod(block, S_IFBLK | 0o600, Self.device(7, 0)) == 0, "mknod needs root: \(FileIO.errnoText())")
        #expect(throws: CaptureSetError.notAnOutputFile(path: block, what: "a block device")) { try FileIO.writeOutput([1], to: block) }
        #expect(Self.kind(block) == S_IFBLK)
    }

    @Test func theProcessesOwnDescriptorsAreWrittenThroughNeverRenamedOver() throws {
        #expect(OutputPath.namesADescriptor("/dev/stdout"))
        #expect(OutputPath.namesADescriptor("/proc/self/fd/1"))
        #expect(!OutputPath.namesADescriptor("/dev/shm/report.xml"))
        if case .replaceAtomically = try OutputPath.resolve("/dev/stdout") { Issue.record("/dev/stdout would be renamed over") }
    }
}

extension FileIO {
    /// Opens a FIFO for reading and reads it to its end.
    static func readFIFOForTest(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            all += buffer[0..<n]
        }
        return all
    }
}
