import CaptureKit

/// `TetherBench read FILE [--fast | --next]`: every frame of FILE through CaptureKit, counted.
///
/// `--fast` (the default) uses ``CaptureReader/withNextFrame(_:)``, which lends each frame's bytes
/// from the reader's buffer with no allocation per frame; `--next` uses ``CaptureReader/next()``,
/// which returns owned frames. Both add up captured bytes and fold in each timestamp, so the work
/// cannot be optimised away, and the same figures as the C libpcap loop come out.
enum ReadBench {
    static func run(_ args: Arguments) throws -> Int32 {
        let path = try args.positional(0, "FILE")
        let useNext = args.flag("next")
        let start = monotonicSeconds()
        let reader = try CaptureFile.open(path: path)
        var frames = 0
        var bytes = 0
        var check: Int64 = 0
        if useNext {
            while let frame = try reader.next() {
                frames &+= 1
                bytes &+= frame.data.count
                check &+= frame.timestampNs
            }
        } else {
            while try reader.withNextFrame({ view in
                frames &+= 1
                bytes &+= view.data.count
                check &+= view.timestampNs
            }) {}
        }
        let seconds = monotonicSeconds() - start
        for warning in reader.warnings { printError("warning: \(warning)") }
        report([
            "mode": useNext ? "next" : "fast", "frames": "\(frames)", "bytes": "\(bytes)",
            "seconds": fixed(seconds, 6), "vmhwm_kb": "\(peakResidentKB())", "check": "\(check & 0xffff)",
        ])
        return 0
    }
}
