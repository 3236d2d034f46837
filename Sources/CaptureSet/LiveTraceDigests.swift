/// The live traces a live host's run leaves in its set (`live/<core>.jsonl`, the host's own trace,
/// which replay is compared with) and their SHA-256s in the manifest's `live_traces_sha256`: the
/// seal covers them as it covers the capture file, and loading a set checks them.
extension CaptureSetDirectory {
    /// The folder of live traces inside a set.
    public static let liveFolderName = "live"

    /// Every regular file in the set's `live/` folder, as paths relative to the set (`live/messaging.jsonl`),
    /// sorted; empty when there is no such folder. Hidden files (an editor's swap file) are left out.
    /// - Throws: ``CaptureSetError/pathOutsideSet(set:field:path:reason:)`` for an entry that leads
    ///   out of the set through a symbolic link, ``CaptureSetError/liveTracesChanged(set:problems:)``
    ///   for an entry that is not a regular file (a folder, a device).
    public func liveTraceFiles() throws(CaptureSetError) -> [String] {
        let folder = FileIO.join(path, Self.liveFolderName)
        guard FileIO.exists(folder) else { return [] }
        _ = try resolve(Self.liveFolderName, field: Self.liveFolderName)
        guard FileIO.isDirectory(folder) else {
            throw .liveTracesChanged(set: name, problems: ["\(Self.liveFolderName) is not a folder"])
        }
        var files: [String] = []
        for entry in try FileIO.listDirectory(folder).sorted() where !entry.hasPrefix(".") {
            let relative = "\(Self.liveFolderName)/\(entry)"
            let resolved = try resolve(relative, field: "live_traces_sha256.\(relative)")
            guard FileIO.isRegularFile(resolved) else {
                throw .liveTracesChanged(set: name, problems: ["\(relative) is not a regular file (live traces are files of JSON lines)"])
            }
            files.append(relative)
        }
        return files
    }

    /// The SHA-256 of every live trace in the set, by relative path; `nil` when it has none (so a
    /// set without live traces keeps a manifest without the field).
    public func liveTraceDigests() throws(CaptureSetError) -> [String: String]? {
        let files = try liveTraceFiles()
        guard !files.isEmpty else { return nil }
        var digests: [String: String] = [:]
        for relative in files { digests[relative] = try Self.sha256(ofFile: FileIO.join(path, relative)) }
        return digests
    }

    /// What differs between the live traces `sealed` in the manifest and those in the folder now:
    /// a changed, missing or added file, one line each, sorted by path; empty when they agree.
    public func liveTraceDifferences(sealed: [String: String]) throws(CaptureSetError) -> [String] {
        let current = try liveTraceDigests() ?? [:]
        var problems: [String] = []
        for relative in Set(sealed.keys).union(current.keys).sorted() {
            switch (sealed[relative]?.lowercased(), current[relative]) {
            case let (expected?, actual?) where expected != actual:
                problems.append("\(relative) has SHA-256 \(actual) but was sealed with \(expected)")
            case (_?, nil):
                problems.append("\(relative) was sealed but is missing")
            case (nil, _?):
                problems.append("\(relative) was added after sealing (live_traces_sha256 does not list it)")
            default:
                break
            }
        }
        return problems
    }
}
