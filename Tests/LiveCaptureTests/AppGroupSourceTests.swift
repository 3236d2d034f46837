import CaptureKit
import Foundation
@testable import LiveCapture
import Testing

/// Real inotify on a temporary folder: the source's frames for an atomic write and a read.
@Suite struct AppGroupSourceTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "tether-appgroup-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs the source on its own thread while `act` touches the folder, then returns the frames' JSON objects.
    func record(in folder: String, _ act: () throws -> Void) throws -> [[String: Any]] {
        let source = try AppGroupSource(folder: folder)
        let frames = FrameBox()
        let thread = Thread {
            do {
                try source.run { event in
                    if case .frame(let view) = event { frames.append(Array(view.data)) }
                }
            } catch {
                frames.fail(error)
            }
        }
        thread.start()
        try act()
        Thread.sleep(forTimeInterval: 0.5)
        source.stop()
        while !thread.isFinished { Thread.sleep(forTimeInterval: 0.02) }
        source.close()
        return try frames.objects()
    }

    @Test func anAtomicWriteIsRecordedWithItsWriterAndContent() throws {
        let folder = try folder()
        let objects = try record(in: folder) {
            let temporary = folder + "/.settings.json.tmp-host-4242"
            try Data("{\"version\":2}".utf8).write(to: URL(fileURLWithPath: temporary))
            #expect(rename(temporary, folder + "/settings.json") == 0)
        }
        let ops = objects.map { "\($0["op"]!) \($0["name"]!)" }
        #expect(ops == [
            "created .settings.json.tmp-host-4242", "opened .settings.json.tmp-host-4242",
            "closed_written .settings.json.tmp-host-4242", "moved_out .settings.json.tmp-host-4242",
            "moved_in settings.json",
        ])
        #expect(objects[2]["writer"] as? String == "host")
        #expect(objects[2]["temporary_for"] as? String == "settings.json")
        #expect(objects[4]["content"] as? String == "7b2276657273696f6e223a327d")
        #expect(objects[4]["size"] as? Int == 13)
        #expect(objects[3]["cookie"] as? Int == objects[4]["cookie"] as? Int)
        #expect(objects[4]["writer"] as? String == "host")
    }

    @Test func theCloseOfTheSourcesOwnReadOvertakenByTheRenameIsNotRecordedUnderTheNewName() throws {
        // The order a loaded machine gives: the source reads the temporary file while the writer
        // renames it, so the kernel names that read's close by the final name, after the rename.
        let folder = try folder()
        let source = try AppGroupSource(folder: folder)
        defer { source.close() }
        let temporary = ".settings.json.tmp-host-4242"
        try Data("{\"version\":2}".utf8).write(to: URL(fileURLWithPath: folder + "/" + temporary))
        func change(_ kind: FolderChange.Kind, _ name: String, cookie: UInt32 = 0) -> [String: Any]? {
            source.record(for: FolderChange(kind: kind, name: name, cookie: cookie, timestampNs: 0))
        }
        #expect(change(.closedWritten, temporary)?["content"] as? String == "7b2276657273696f6e223a327d")
        #expect(rename(folder + "/" + temporary, folder + "/settings.json") == 0)
        #expect(change(.opened, temporary) == nil, "the source's own open of the temporary file")
        #expect(change(.movedOut, temporary, cookie: 9)?["writer"] as? String == "host")
        #expect(change(.movedIn, "settings.json", cookie: 9)?["size"] as? Int == 13)
        // The read of the temporary file's close, then the moved_in read's open and close.
        #expect(change(.closedUnwritten, "settings.json") == nil)
        #expect(change(.opened, "settings.json") == nil)
        #expect(change(.closedUnwritten, "settings.json") == nil)
        // Anyone else's read is recorded.
        #expect(change(.opened, "settings.json")?["op"] as? String == "opened")
    }

    @Test func aReadByAnotherProcessIsRecordedButTheRecordersOwnReadsAreNot() throws {
        let folder = try folder()
        try Data("hello".utf8).write(to: URL(fileURLWithPath: folder + "/has-content"))
        let objects = try record(in: folder) {
            _ = FileManager.default.contents(atPath: folder + "/has-content")
        }
        #expect(objects.map { $0["op"] as? String } == ["opened", "closed_unwritten"])
    }

    @Test func theTemporaryNameConventionIsParsed() {
        #expect(AppGroupSource.temporaryName(".settings.json.tmp-widget-17")! == ("settings.json", "widget"))
        #expect(AppGroupSource.temporaryName("settings.json") == nil)
        #expect(AppGroupSource.temporaryName(".x.tmp-host-notapid") == nil)
        #expect(AppGroupSource.temporaryName("..tmp-host-1") == nil)
    }

    @Test func aMissingFolderIsRefusedWithAHint() {
        do {
            _ = try AppGroupSource(folder: "/nonexistent/tether-group")
            Issue.record("watched a folder that does not exist")
        } catch {
            #expect(error.hint.contains("mkdir -p"))
        }
    }
}

/// The frames (or the error) the source's thread reports.
///
/// `@unchecked Sendable`: every mutable field (`frames`, `error`) is read and written under `lock`;
/// the source's thread appends, and the test reads after that thread finished.
final class FrameBox: @unchecked Sendable {
    private let lock = NSLock()
    private var frames: [[UInt8]] = []
    private var error: (any Error)?

    func append(_ frame: [UInt8]) { lock.withLock { frames.append(frame) } }
    func fail(_ error: any Error) { lock.withLock { self.error = error } }

    func objects() throws -> [[String: Any]] {
        try lock.withLock {
            if let error { throw error }
            return try frames.map { try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]) }
        }
    }
}
