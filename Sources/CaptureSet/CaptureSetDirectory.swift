import Foundation
import Yams

/// A capture set on disk: `<folder>/manifest.yaml`, the capture file it names, and
/// `baseline/<core>.jsonl`. Loading, creating, sealing and finding sets.
public struct CaptureSetDirectory: Sendable, Hashable {
    /// The manifest's file name inside a set folder.
    public static let manifestFileName = "manifest.yaml"
    /// The capture file name Tether gives a new set.
    public static let defaultCaptureFileName = "capture.pcapng"
    /// The folder holding accepted traces.
    public static let baselineFolderName = "baseline"

    /// The set's folder, as given.
    public var path: String

    /// Refer to the set at `path` (nothing is read).
    public init(path: String) { self.path = path }

    /// The folder's last path component, which is the set's name in reports.
    public var name: String { FileIO.split(path).base }
    /// `<path>/manifest.yaml`.
    public var manifestPath: String { FileIO.join(path, Self.manifestFileName) }
    /// Where the set's capture file is, for the given manifest (joined as written; a manifest that
    /// was loaded or saved has already been checked to name a relative path without `..`).
    /// ``resolvedCapturePath(for:)`` also follows symbolic links.
    public func capturePath(for manifest: CaptureSetManifest) -> String { FileIO.join(path, manifest.captureFile) }

    /// The capture file's path, refused when it leaves the set's folder (absolute, `..`, or a
    /// symbolic link to elsewhere).
    /// - Throws: ``CaptureSetError/pathOutsideSet(set:field:path:reason:)``.
    public func resolvedCapturePath(for manifest: CaptureSetManifest) throws(CaptureSetError) -> String {
        try resolve(manifest.captureFile, field: "capture_file")
    }

    /// The most bytes a `manifest.yaml` may have. Tether's own manifests are a few kilobytes; a
    /// larger file is not parsed, so a capture copied over the manifest cannot exhaust memory.
    public static let maximumManifestBytes: UInt64 = 16 << 20

    /// `relative` joined to the set's folder, checked to stay inside it: not absolute, no `..`
    /// component, and, once symbolic links are followed (for the parts that exist), still below
    /// the folder's own canonical path. `field` names the manifest entry in the error.
    /// - Throws: ``CaptureSetError/pathOutsideSet(set:field:path:reason:)``.
    public func resolve(_ relative: String, field: String) throws(CaptureSetError) -> String {
        try Self.checkRelative(relative, field: field, set: name)
        let joined = FileIO.join(path, relative)
        guard let root = FileIO.realPath(path) else {
            throw .io(path: path, operation: "resolve folder", reason: "it does not exist or cannot be read")
        }
        guard let target = FileIO.canonicalTarget(joined) else {
            throw .pathOutsideSet(set: name, field: field, path: relative, reason: "cannot be resolved (a broken link in its folders)")
        }
        let prefix = root.hasSuffix("/") ? root : root + "/"
        guard target.hasPrefix(prefix) else {
            throw .pathOutsideSet(set: name, field: field, path: relative,
                                  reason: "leads through a symbolic link to \(target), outside the set's folder \(root)")
        }
        return joined
    }

    /// Where a file at `path` is or would be, canonically: symbolic links, `.` and `..` resolved
    /// for the parts that exist. Lets a command compare an output path with the files it reads.
    /// `nil` when no part of the path can be resolved.
    public static func canonicalTarget(of path: String) -> String? { FileIO.canonicalTarget(path) }

    /// The capture sets `paths` name, as `tether replay` reads its arguments: a path that is a set
    /// (it holds a `manifest.yaml`) is that set; any other folder is searched for sets
    /// (``findSets(under:)``), which must find at least one. Each set comes once (``uniqueSets(_:)``).
    /// - Returns: the sets in the order given (a searched folder's in name order), and each later
    ///   name left out as a second name of a set kept.
    /// - Throws: ``CaptureSetError/noCaptureSets(path:)`` for a folder that holds none, and what
    ///   ``findSets(under:)`` throws.
    public static func sets(named paths: [String]) throws(CaptureSetError) -> (sets: [String], duplicates: [(dropped: String, kept: String)]) {
        var sets: [String] = []
        for path in paths {
            if isCaptureSet(path) {
                sets.append(path)
                continue
            }
            let found = try findSets(under: path)
            guard !found.isEmpty else { throw .noCaptureSets(path: path) }
            sets += found
        }
        return uniqueSets(sets)
    }

    /// `sets` with each set once: a set named twice, or once directly and once through a
    /// symbolic link or another spelling (`Captures/x`, `./Captures/x/`, `link-to-x`), is kept at
    /// its first place. Sets are the same when their folders resolve to the same real path.
    /// - Returns: the sets, and each later name left out with the name kept for it.
    public static func uniqueSets(_ sets: [String]) -> (sets: [String], duplicates: [(dropped: String, kept: String)]) {
        var kept: [String] = []
        var duplicates: [(dropped: String, kept: String)] = []
        var seen: [String: String] = [:]
        for set in sets {
            // A folder that cannot be resolved is kept as given: its replay says what is wrong.
            let key = canonicalTarget(of: set) ?? set
            if let first = seen[key] {
                duplicates.append((set, first))
            } else {
                seen[key] = set
                kept.append(set)
            }
        }
        return (kept, duplicates)
    }

    /// The lexical half of ``resolve(_:field:)``: a manifest path must be relative, non-empty,
    /// free of NUL bytes and without `..` components.
    static func checkRelative(_ relative: String, field: String, set: String) throws(CaptureSetError) {
        if relative.isEmpty {
            throw .pathOutsideSet(set: set, field: field, path: relative, reason: "is empty")
        }
        if relative.hasPrefix("/") {
            throw .pathOutsideSet(set: set, field: field, path: relative, reason: "is absolute")
        }
        if relative.utf8.contains(0) {
            throw .pathOutsideSet(set: set, field: field, path: relative, reason: "contains a NUL byte")
        }
        if relative.split(separator: "/", omittingEmptySubsequences: true).contains("..") {
            throw .pathOutsideSet(set: set, field: field, path: relative, reason: "climbs out of the folder with `..`")
        }
    }
    /// The conventional baseline path of a core, relative to the set folder: `baseline/<core>.jsonl`.
    public static func defaultBaselinePath(core: String) -> String { "\(baselineFolderName)/\(core).jsonl" }

    // MARK: Finding sets

    /// `true` when `path` is a folder holding a `manifest.yaml`.
    public static func isCaptureSet(_ path: String) -> Bool {
        FileIO.isDirectory(path) && FileIO.isRegularFile(FileIO.join(path, manifestFileName))
    }

    /// The capture set that `path` would be inside: the nearest folder above it (symbolic links
    /// followed) that holds a `manifest.yaml`; `nil` when none does. A set made there would be a
    /// folder inside another set, which ``findSets(under:)`` and `replay` never look into.
    public static func enclosingSet(of path: String) -> String? {
        guard let target = FileIO.canonicalTarget(path) else { return nil }
        var folder = FileIO.split(target).dir
        while !folder.isEmpty {
            if isCaptureSet(folder) { return folder }
            let parent = FileIO.split(folder).dir
            if parent == folder { break }
            folder = parent
        }
        return nil
    }

    /// Refuses to make a set at `path` when it would be inside another set.
    /// - Throws: ``CaptureSetError/insideCaptureSet(path:enclosing:)``.
    public static func checkNotInsideSet(_ path: String) throws(CaptureSetError) {
        if let enclosing = enclosingSet(of: path) { throw .insideCaptureSet(path: path, enclosing: enclosing) }
    }

    /// Every capture set at or below `folder`, sorted by path. A set's own subfolders are not
    /// searched (a set does not nest); hidden folders (`.build`, `.git`) are skipped.
    public static func findSets(under folder: String) throws(CaptureSetError) -> [String] {
        guard FileIO.isDirectory(folder) else {
            throw .io(path: folder, operation: "open folder", reason: "not a folder or does not exist")
        }
        var found: [String] = []
        try collectSets(in: folder, depth: 0, into: &found)
        return found.sorted()
    }

    private static func collectSets(in folder: String, depth: Int, into found: inout [String]) throws(CaptureSetError) {
        if isCaptureSet(folder) {
            found.append(folder)
            return
        }
        // Symlink loops would otherwise recurse for ever; no real capture tree is this deep.
        guard depth < 32 else { return }
        for entry in try FileIO.listDirectory(folder).sorted() where !entry.hasPrefix(".") {
            let child = FileIO.join(folder, entry)
            if FileIO.isDirectory(child) { try collectSets(in: child, depth: depth + 1, into: &found) }
        }
    }

    // MARK: Manifest text

    /// The manifest as YAML, in a stable key order (the same manifest gives the same text).
    public static func encodeManifest(_ manifest: CaptureSetManifest) throws(CaptureSetError) -> String {
        do {
            let encoder = YAMLEncoder()
            encoder.options.indent = 2
            encoder.options.allowUnicode = true
            encoder.options.width = -1
            return try encoder.encode(manifest)
        } catch {
            throw .invalidManifest(path: "<memory>", field: nil, problem: "cannot be written as YAML: \(error)")
        }
    }

    /// Parses manifest YAML; `path` is only used in error messages.
    public static func decodeManifest(_ text: String, path: String) throws(CaptureSetError) -> CaptureSetManifest {
        // The schema version is checked first, so a manifest from a newer Tether fails with
        // "upgrade Tether" rather than with whichever new field it trips over first.
        struct VersionOnly: Decodable {
            var schemaVersion: Int?
            enum CodingKeys: String, CodingKey { case schemaVersion = "schema_version" }
        }
        // One parse, within the manifest budget: aliases are counted as what they expand to
        // before anything is decoded, so a few hundred hostile bytes cannot become gigabytes.
        let document: Node?
        do {
            document = try BudgetedYAML.compose(text, limits: .manifest)
        } catch let error as YAMLLimitError {
            throw .invalidManifest(path: path, field: nil, problem: "the file \(error)")
        } catch {
            throw .invalidManifest(path: path, field: nil, problem: describe(error))
        }
        let root = document ?? Node.mapping(Node.Mapping([]))
        let version: VersionOnly
        do {
            version = try YAMLDecoder().decode(VersionOnly.self, from: root)
        } catch {
            throw .invalidManifest(path: path, field: nil, problem: describe(error))
        }
        if let found = version.schemaVersion, found > CaptureSetManifest.supportedSchemaVersion {
            throw .unsupportedSchemaVersion(path: path, found: found, supported: CaptureSetManifest.supportedSchemaVersion)
        }
        var manifest: CaptureSetManifest
        do {
            manifest = try YAMLDecoder().decode(CaptureSetManifest.self, from: root)
        } catch let error as DecodingError {
            throw .invalidManifest(path: path, field: fieldPath(of: error), problem: describe(error))
        } catch {
            throw .invalidManifest(path: path, field: nil, problem: describe(error))
        }
        if let document {
            let tree = ManifestTree(document)
            var lines: [String: Int] = [:]
            for (keyNode, valueNode) in document.mapping ?? Node.Mapping([]) {
                let key = keyNode.string ?? "\(keyNode)"
                let line = keyNode.mark?.line
                if let line { lines[key] = line }
                guard !CaptureSetManifest.reservedKeys.contains(key) else { continue }
                manifest.sections.append(ManifestSection(name: key, value: ManifestTree(valueNode), line: line))
            }
            if case .sequence(let items, _)? = tree["interfaces"] {
                for (i, item) in items.enumerated() {
                    for key in item.keys {
                        if let line = item[key]?.line { lines["interfaces[\(i)].\(key)"] = line }
                    }
                }
            }
            manifest.sourceLines = SourceLines(lines)
            if case .sequence(let items, _)? = tree["scenarios"] {
                for (i, item) in items.enumerated() {
                    for key in item.keys where !ManifestScenario.knownKeys.contains(key) {
                        let at = item[key]?.line.map { " (line \($0))" } ?? ""
                        manifest.sourceLines.ignoredKeys.append(
                            "`scenarios[\(i)].\(key)`\(at) is not a scenario field and is ignored; a scenario has "
                                + ManifestScenario.knownKeys.joined(separator: ", ") + " (docs/faults.md)")
                    }
                }
            }
        }
        try validate(manifest, path: path)
        return manifest
    }

    /// Checks that decoding alone cannot do.
    static func validate(_ manifest: CaptureSetManifest, path: String) throws(CaptureSetError) {
        if manifest.schemaVersion < 1 {
            throw .invalidManifest(path: path, field: "schema_version", problem: "must be 1 or more, found \(manifest.schemaVersion)")
        }
        if manifest.captureFile.isEmpty {
            throw .invalidManifest(path: path, field: "capture_file", problem: "is empty")
        }
        let setName = FileIO.split(FileIO.split(path).dir).base
        try checkRelative(manifest.captureFile, field: "capture_file", set: setName)
        for core in manifest.baselines.keys.sorted() {
            try checkRelative(manifest.baselines[core, default: ""], field: "baselines.\(core)", set: setName)
        }
        var scenarioNames: Set<String> = []
        for (index, scenario) in manifest.scenarios.enumerated() {
            let field = "scenarios[\(index)]"
            guard !scenario.name.isEmpty, scenario.name.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }) else {
                throw .invalidManifest(path: path, field: "\(field).name",
                                       problem: "\"\(scenario.name)\" is not a scenario name: use lower case letters, digits, - and _ (it names the scenario's baseline folder)")
            }
            guard scenario.name.utf8.count <= ManifestScenario.maximumNameLength else {
                throw .invalidManifest(path: path, field: "\(field).name",
                                       problem: "is \(scenario.name.utf8.count) characters long; a scenario name names its baseline folder, so it may have at most \(ManifestScenario.maximumNameLength)")
            }
            guard scenarioNames.insert(scenario.name).inserted else {
                throw .invalidManifest(path: path, field: "\(field).name", problem: "a scenario called \"\(scenario.name)\" comes earlier; give each a name of its own")
            }
            guard !scenario.faults.isEmpty else {
                throw .invalidManifest(path: path, field: "\(field).faults", problem: "is empty; a scenario is the set replayed with faults (e.g. faults: [drop:frame=192])")
            }
            for core in scenario.baselines.keys.sorted() {
                try checkRelative(scenario.baselines[core, default: ""], field: "\(field).baselines.\(core)", set: setName)
            }
        }
        if let digest = manifest.captureSha256, !isHexDigest(digest) {
            throw .invalidManifest(path: path, field: "capture_sha256", problem: "expected 64 hex digits, found \"\(digest)\"")
        }
        for file in (manifest.liveTracesSha256 ?? [:]).keys.sorted() {
            let field = "live_traces_sha256.\(file)"
            try checkRelative(file, field: field, set: setName)
            guard file.hasPrefix(liveFolderName + "/"), !file.dropFirst(liveFolderName.count + 1).contains("/") else {
                throw .invalidManifest(path: path, field: field, problem: "names a file outside the set's live/ folder; only live/<name> files are sealed here")
            }
            let digest = manifest.liveTracesSha256![file]!
            if !isHexDigest(digest) {
                throw .invalidManifest(path: path, field: field, problem: "expected 64 hex digits, found \"\(digest)\"")
            }
        }
        var seen = Set<Int>()
        for (i, interface) in manifest.interfaces.enumerated() {
            if interface.index < 0 {
                throw .invalidManifest(path: path, field: "interfaces[\(i)].index", problem: "must be 0 or more, found \(interface.index)")
            }
            if !seen.insert(interface.index).inserted {
                throw .invalidManifest(path: path, field: "interfaces[\(i)].index", problem: "interface \(interface.index) is described twice")
            }
        }
        for (i, named) in manifest.gattHandles.enumerated() {
            if let first = named.uuidTextProblems.first {
                throw .invalidManifest(path: path, field: "gatt_handles[\(i)].\(first.key)", problem: first.problem)
            }
        }
        for (i, annotation) in manifest.annotations.enumerated() where annotation.frame < 1 {
            throw .invalidManifest(path: path, field: "annotations[\(i)].frame", problem: "frame numbers start at 1, found \(annotation.frame)")
        }
    }

    private static func isHexDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) }
    }

    static func fieldPath(of error: DecodingError) -> String? {
        let path: [any CodingKey]
        switch error {
        case let .typeMismatch(_, c), let .valueNotFound(_, c), let .dataCorrupted(c): path = c.codingPath
        case let .keyNotFound(key, c): path = c.codingPath + [key]
        @unknown default: return nil
        }
        guard !path.isEmpty else { return nil }
        var text = ""
        for key in path {
            if let i = key.intValue { text += "[\(i)]" } else { text += text.isEmpty ? key.stringValue : "." + key.stringValue }
        }
        return text
    }

    static func describe(_ error: any Error) -> String {
        if let yaml = error as? YamlError { return describeYAML(yaml) }
        guard let error = error as? DecodingError else { return "\(error)" }
        // Yams reports a syntax error as "not valid YAML" with the scanner's error underneath.
        if case let .dataCorrupted(context) = error, let yaml = context.underlyingError as? YamlError {
            return describeYAML(yaml)
        }
        switch error {
        case let .typeMismatch(type, c): return "expected \(type): \(c.debugDescription)"
        case let .valueNotFound(type, c): return "expected a value of type \(type): \(c.debugDescription)"
        case let .keyNotFound(key, _): return "required key `\(key.stringValue)` is missing"
        case let .dataCorrupted(c): return c.debugDescription
        @unknown default: return "\(error)"
        }
    }

    /// A YAML syntax error as one line: where (line and column, from 1), the problem, and the
    /// construct it was in, without the echoed document Yams appends.
    static func describeYAML(_ error: YamlError) -> String {
        func place(_ mark: Mark) -> String { "line \(mark.line), column \(mark.column)" }
        func within(_ context: YamlError.Context?) -> String {
            guard let context else { return "" }
            return " (\(context.text) at \(place(context.mark)))"
        }
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            return "YAML syntax error at \(place(mark)): \(problem)\(within(context))"
        case let .reader(problem, offset, _, _):
            return "YAML cannot be read\(offset.map { " at byte \($0)" } ?? ""): \(problem)"
        case let .duplicatedKeysInMapping(duplicates, context):
            return "duplicated key(s) \(duplicates.joined(separator: ", ")) at \(place(context.mark))"
        default:
            return "\(error)"
        }
    }

    // MARK: Reading and writing

    /// Reads and parses `<setPath>/manifest.yaml` without looking at the capture file.
    public static func readManifest(at setPath: String) throws(CaptureSetError) -> CaptureSetManifest {
        let set = CaptureSetDirectory(path: setPath)
        guard FileIO.isDirectory(setPath) else {
            throw .io(path: setPath, operation: "open folder", reason: "not a folder or does not exist")
        }
        guard FileIO.isRegularFile(set.manifestPath) else { throw .notACaptureSet(path: setPath) }
        if let size = FileIO.size(set.manifestPath), size > maximumManifestBytes {
            throw .manifestTooLarge(path: set.manifestPath, bytes: size, limit: maximumManifestBytes)
        }
        let bytes = try FileIO.readAll(set.manifestPath)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .invalidManifest(path: set.manifestPath, field: nil, problem: "not UTF-8 text")
        }
        return try decodeManifest(text, path: set.manifestPath)
    }

    /// Replaces `<setPath>/manifest.yaml` atomically (temporary file, fsync, rename): a crash
    /// leaves the old manifest or the new one, never a torn one.
    public static func saveManifest(_ manifest: CaptureSetManifest, to setPath: String) throws(CaptureSetError) {
        let set = CaptureSetDirectory(path: setPath)
        try validate(manifest, path: set.manifestPath)
        var text = try encodeManifest(manifest)
        // Only the keys whose values changed are rewritten: comments, unknown keys and hand
        // formatting elsewhere survive `seal`, `annotate` and `--update-baseline`.
        if FileIO.isRegularFile(set.manifestPath), (FileIO.size(set.manifestPath) ?? .max) <= maximumManifestBytes,
           let bytes = try? FileIO.readAll(set.manifestPath), let existing = String(validating: bytes, as: UTF8.self),
           let edited = ManifestTextEdit.edit(existing, toSay: text) {
            text = edited
        }
        try FileIO.writeAtomically(Array(text.utf8), to: set.manifestPath)
    }

    /// Writes any file of a set (a baseline, say) atomically, creating its folder if needed.
    public static func writeAtomically(_ bytes: [UInt8], to path: String) throws(CaptureSetError) {
        try FileIO.makeDirectories(FileIO.split(path).dir)
        try FileIO.writeAtomically(bytes, to: path)
    }

    /// Makes the set folder (and parents) and writes its first manifest. The capture file is the
    /// caller's to write. Fails if the folder already holds a manifest, or is inside another set.
    @discardableResult
    public static func create(at path: String, manifest: CaptureSetManifest) throws(CaptureSetError) -> CaptureSetDirectory {
        let set = CaptureSetDirectory(path: path)
        if FileIO.exists(set.manifestPath) { throw .alreadyExists(path: path) }
        try checkNotInsideSet(path)
        try FileIO.makeDirectories(path)
        try saveManifest(manifest, to: path)
        return set
    }

    /// Seals a recording: computes the capture file's digest and its live traces' (`live/*`,
    /// `live_traces_sha256`), sets status `complete`, saves the manifest, and returns it.
    ///
    /// A set that is already sealed (status `complete` with a digest) whose capture file no longer
    /// has that digest is refused unless `acceptChangedCapture`: resealing would silently bless
    /// whatever changed the file.
    /// - Throws: ``CaptureSetError/sealedCaptureChanged(set:file:sealed:actual:)``, or the errors
    ///   of loading and writing a set.
    @discardableResult
    public static func seal(at path: String, acceptChangedCapture: Bool = false) throws(CaptureSetError) -> CaptureSetManifest {
        let set = CaptureSetDirectory(path: path)
        var manifest = try readManifest(at: path)
        let capture = try set.resolvedCapturePath(for: manifest)
        guard FileIO.isRegularFile(capture) else { throw .captureFileMissing(set: set.name, path: capture) }
        let actual = try sha256(ofFile: capture)
        if manifest.status == .complete, let sealed = manifest.captureSha256?.lowercased(), sealed != actual, !acceptChangedCapture {
            throw .sealedCaptureChanged(set: set.name, file: capture, sealed: sealed, actual: actual)
        }
        manifest.captureSha256 = actual
        try sealLiveTraces(&manifest, set: set, acceptChanged: acceptChangedCapture)
        manifest.status = .complete
        try saveManifest(manifest, to: path)
        return manifest
    }

    /// Records the live traces' digests in `manifest` (the seal's second half, kept apart from
    /// the capture's). A sealed set whose live traces differ from what it sealed is refused unless
    /// `acceptChanged`, as its capture is: resealing would bless whatever changed them.
    static func sealLiveTraces(_ manifest: inout CaptureSetManifest, set: CaptureSetDirectory, acceptChanged: Bool) throws(CaptureSetError) {
        if manifest.status == .complete, let sealed = manifest.liveTracesSha256, !acceptChanged {
            let problems = try set.liveTraceDifferences(sealed: sealed)
            if !problems.isEmpty { throw .liveTracesChanged(set: set.name, problems: problems) }
        }
        manifest.liveTracesSha256 = try set.liveTraceDigests()
    }

    /// Checks the live traces against the manifest's `live_traces_sha256` (with `verify`), or
    /// says why they are not checked; returns the warnings.
    static func verifyLiveTraces(_ manifest: CaptureSetManifest, set: CaptureSetDirectory, verify: Bool) throws(CaptureSetError) -> [String] {
        guard let sealed = manifest.liveTracesSha256 else {
            let files = try set.liveTraceFiles()
            guard !files.isEmpty else { return [] }
            return ["capture set \(set.name): live traces not verified (\(files.joined(separator: ", "))): the manifest has no "
                + "live_traces_sha256 (sealed before Tether covered them); run `tether seal \(set.path)` to cover them."]
        }
        guard verify else {
            return ["capture set \(set.name): SHA-256 of the live traces not checked (--no-verify)."]
        }
        let problems = try set.liveTraceDifferences(sealed: sealed)
        if !problems.isEmpty { throw .liveTracesChanged(set: set.name, problems: problems) }
        return []
    }

    /// Loads a set: parses the manifest, checks the capture file is there and, with `verify`,
    /// that its SHA-256 matches the manifest's, and that its live traces (`live/*`) are the ones
    /// `live_traces_sha256` sealed (a changed, missing or added one is an error; a set sealed
    /// without the field loads with a warning that they are not verified).
    ///
    /// A set without a digest (an unsealed or interrupted recording) loads with a warning, and so
    /// does a set whose capture gives an interface another link type than the manifest's
    /// `link_type` or `role` says (``LinkTypeContradiction``; only the capture's interface
    /// descriptions are read for that, normally its first few blocks).
    public static func load(_ path: String, verify: Bool = true) throws(CaptureSetError) -> LoadedCaptureSet {
        try load(path, verify: verify, alongside: false).set
    }

    /// Loads a set as ``load(_:verify:)`` does with `verify`, except that the capture's SHA-256 is
    /// worked out on another thread while the caller goes on: ``CaptureDigestCheck/wait()`` says
    /// whether it matched, and must be asked before anything read from the capture is reported.
    /// The live traces are verified before this returns (they are small). The digest is `nil`
    /// when the manifest records none (the set loads with the warning ``load(_:verify:)`` gives).
    public static func loadVerifyingAlongside(_ path: String) throws(CaptureSetError) -> (set: LoadedCaptureSet, digest: CaptureDigestCheck?) {
        try load(path, verify: true, alongside: true)
    }

    private static func load(_ path: String, verify: Bool, alongside: Bool) throws(CaptureSetError) -> (set: LoadedCaptureSet, digest: CaptureDigestCheck?) {
        let set = CaptureSetDirectory(path: path)
        let manifest = try readManifest(at: path)
        let capture = try set.resolvedCapturePath(for: manifest)
        guard FileIO.isRegularFile(capture) else { throw .captureFileMissing(set: set.name, path: capture) }
        var warnings: [String] = manifest.sourceLines.ignoredKeys.map { "capture set \(set.name): manifest.yaml: \($0)." }
        var verified = false
        var digest: CaptureDigestCheck?
        if manifest.status == .recording {
            warnings.append("capture set \(set.name): status is `recording`: the recording was not sealed "
                + "(interrupted, or still running); the capture may end in a cut-off block.")
        }
        if let expected = manifest.captureSha256 {
            if verify && alongside {
                digest = CaptureDigestCheck(set: set.name, file: capture, expected: expected.lowercased())
                verified = true
            } else if verify {
                let actual = try sha256(ofFile: capture)
                guard actual == expected.lowercased() else {
                    throw .digestMismatch(set: set.name, file: capture, expected: expected.lowercased(), actual: actual)
                }
                verified = true
            } else {
                warnings.append("capture set \(set.name): SHA-256 of \(manifest.captureFile) not checked (--no-verify).")
            }
        } else {
            warnings.append("capture set \(set.name): the manifest has no capture_sha256, so \(manifest.captureFile) "
                + "cannot be verified; seal it with `tether seal SET` once it is known to be good.")
        }
        warnings += try verifyLiveTraces(manifest, set: set, verify: verify)
        warnings += set.linkTypeContradictions(manifest: manifest, capturePath: capture).map(\.description)
        return (LoadedCaptureSet(directory: set, manifest: manifest, capturePath: capture, verified: verified, warnings: warnings), digest)
    }
}

/// A capture set that was loaded (and, unless asked not to, verified).
public struct LoadedCaptureSet: Sendable, Equatable {
    /// The set's folder.
    public var directory: CaptureSetDirectory
    /// Its manifest as read.
    public var manifest: CaptureSetManifest
    /// Full path of its capture file.
    public var capturePath: String
    /// `true` when the capture file's digest was computed and matched (loaded by
    /// ``CaptureSetDirectory/loadVerifyingAlongside(_:)``: is being checked, and matched once its
    /// check's ``CaptureDigestCheck/wait()`` returns).
    public var verified: Bool
    /// Things the user should know that do not stop a replay (unsealed recording, no digest).
    public var warnings: [String]

    /// The set's name (its folder's last component).
    public var name: String { directory.name }

    /// Full path of a core's accepted trace: the manifest's `baselines` entry, else
    /// `baseline/<core>.jsonl` if that file exists; `nil` when the set has none.
    public func baselinePath(core: String) -> String? {
        if let relative = manifest.baselines[core] { return FileIO.join(directory.path, relative) }
        let conventional = FileIO.join(directory.path, CaptureSetDirectory.defaultBaselinePath(core: core))
        // Anything there counts: a FIFO or a folder is then refused by the trace reader with a
        // sentence, rather than skipped as if the set had no baseline.
        return FileIO.exists(conventional) ? conventional : nil
    }

    /// ``baselinePath(core:)`` checked to stay inside the set's folder once symbolic links are
    /// followed; `nil` when the set has no baseline for `core`.
    /// - Throws: ``CaptureSetError/pathOutsideSet(set:field:path:reason:)``.
    public func resolvedBaselinePath(core: String) throws(CaptureSetError) -> String? {
        if let relative = manifest.baselines[core] { return try directory.resolve(relative, field: "baselines.\(core)") }
        let relative = CaptureSetDirectory.defaultBaselinePath(core: core)
        let conventional = try directory.resolve(relative, field: "baselines.\(core)")
        return FileIO.exists(conventional) ? conventional : nil
    }
}

extension CaptureSetManifest {
    /// `date` as the manifest's `recorded_at` text: ISO 8601, UTC, whole seconds.
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
