import CaptureKit
import CaptureSet

/// One of `count` disjoint parts of a list of capture sets (`tether replay Captures --shard 2/4`):
/// CI runs each part in its own job, and the parts together are every set exactly once.
public struct ReplayShard: Sendable, Hashable, CustomStringConvertible {
    /// Which part, from 1.
    public var index: Int
    /// How many parts.
    public var count: Int

    /// Part `index` of `count`; `nil` unless 1 ≤ index ≤ count ≤ 10,000.
    public init?(index: Int, count: Int) {
        guard count >= 1, count <= 10_000, index >= 1, index <= count else { return nil }
        self.index = index
        self.count = count
    }

    /// `i/N`, as `--shard` takes it; `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let index = Int(parts[0]), let count = Int(parts[1]) else { return nil }
        self.init(index: index, count: count)
    }

    /// `2/4`.
    public var description: String { "\(index)/\(count)" }
}

/// How much replaying one set costs, estimated without replaying it, in bytes-equivalent units.
///
/// Measured on the committed sets (CI/bench/README.md, "Sharding"), a set's replay time follows
/// the bytes it reads (capture and baselines: a plugin set's 1,200 frames carry 7,000 datapoints
/// to compare) far more than its frame count (session-file-resume's 10,434 small frames replay in
/// half a plugin set's time); each frame and each recorded second add a little (the per-frame
/// dispatch, the timers that fire over the recording), and every set costs its manifest, schema
/// checks and cores' setup, about a fifth of a plugin set. So: a fixed 512 KiB per set, plus the
/// capture's and the baselines' bytes, plus 64 per frame, plus 1 KiB per recorded second.
public struct ReplayWeight: Sendable, Hashable {
    /// The set's folder.
    public var set: String
    /// Frames in its capture.
    public var frames: Int
    /// From its first frame to its last, in nanoseconds.
    public var durationNs: Int64
    /// Bytes of its capture file.
    public var captureBytes: UInt64
    /// Bytes of its baseline traces.
    public var baselineBytes: UInt64

    /// A weight from what is known of a set.
    public init(set: String, frames: Int, durationNs: Int64, captureBytes: UInt64, baselineBytes: UInt64) {
        self.set = set
        self.frames = frames
        self.durationNs = durationNs
        self.captureBytes = captureBytes
        self.baselineBytes = baselineBytes
    }

    /// Fixed cost of a set, in bytes-equivalent units.
    public static let perSet: UInt64 = 512 * 1024
    /// Cost of a frame.
    public static let perFrame: UInt64 = 64
    /// Cost of a recorded second.
    public static let perSecond: UInt64 = 1024

    /// The estimate the shards are balanced by.
    public var cost: UInt64 {
        Self.perSet &+ captureBytes &+ baselineBytes &+ UInt64(max(0, frames)) &* Self.perFrame
            &+ UInt64(max(0, durationNs) / 1_000_000_000) &* Self.perSecond
    }

    /// Reads what the estimate needs from the set at `set`: its manifest, one pass over its
    /// capture's frame headers (no dissection), and the sizes of its files.
    /// - Throws: ``CaptureSetError`` or ``CaptureError`` when the set or its capture cannot be read.
    public static func measure(_ set: String) throws -> ReplayWeight {
        let directory = CaptureSetDirectory(path: set)
        let manifest = try CaptureSetDirectory.readManifest(at: set)
        let capturePath = try directory.resolvedCapturePath(for: manifest)
        let reader = try CaptureFile.open(path: capturePath)
        var frames = 0
        var first: Int64?
        var last: Int64 = 0
        while let frame = try reader.next() {
            frames += 1
            if first == nil { first = frame.timestampNs }
            last = max(last, frame.timestampNs)
        }
        var baselineBytes: UInt64 = 0
        // A baseline that is missing or out of the set adds nothing here: the replay itself
        // reports it, with its field and line.
        for relative in manifest.baselines.values {
            if let path = try? directory.resolve(relative, field: "baselines"), FileIO.isRegularFile(path) {
                baselineBytes &+= FileIO.size(path) ?? 0
            }
        }
        return ReplayWeight(set: set, frames: frames, durationNs: first.map { last &- $0 } ?? 0,
                            captureBytes: FileIO.size(capturePath) ?? 0, baselineBytes: baselineBytes)
    }
}

/// Splits sets into shards of about equal estimated cost: the sets are taken in order of cost,
/// largest first (ties by path), and each goes to the shard with the least so far (ties to the
/// lowest-numbered shard): the longest-processing-time rule, within 4/3 of the best split. The
/// result depends only on the sets and their weights, never on the order they were listed in.
public enum ReplayShardPlanner {
    /// For each of `count` shards, its sets (in path order) and their total cost.
    public static func plan(_ weights: [ReplayWeight], count: Int) -> [(sets: [String], cost: UInt64)] {
        precondition(count >= 1, "a plan needs at least one shard")
        let ordered = weights.sorted { ($0.cost, $1.set) > ($1.cost, $0.set) }
        var shards = Array(repeating: (sets: [String](), cost: UInt64(0)), count: count)
        for weight in ordered {
            var lightest = 0
            for index in shards.indices where shards[index].cost < shards[lightest].cost { lightest = index }
            shards[lightest].sets.append(weight.set)
            shards[lightest].cost &+= weight.cost
        }
        for index in shards.indices { shards[index].sets.sort() }
        return shards
    }
}
