import CaptureKit

/// Why a capture set could not be loaded, created or saved. Each case names the file or folder,
/// and ``description`` ends with what to do next.
public enum CaptureSetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The folder has no `manifest.yaml`.
    case notACaptureSet(path: String)
    /// The operating system refused an operation (`open`, `read`, `write`, `rename`, `mkdir`…).
    case io(path: String, operation: String, reason: String)
    /// `manifest.yaml` is not YAML, or a field is missing or of the wrong type.
    case invalidManifest(path: String, field: String?, problem: String)
    /// The manifest was written by a newer Tether with a schema this build does not know.
    case unsupportedSchemaVersion(path: String, found: Int, supported: Int)
    /// The capture file the manifest names is not there.
    case captureFileMissing(set: String, path: String)
    /// The capture file's SHA-256 is not the one the manifest recorded: it changed after sealing.
    case digestMismatch(set: String, file: String, expected: String, actual: String)
    /// `create` was asked to make a set where a manifest already exists.
    case alreadyExists(path: String)
    /// A path the manifest names (`field`: `capture_file`, `baselines.<core>`) leaves the set's
    /// folder: it is absolute, climbs out with `..`, or goes through a symbolic link to elsewhere.
    case pathOutsideSet(set: String, field: String, path: String, reason: String)
    /// `seal` on a set that is already sealed, whose capture file no longer has the sealed digest.
    case sealedCaptureChanged(set: String, file: String, sealed: String, actual: String)
    /// `manifest.yaml` is larger than any manifest Tether writes, so it is not read.
    case manifestTooLarge(path: String, bytes: UInt64, limit: UInt64)
    /// The set's live traces (`live/*.jsonl`) are not what the manifest's `live_traces_sha256`
    /// sealed: one line per changed, missing or added file.
    case liveTracesChanged(set: String, problems: [String])
    /// A new set was asked for inside the folder of an existing set (`enclosing`), where replay
    /// and every search for sets would never see it.
    case insideCaptureSet(path: String, enclosing: String)
    /// An output path names something Tether does not write over: a folder, a block device, a
    /// socket (`what` says which).
    case notAnOutputFile(path: String, what: String)
    /// A folder given as a folder of sets holds none (no folder below it has a `manifest.yaml`).
    case noCaptureSets(path: String)

    /// For ``io(path:operation:reason:)``, the system's reason alone (for a caller whose own error
    /// already names the file); `nil` for the other cases.
    public var ioReason: String? {
        if case .io(_, let operation, let reason) = self { return "\(operation) failed: \(reason)" }
        return nil
    }

    /// The problem, the file, and what to do next.
    public var description: String {
        switch self {
        case let .notACaptureSet(path):
            return "\(path): not a capture set (no manifest.yaml). Point at a folder made by `tether record` "
                + "or `tether import`, or run `tether import` on a bare capture file."
        case let .io(path, operation, reason):
            // The same words as CaptureKit's file helpers, whose failures become this case.
            return FileSystemError.io(path: path, operation: operation, reason: reason).description
        case let .invalidManifest(path, field, problem):
            let at = field.map { " at `\($0)`" } ?? ""
            return "\(path): invalid manifest\(at): \(problem). Fix the field by hand (docs/capture-set.md "
                + "lists every field) or recreate the set with `tether import`."
        case let .unsupportedSchemaVersion(path, found, supported):
            return "\(path): manifest schema_version \(found) is newer than this Tether reads (\(supported)). "
                + "Upgrade Tether to replay this set."
        case let .captureFileMissing(set, path):
            return "capture set \(set): capture file \(path) is missing. Restore it from version control "
                + "or re-record the set."
        case let .digestMismatch(set, file, expected, actual):
            return "capture set \(set): \(file) has SHA-256 \(actual) but the manifest expects \(expected); "
                + "the capture changed after it was sealed. Restore the original file, re-record the set, "
                + "run `tether import` to reseal it on purpose, or pass --no-verify to replay it anyway."
        case let .alreadyExists(path):
            return "\(path): a capture set already exists here. Choose another name or remove the old set first."
        case let .pathOutsideSet(set, field, path, reason):
            return "capture set \(set): `\(field)` is \"\(path)\", which \(reason). Paths in manifest.yaml must stay "
                + "inside the set's folder: write a relative path such as capture.pcapng or baseline/ingest.jsonl."
        case let .sealedCaptureChanged(set, file, sealed, actual):
            return "capture set \(set): \(file) changed since it was sealed: its SHA-256 was \(sealed) and is now \(actual). "
                + "Restore the original file, or pass --accept-changed-capture to seal the new content on purpose."
        case let .liveTracesChanged(set, problems):
            return "capture set \(set): its live traces changed after sealing: \(problems.joined(separator: "; ")). "
                + "Restore them from version control, run `tether seal` on the set with --accept-changed-capture to seal "
                + "the new content on purpose, or pass --no-verify to replay it anyway."
        case let .insideCaptureSet(path, enclosing):
            return "\(path) is inside the capture set \(enclosing); a set inside another set is never found by "
                + "`tether replay` or any search for sets. Give a folder outside it, e.g. beside it: \(FileIO.join(FileIO.split(enclosing).dir, FileIO.split(path).base))."
        case let .notAnOutputFile(path, what):
            return FileSystemError.notAnOutputFile(path: path, what: what).description
        case let .noCaptureSets(path):
            return "\(path) holds no capture set (no folder with a manifest.yaml). Record one with `tether record` or make one with `tether import`."
        case let .manifestTooLarge(path, bytes, limit):
            return "\(path): \(bytes) bytes is more than a manifest can be (at most \(limit)). Check that the file "
                + "is the set's manifest.yaml and not a capture or log written over it."
        }
    }
}
