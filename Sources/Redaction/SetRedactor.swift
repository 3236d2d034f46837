import CaptureKit
import CaptureSet
import Dissectors
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `tether redact` replaces beyond its defaults.
public struct RedactionOptions: Sendable, Hashable {
    /// Replace IPv4 and IPv6 addresses too (`--ip`), fixing the IPv4, TCP and UDP checksums.
    public var ip: Bool
    /// Keep device names (`--keep-names`).
    public var keepNames: Bool
    /// Write the new set even when the last search finds original values in it
    /// (`--allow-survivors`); they are listed in ``RedactionReport/survivors``.
    public var allowSurvivors: Bool

    /// Addresses, names, keys, PINs, passkeys and MQTT credentials; IP addresses only with `ip`;
    /// a set with survivors only with `allowSurvivors`.
    public init(ip: Bool = false, keepNames: Bool = false, allowSurvivors: Bool = false) {
        self.ip = ip
        self.keepNames = keepNames
        self.allowSurvivors = allowSurvivors
    }
}

/// What a redaction replaced: per file of the new set, the count per kind.
public struct RedactionReport: Sendable {
    /// The new set's folder.
    public var output: String
    /// File (relative to the set) → kind → replacements.
    public var counts: [String: [RedactedKind: Int]]
    /// What the capture reader warned about (a cut-off last block, chiefly): the redacted set has
    /// the frames before it, as every other command reads them.
    public var warnings: [String] = []
    /// The table, original → placeholder. Held for tests and never printed: printing it would
    /// put the originals where the redaction was meant to keep them out.
    public var map: RedactionMap
    /// Original values the last search found in the new set, written anyway because
    /// ``RedactionOptions/allowSurvivors`` was given (empty otherwise: a set with survivors is
    /// refused).
    public var survivors: [Survivor] = []

    /// How many distinct values of each kind were replaced.
    public var distinctValues: [RedactedKind: Int] {
        var result: [RedactedKind: Int] = [:]
        for entry in map.entries { result[entry.kind, default: 0] += 1 }
        return result
    }

    /// The lines `tether redact` prints: the distinct values per kind, then per file the
    /// replacements per kind.
    public var lines: [String] {
        var lines: [String] = []
        let distinct = distinctValues
        let summary = RedactedKind.allCases.compactMap { kind in distinct[kind].map { "\($0) \(kind.rawValue)\($0 == 1 ? "" : kind == .address ? "es" : "s")" } }
        lines.append("redacted into \(output): \(summary.isEmpty ? "nothing to replace" : summary.joined(separator: ", "))")
        for file in counts.keys.sorted() {
            let perKind = counts[file, default: [:]]
            guard !perKind.isEmpty else { continue }
            lines.append("  \(file): " + perKind.keys.sorted().map { "\($0.rawValue) \(perKind[$0, default: 0])" }.joined(separator: ", "))
        }
        if !survivors.isEmpty {
            lines.append("written with --allow-survivors: \(survivors.count) original value\(survivors.count == 1 ? "" : "s") left in it:")
            lines += RedactionError.survivorLines(survivors).map { "  " + $0 }
        }
        return lines
    }
}

/// Why a set could not be redacted.
public enum RedactionError: Error, Sendable, CustomStringConvertible {
    /// `--out` is inside the set being redacted.
    case outputInsideSet(output: String, set: String)
    /// `--out` exists and is not an empty folder.
    case outputNotEmpty(String)
    /// The set could not be read or the new one written.
    case captureSet(CaptureSetError)
    /// The capture file could not be read or written.
    case capture(CaptureError)
    /// A file of the set could not be read or written.
    case file(path: String, reason: String)
    /// A frame of the capture names an interface the file never described.
    case frame(file: String, frame: Int, offset: Int?, reason: String)
    /// The last search found original values in the new set, which was therefore not written
    /// (give ``RedactionOptions/allowSurvivors`` to write it anyway).
    case survivors(output: String, [Survivor])

    /// At most this many survivors are listed one per line; the rest are counted per file.
    public static let listedSurvivors = 100

    /// One line per survivor (the first ``listedSurvivors``), then a count per file of the rest.
    public static func survivorLines(_ survivors: [Survivor]) -> [String] {
        var lines = survivors.prefix(listedSurvivors).map(\.description)
        let rest = survivors.dropFirst(listedSurvivors)
        if !rest.isEmpty {
            var perFile: [String: Int] = [:]
            for survivor in rest { perFile[survivor.file, default: 0] += 1 }
            lines.append("… and \(rest.count) more: " + perFile.keys.sorted().map { "\($0) \(perFile[$0, default: 0])" }.joined(separator: ", "))
        }
        return lines
    }

    /// One line naming the file, frame or offset and what to do.
    public var description: String {
        switch self {
        case .outputInsideSet(let output, let set):
            "\(output) is inside the set \(set): give --out a folder outside it, e.g. \(set)-redacted."
        case .outputNotEmpty(let output):
            "\(output) already exists and is not an empty folder: give --out a new folder (redact never overwrites)."
        case .captureSet(let error): "\(error)"
        case .capture(let error): "\(error)"
        case .file(let path, let reason): "\(path): \(reason)"
        case .frame(let file, let frame, let offset, let reason):
            "\(file): frame \(frame)\(offset.map { " at offset \($0)" } ?? ""): \(reason)"
        case .survivors(let output, let survivors):
            "\(survivors.count) original value\(survivors.count == 1 ? "" : "s") would be left in the redacted set, so nothing was "
                + "written to \(output) (values are counted per kind in the order found, never shown):\n  "
                + Self.survivorLines(survivors).joined(separator: "\n  ")
                + "\nIf these are not identifying (a device named like a common word), give --allow-survivors to write the set anyway."
        }
    }
}

/// Redacts a capture set into a new one: the one entry point of `tether redact` and `record --redact`.
///
/// Two passes over the capture. The first finds the values (HCI fields, SMP keys, GATT Device
/// Names, MQTT CONNECT fields, API-call records, the manifest's core sections) and gives each a
/// placeholder; the second writes the capture again frame by frame, every interface block,
/// comment, timestamp and flag kept, the values replaced the same length; then every other file of
/// the set (manifest, baselines, live traces) gets the same map in the places that hold values,
/// and the new set is sealed with the project's own digests. Last, every byte of every new file is
/// searched for every original value (``SurvivorSearch``). All of it is written into a folder
/// beside `output`, which takes the new set's place only when that search finds nothing (or
/// ``RedactionOptions/allowSurvivors`` is given): a refused or failed redaction leaves no
/// half-written set.
public enum SetRedactor {
    /// Redacts the set at `set` into `output`, which must not exist or be an empty folder, and
    /// must not be inside `set`.
    public static func redact(set: String, to output: String, options: RedactionOptions = .init()) throws(RedactionError) -> RedactionReport {
        try checkOutput(output, set: set)
        let manifest: CaptureSetManifest
        let capturePath: String
        do {
            manifest = try CaptureSetDirectory.readManifest(at: set)
            capturePath = try CaptureSetDirectory(path: set).resolvedCapturePath(for: manifest)
        } catch { throw .captureSet(error) }

        // Read every frame (a committed set is a few MB; the largest takes well under a second).
        var frames: [CaptureFrame] = []
        let reader: any CaptureReader
        do {
            reader = try CaptureFile.open(path: capturePath)
            while let frame = try reader.next() { frames.append(frame) }
        } catch { throw .capture(error) }
        let interfaces = reader.interfaces
        let warnings = reader.warnings.filter { $0.kind != .skippedUnknown }.map(\.description)
        let captureName = String(capturePath.dropFirst(set.count).drop { $0 == "/" })

        // Pass 1: find the values.
        var map = RedactionMap()
        var mqttPorts: Set<UInt16> = [1883]
        for interface in manifest.interfaces { if let port = interface.brokerPort { mqttPorts.insert(port) } }
        for frame in frames {
            guard frame.interfaceIndex < interfaces.count else {
                throw .frame(file: capturePath, frame: frame.number, offset: nil,
                             reason: "names interface \(frame.interfaceIndex), which the file never described")
            }
            let linkType = interfaces[frame.interfaceIndex].linkType
            if HCIRedaction.reads(linkType) {
                HCIRedaction.discover(frame.data, linkType: linkType, into: &map, keepNames: options.keepNames)
            } else if linkType == .user0 {
                TextRedaction.discover(record: frame.data, into: &map, keepNames: options.keepNames)
            } else if options.ip, IPRedaction.reads(linkType), let layout = IPRedaction.layout(frame.data, linkType: linkType) {
                for offset in layout.addressOffsets {
                    map.ip(Array(frame.data[offset..<(offset + layout.addressLength)]))
                }
            }
        }
        let namedHandles = GATTHandleName.table(manifest.gattHandles.map(\.nameTexts))
        let nameReads = options.keepNames ? [] : GATTRedaction.discover(frames, interfaces: interfaces, namedHandles: namedHandles, into: &map)
        TextRedaction.discover(manifest: manifest, into: &map, keepNames: options.keepNames)
        // Client ids after accounts: a client id made from an account follows it.
        MQTTRedaction.discover(frames, interfaces: interfaces, ports: mqttPorts, into: &map)

        // Pass 2: write the new set into a folder beside `output`.
        let staging = try makeStagingFolder(for: output)
        do throws(RedactionError) {
            let counts = try write(
                frames: frames, interfaces: interfaces, from: set, captureName: captureName, manifest: manifest,
                to: staging, map: map, nameReads: nameReads, mqttPorts: mqttPorts, options: options)
            // Last: every byte of every new file, for every original value.
            let survivors = try SurvivorSearch.search(folder: staging, capture: captureName, map: map)
            if !survivors.isEmpty, !options.allowSurvivors { throw .survivors(output: output, survivors) }
            try moveIntoPlace(staging, output)
            return RedactionReport(output: output, counts: counts, warnings: warnings, map: map, survivors: survivors)
        } catch {
            // The unfinished copy may hold what the last search found: it must not stay unseen.
            do {
                try FileManager.default.removeItem(atPath: staging)
            } catch let removal {
                throw .file(path: staging, reason: "\(error) The unfinished copy here could not be removed (\(removal.localizedDescription)): remove it by hand.")
            }
            throw error
        }
    }

    /// Writes the redacted capture, every other file and the sealed manifest into `folder`;
    /// returns the replacements per file and kind.
    private static func write(
        frames: [CaptureFrame], interfaces: [CaptureInterface], from set: String, captureName: String, manifest: CaptureSetManifest,
        to folder: String, map: RedactionMap, nameReads: Set<Int>, mqttPorts: Set<UInt16>, options: RedactionOptions
    ) throws(RedactionError) -> [String: [RedactedKind: Int]] {
        let table = TextRedaction.Table(map)
        let raw = HCIRedaction.rawSubstitutions(map)
        let names = map.entries.filter { $0.kind == .name }.map { ByteSubstitution($0.original, $0.placeholder, boundary: .none) }
            .sorted { $0.original.count > $1.original.count }
        var counts: [String: [RedactedKind: Int]] = [:]
        func add(_ file: String, _ more: [RedactedKind: Int]) {
            for (kind, n) in more { counts[file, default: [:]][kind, default: 0] += n }
        }
        let mqtt = MQTTRedaction.streamEdits(frames, interfaces: interfaces, ports: mqttPorts, map: map)
        add(captureName, mqtt.counts)
        let newCapture = folder + "/" + captureName
        let parent = (newCapture as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch { throw .file(path: parent, reason: "cannot create the folder: \(error.localizedDescription)") }
        do throws(CaptureError) {
            let writer = try PcapngWriter(path: newCapture)
            for var interface in interfaces {
                interface.statistics = InterfaceStatistics()
                interface.comments = interface.comments.map { TextRedaction.rewrite($0, table: table).0 }
                if let name = interface.name { interface.name = TextRedaction.rewrite(name, table: table).0 }
                if let text = interface.description { interface.description = TextRedaction.rewrite(text, table: table).0 }
                _ = try writer.addInterface(interface)
            }
            for (index, var frame) in frames.enumerated() {
                let linkType = interfaces[frame.interfaceIndex].linkType
                let before = frame.data.count
                if HCIRedaction.reads(linkType) {
                    add(captureName, HCIRedaction.rewrite(&frame.data, linkType: linkType, map: map, raw: raw, text: table))
                    if nameReads.contains(frame.number) {
                        add(captureName, [.name: GATTRedaction.rewrite(&frame.data, linkType: linkType, names: names)])
                    }
                } else if linkType == .user0 || linkType == .user1 {
                    add(captureName, TextRedaction.rewrite(&frame.data, table: table, as: .json))
                    frame.originalLength = frame.originalLength - before + frame.data.count
                } else if IPRedaction.reads(linkType), let layout = IPRedaction.layout(frame.data, linkType: linkType) {
                    var frameCounts: [RedactedKind: Int] = [:]
                    IPRedaction.rewrite(&frame.data, layout) { data in
                        for (offset, byte) in mqtt.edits[index] ?? [] where offset < data.count { data[offset] = byte }
                        // Addresses and keys an application carries in its own payloads.
                        if let payload = IPRedaction.transportPayload(data, layout) {
                            for (kind, n) in HCIRedaction.replaceRaw(&data, from: payload.lowerBound, raw) { frameCounts[kind, default: 0] += n }
                        }
                        if options.ip {
                            for offset in layout.addressOffsets {
                                let range = offset..<(offset + layout.addressLength)
                                if let placeholder = map.placeholder(for: Array(data[range])) {
                                    data.replaceSubrange(range, with: placeholder)
                                    frameCounts[.ip, default: 0] += 1
                                }
                            }
                        }
                    }
                    add(captureName, frameCounts)
                } else {
                    // Any other link type: addresses and keys wherever their bytes stand.
                    add(captureName, HCIRedaction.replaceRaw(&frame.data, from: 0, raw))
                }
                for index in frame.customOptions.indices where frame.customOptions[index].isUTF8 {
                    add(captureName, TextRedaction.rewrite(&frame.customOptions[index].value, table: table, as: .prose))
                }
                frame.comments = frame.comments.map { comment in
                    let (text, n) = TextRedaction.rewrite(comment, table: table)
                    add(captureName, n)
                    return text
                }
                try writer.write(frame)
            }
            for (index, interface) in interfaces.enumerated() {
                let statistics = interface.statistics
                if statistics.received != nil || statistics.interfaceDropped != nil || statistics.osDropped != nil {
                    try writer.writeStatistics(interfaceIndex: index, statistics)
                }
            }
            try writer.close()
        } catch { throw .capture(error) }

        // Every other file: the same map, read as JSON, YAML or text by its name.
        try rewriteFiles(from: set, to: folder, skipping: captureName, table: table) { file, n in add(file, n) }

        // Reseal with the project's own digests, keeping the manifest's comments and layout.
        do {
            var redacted = try CaptureSetDirectory.readManifest(at: folder)
            if manifest.captureSha256 != nil {
                redacted.captureSha256 = try CaptureSetDirectory.sha256(ofFile: newCapture)
            }
            if manifest.liveTracesSha256 != nil {
                redacted.liveTracesSha256 = try CaptureSetDirectory(path: folder).liveTraceDigests()
            }
            try CaptureSetDirectory.saveManifest(redacted, to: folder)
        } catch { throw .captureSet(error) }
        return counts
    }

    /// A new, empty, hidden folder in the folder that will hold `output` (created if need be),
    /// so the finished set can be renamed into place.
    static func makeStagingFolder(for output: String) throws(RedactionError) -> String {
        let absolute = URL(fileURLWithPath: output).standardizedFileURL.path
        let parent = (absolute as NSString).deletingLastPathComponent
        let base = (absolute as NSString).lastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch { throw .file(path: parent, reason: "cannot create the folder: \(error.localizedDescription)") }
        var template = Array((parent + "/." + String(base.prefix(64)) + ".redacting-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!) }
        guard made != nil else {
            throw .file(path: parent, reason: "cannot create a folder to write the new set in: \(String(cString: strerror(errno)))")
        }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Renames the finished `staging` folder to `output`, which is absent or an empty folder
    /// (`rename(2)` replaces an empty folder in one step).
    static func moveIntoPlace(_ staging: String, _ output: String) throws(RedactionError) {
        guard rename(staging, output) == 0 else {
            let reason = String(cString: strerror(errno))
            throw .file(path: output, reason: "cannot move the new set into place (\(reason)): give --out a new or empty folder")
        }
    }

    /// Refuses an `output` inside `set` or an existing folder that is not empty.
    static func checkOutput(_ output: String, set: String) throws(RedactionError) {
        let resolvedSet = URL(fileURLWithPath: set).standardizedFileURL.resolvingSymlinksInPath().path
        var resolvedOutput = URL(fileURLWithPath: output).standardizedFileURL.path
        // Resolve the deepest part that exists, so a symbolic link cannot hide the set.
        var suffix: [String] = []
        while !FileManager.default.fileExists(atPath: resolvedOutput), resolvedOutput != "/" {
            suffix.insert((resolvedOutput as NSString).lastPathComponent, at: 0)
            resolvedOutput = (resolvedOutput as NSString).deletingLastPathComponent
        }
        resolvedOutput = URL(fileURLWithPath: resolvedOutput).resolvingSymlinksInPath().path
        let full = ([resolvedOutput] + suffix).joined(separator: "/").replacingOccurrences(of: "//", with: "/")
        if full == resolvedSet || full.hasPrefix(resolvedSet + "/") {
            throw .outputInsideSet(output: output, set: set)
        }
        // No command makes a set inside another (docs/capture-set.md).
        do { try CaptureSetDirectory.checkNotInsideSet(output) } catch { throw .captureSet(error) }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) {
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? ["?"]
            if !isDirectory.boolValue || !contents.isEmpty { throw .outputNotEmpty(output) }
        }
    }

    /// Copies every regular file of `set` except the capture into `output`, the map applied in the
    /// places that hold values (``TextRedaction/mode(forFile:)``).
    private static func rewriteFiles(
        from set: String, to output: String, skipping capture: String, table: TextRedaction.Table,
        count: (String, [RedactedKind: Int]) -> Void
    ) throws(RedactionError) {
        guard let enumerator = FileManager.default.enumerator(atPath: set) else {
            throw .file(path: set, reason: "cannot list the set's files")
        }
        while let relative = enumerator.nextObject() as? String {
            let source = set + "/" + relative
            var isDirectory: ObjCBool = false
            guard relative != capture, FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            // A baseline's index (BehaviourTrace's BaselineIndex, `<baseline>.index`) describes the
            // baseline as it was: the redacted copy would not match it, so it is left behind and
            // the copy's baselines are read without one.
            if relative.hasSuffix(".jsonl.index") { continue }
            guard let data = FileManager.default.contents(atPath: source) else {
                throw .file(path: source, reason: "cannot be read")
            }
            var bytes = [UInt8](data)
            count(relative, TextRedaction.rewrite(&bytes, table: table, as: TextRedaction.mode(forFile: relative)))
            let target = output + "/" + relative
            do {
                try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try Data(bytes).write(to: URL(fileURLWithPath: target))
            } catch {
                throw .file(path: target, reason: "cannot be written: \(error.localizedDescription)")
            }
        }
    }
}
