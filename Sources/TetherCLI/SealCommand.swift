import ArgumentParser
import CaptureKit
import CaptureSet

/// `tether seal SET`: finishes a capture set whose recording was interrupted.
struct SealCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Seal a capture set whose recording was interrupted: check its frames, record the SHA-256.",
        discussion: """
            `tether record` writes manifest.yaml with status `recording` when it starts and seals it \
            (status `complete`, the capture's SHA-256) when it ends. If the recorder was killed, the \
            set keeps every frame flushed before that (at most the last second is lost) and loads \
            with a warning. `seal` reads the whole capture first, so a damaged file is refused \
            rather than sealed, reports a cut-off last block (it is kept and ignored on every \
            read), then marks the set complete.

            The seal also covers the live traces in the set's live/ folder (live_traces_sha256 in \
            the manifest): run it again after copying a live host's trace into a set.

            A set that is already sealed is checked instead: if its capture or a live trace no \
            longer has the recorded SHA-256, seal refuses and says so; pass --accept-changed-capture \
            to record the new content's digest on purpose.

            After `kill -9` of a recorder:
              tether seal Captures/plugin-clean
            """
    )

    @Argument(help: "The capture set folder to seal, e.g. Captures/plugin-clean.")
    var set: String

    @Flag(name: .customLong("accept-changed-capture"), help: "Reseal a sealed set whose capture file or live traces changed, recording the new SHA-256s.")
    var acceptChangedCapture = false

    func validate() throws {
        guard CaptureSetDirectory.isCaptureSet(set) else {
            throw ValidationError("\(set) has no manifest.yaml, so it is not a capture set. Give a folder such as Captures/<name>.")
        }
    }

    func run() throws {
        let manifest = try CaptureSetDirectory.readManifest(at: set)
        let capturePath = try CaptureSetDirectory(path: set).resolvedCapturePath(for: manifest)
        let reader = try CaptureFile.open(path: capturePath)
        var frames = 0
        while try reader.withNextFrame({ _ in }) { frames += 1 }
        for warning in reader.warnings { Terminal.warn("tether: warning: \(warning)") }
        let sealed = try CaptureSetDirectory.seal(at: set, acceptChangedCapture: acceptChangedCapture)
        print("sealed \(set): \(frames) frames, sha256 \(sealed.captureSha256 ?? "?")")
        if let live = sealed.liveTracesSha256 {
            print("sealed \(live.count) live trace\(live.count == 1 ? "" : "s"): \(live.keys.sorted().joined(separator: ", "))")
        }
    }
}
