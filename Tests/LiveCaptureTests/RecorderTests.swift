import CaptureKit
import Foundation
import Testing

@testable import LiveCapture

/// The recorder driven by hand, through an input without a live source.
@Suite struct RecorderTests {
    static let interface = CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, name: "h4tap:test")

    func frameBytes(_ i: Int) -> [UInt8] { [0, 0, 0, 1, 4, 0x0e, 1, UInt8(truncatingIfNeeded: i)] }

    func write(_ recorder: Recorder, _ i: Int, at timestampNs: Int64) throws {
        let bytes = frameBytes(i)
        try bytes.withUnsafeBytes { data in
            try recorder.write(LiveFrameView(timestampNs: timestampNs, originalLength: bytes.count, data: data), input: 0)
        }
    }

    func makeRecorder(flushInterval: Duration = .seconds(1)) -> (Recorder, String) {
        let path = temporarySetPath()
        return (Recorder(setPath: path, title: "by hand", inputs: [RecorderInput(interface: Self.interface)], flushInterval: flushInterval), path)
    }

    @Test func killedRecorderLeavesEveryFlushedFrameReadable() throws {
        let (recorder, path) = makeRecorder(flushInterval: .seconds(3600))
        try recorder.start()
        for i in 1...5 { try write(recorder, i, at: 1_700_000_000_000_000_000 + Int64(i) * 1000) }
        try recorder.flush()
        // Not finished, not closed: as if the process had been killed here.
        let file = try readAll(path + "/capture.pcapng")
        #expect(file.frames.map(\.data) == (1...5).map(frameBytes))
        #expect(file.frames.map(\.timestampNs) == (1...5).map { 1_700_000_000_000_000_000 + Int64($0) * 1000 })
        #expect(file.warnings.allSatisfy { $0.kind == .truncated })
        let manifest = try String(contentsOfFile: path + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("status: recording"))
        #expect(!manifest.contains("capture_sha256"))
    }

    @Test func fileCutMidBlockKeepsTheCompleteFrames() throws {
        let (recorder, path) = makeRecorder(flushInterval: .seconds(3600))
        try recorder.start()
        for i in 1...3 { try write(recorder, i, at: Int64(i)) }
        try recorder.flush()
        let capture = path + "/capture.pcapng"
        let size = try #require(FileManager.default.attributesOfItem(atPath: capture)[.size] as? Int)
        // Cut the last block in half, as a kill during write(2) would.
        let handle = try #require(FileHandle(forUpdatingAtPath: capture))
        try handle.truncate(atOffset: UInt64(size - 10))
        try handle.close()
        let file = try readAll(capture)
        #expect(file.frames.map(\.data) == (1...2).map(frameBytes))
        #expect(file.warnings.contains { $0.kind == .truncated })
    }

    @Test func markGoesOnTheNextFrameAsAPacketComment() throws {
        let (recorder, path) = makeRecorder()
        try recorder.start()
        try write(recorder, 1, at: 1_000)
        recorder.mark("button pressed")
        try write(recorder, 2, at: 5_000)
        try write(recorder, 3, at: 9_000)
        let summary = try recorder.finish()
        let frames = try readAll(summary.capturePath).frames
        #expect(frames.map(\.comments) == [[], ["button pressed"], []])
        #expect(summary.annotations.map(\.frame) == [2])
        #expect(summary.annotations.map(\.timeNs) == [4_000])
        let manifest = try String(contentsOfFile: path + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("text: button pressed"))
        #expect(manifest.contains("status: complete"))
    }

    @Test func markWithNoFrameAfterItGoesOnTheLastFrame() throws {
        let (recorder, _) = makeRecorder()
        try recorder.start()
        try write(recorder, 1, at: 1_000)
        try write(recorder, 2, at: 2_000)
        recorder.mark("done")
        let summary = try recorder.finish()
        let frames = try readAll(summary.capturePath).frames
        #expect(frames.map(\.comments) == [[], ["done"]])
        #expect(summary.annotations.map(\.frame) == [2])
    }

    @Test func markAfterTheLastFrameWasFlushedIsKeptInTheManifestAndSaid() throws {
        let (recorder, _) = makeRecorder()
        try recorder.start()
        try write(recorder, 1, at: 1_000)
        try recorder.flush()
        recorder.mark("late")
        let summary = try recorder.finish()
        #expect(summary.annotations.map(\.frame) == [1])
        #expect(summary.notices.contains { $0.contains("manifest") })
    }

    @Test func withAReorderWindowFramesHandedOverLateAreWrittenInTimestampOrder() throws {
        let path = temporarySetPath()
        let recorder = Recorder(setPath: path, title: "by hand", inputs: [RecorderInput(interface: Self.interface)],
                                reorderWindow: .milliseconds(250))
        try recorder.start()
        // Stamped 3, 1, 2, 2 (two frames on one instant keep their arrival order), then 5 and 4, all
        // within the window of now, so none is written before finish.
        let base = Int64(Date().timeIntervalSince1970 * 1e9)
        for (i, stamp) in [(1, 3), (2, 1), (3, 2), (4, 2), (5, 5), (6, 4)] { try write(recorder, i, at: base + Int64(stamp) * 1000) }
        try recorder.finish()
        let file = try readAll(path + "/capture.pcapng")
        #expect(file.frames.map(\.data) == [2, 3, 4, 1, 6, 5].map(frameBytes))
        #expect(file.frames.map(\.timestampNs) == [1, 2, 2, 3, 4, 5].map { base + Int64($0) * 1000 })
    }

    @Test func withoutAReorderWindowFramesAreWrittenAsTheyCome() throws {
        let (recorder, path) = makeRecorder()
        try recorder.start()
        let base: Int64 = 1_700_000_000_000_000_000
        for (i, stamp) in [(1, 3), (2, 1)] { try write(recorder, i, at: base + Int64(stamp) * 1000) }
        try recorder.finish()
        #expect(try readAll(path + "/capture.pcapng").frames.map(\.data) == [1, 2].map(frameBytes))
    }

    @Test func writingBeforeStartIsMisuse() throws {
        let (recorder, _) = makeRecorder()
        do {
            try write(recorder, 1, at: 0)
            Issue.record("a frame was written before start()")
        } catch let error as LiveCaptureError {
            #expect(error.kind == .misuse)
        }
    }

    @Test func startRefusesAnExistingSet() throws {
        let (recorder, path) = makeRecorder()
        try recorder.start()
        let second = Recorder(setPath: path, title: "again", inputs: [RecorderInput(interface: Self.interface)])
        #expect(throws: LiveCaptureError.self) { try second.start() }
    }
}
