import ReplayKit
import BehaviourTrace
import ArgumentParser
import CaptureKit
import CaptureSet
import Dissectors
import MQTT

/// `tether inspect PATH`: what a capture file or set holds.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show what a capture file or capture set holds: format, interfaces, frames, time span, drops, comments.",
        discussion: """
            PATH is a capture file (pcap, pcapng, btsnoop, PacketLogger .pklg; the format is \
            found from the first bytes) or a capture set folder (its capture.pcapng is read and its \
            manifest shown). The file is streamed in constant memory whatever its size; a read that \
            takes a while shows its progress on stderr when stderr is a terminal.

            --frames lists every frame: number (1-based, as Wireshark numbers them), seconds since \
            the first frame, interface, direction and a one-line dissection (ATT opcode, handle and \
            characteristic; UDP addresses, ports and length; TCP with its stream reassembled, and \
            the MQTT 3.1.1 or 5 packets of connections to port 1883 or --mqtt-port). An ATT PDU \
            reassembled from several ACL fragments, or an MQTT packet from several TCP segments, \
            is shown on the frame that completes it (in sequence order: retransmitted bytes count \
            once, out-of-order segments wait for the gap before them).

            --json prints one JSON object (docs/cli.md describes every key): `frames` (total), \
            `interfaces` (each with `linktype` and `frames`), `first_time_ns`, `last_time_ns`, \
            `comments`, `warnings`; with --frames also `frame_list`, one object per frame with \
            `number`, `time_ns`, `interface`, and `att` (`opcode`, `handle`, `value` in hex; \
            `att_all` lists every ATT PDU the frame completes), `udp` (`src`, `src_port`, `dst`, \
            `dst_port`, `length`), `tcp` (the same and `flags`, `relative_seq`, `retransmission`, \
            `out_of_order`), `mqtt` (`type` number, `topic`, `qos`, `packet_id`, `payload` in hex; \
            `mqtt_all` lists every MQTT packet the frame completes). Frames are written as they \
            are read.

            A file whose last block is cut off is read up to that block; the warning (on stderr, \
            and in `warnings`) gives the offset where it ends early.

            List the ATT traffic of an Android btsnoop log:
              tether inspect btsnoop_hci.log --frames
            List the MQTT packets of a broker recorded with `tether record --tcp lo:1883`:
              tether inspect Captures/widget-clean --frames
            Count frames per interface of a capture set, for a script:
              tether inspect Captures/plugin-clean --json
            """
    )

    @Argument(help: "A capture file (pcap, pcapng, btsnoop, .pklg) or a capture set folder.")
    var path: String

    @Flag(name: .long, help: "List every frame with a one-line dissection.")
    var frames = false

    @Flag(name: .long, help: "Print JSON instead of text (see docs/cli.md for the keys).")
    var json = false

    @Flag(name: .customLong("no-verify"), help: "For a set, do not check the capture file's SHA-256 against the manifest (saves a pass over a large file).")
    var noVerify = false

    @Option(name: .customLong("limit"), help: "With --frames, list at most this many frames, 0 or more (the summary still counts all).",
            transform: { try OptionValues.integer($0, option: "--limit", range: 0...Int.max) })
    var limit: Int?

    @Option(name: .customLong("mqtt-port"), help: ArgumentHelp("A TCP port read as MQTT (the broker's side); repeat for several. Default 1883.", valueName: "port"),
            transform: { try OptionValues.integer($0, option: "--mqtt-port", range: 1...65535) })
    var mqttPorts: [Int] = []

    func validate() throws {
        guard FileIO.exists(path) else {
            throw ValidationError("\(path) does not exist. Give a capture file or a capture set folder such as Captures/<name>.")
        }
        if FileIO.isDirectory(path) && !CaptureSetDirectory.isCaptureSet(path) {
            throw ValidationError("\(path) is a folder without a manifest.yaml, so not a capture set. Give a set folder or a capture file; `tether import FILE --out Captures/<name>` makes a set.")
        }
        if let limit, limit < 0 {
            throw ValidationError("--limit must be 0 or more (got \(limit)).")
        }
    }

    func run() throws {
        var set: LoadedCaptureSet?
        var capturePath = path
        if FileIO.isDirectory(path) {
            let loaded: LoadedCaptureSet
            do {
                loaded = try CaptureSetDirectory.load(path, verify: !noVerify)
            } catch {
                guard case .digestMismatch(let name, let file, let expected, let actual) = error else { throw error }
                // Inspect must still show a damaged set: say so, and read what is there.
                Terminal.warn("tether: warning: capture set \(name): \(file) has SHA-256 \(actual), but the manifest records \(expected); it changed after the set was sealed.")
                loaded = try CaptureSetDirectory.load(path, verify: false)
            }
            set = loaded
            capturePath = loaded.capturePath
        }
        let reader = try CaptureFile.open(path: capturePath)
        let output: InspectOutput = json
            ? JSONInspectOutput(listFrames: frames)
            : TextInspectOutput(listFrames: frames)
        output.begin(path: capturePath, format: reader.format, fileSize: FileIO.size(capturePath), set: set)

        var summary = CaptureSummary()
        var dissector = AnnotatingFrameDissector(
            registry: CLIIntegrations.registry,
            gattHandles: set?.manifest.gattHandles ?? [],
            mqttPorts: Set((mqttPorts.isEmpty ? [1883] : mqttPorts).map { UInt16($0) } + (set?.manifest.interfaces.compactMap(\.brokerPort) ?? [])))
        let progress = ProgressDisplay(
            label: FileIO.split(capturePath).base, totalBytes: FileIO.size(capturePath),
            enabled: Terminal.stderrIsTerminal && !(frames && !json && Terminal.stdoutIsTerminal))
        var listed = 0
        while let frame = try reader.next() {
            summary.add(frame)
            if frames, limit.map({ listed < $0 }) ?? true {
                let interface = reader.interfaces[frame.interfaceIndex]
                let dissected = dissector.dissect(frame, interface: interface)
                output.frame(frame, interface: interface, dissected: dissected, annotations: dissector.lastAnnotations,
                             firstTimeNs: summary.firstTimeNs ?? frame.timestampNs)
                listed += 1
            }
            progress.update(bytesRead: reader.bytesRead, frames: summary.frames)
        }
        progress.clear()
        for warning in reader.warnings where warning.kind != .skippedUnknown {
            Terminal.warn("tether: warning: \(warning)")
        }
        output.end(summary: summary, interfaces: reader.interfaces, warnings: reader.warnings, set: set)
        StandardOutput.shared.flush()
    }
}

/// Counts gathered in one pass over a capture.
struct CaptureSummary {
    /// Comments kept for display; a file with more still counts them all.
    static let keptCommentLimit = 1000

    var frames = 0
    var framesPerInterface: [Int: Int] = [:]
    var bytesPerInterface: [Int: Int] = [:]
    var firstTimeNs: Int64?
    var lastTimeNs: Int64?
    var minTimeNs: Int64?
    var maxTimeNs: Int64?
    var commentCount = 0
    var comments: [(frame: Int, text: String)] = []

    mutating func add(_ frame: CaptureFrame) {
        frames += 1
        framesPerInterface[frame.interfaceIndex, default: 0] += 1
        bytesPerInterface[frame.interfaceIndex, default: 0] += frame.data.count
        if firstTimeNs == nil { firstTimeNs = frame.timestampNs }
        lastTimeNs = frame.timestampNs
        minTimeNs = min(minTimeNs ?? frame.timestampNs, frame.timestampNs)
        maxTimeNs = max(maxTimeNs ?? frame.timestampNs, frame.timestampNs)
        for comment in frame.comments {
            commentCount += 1
            if comments.count < Self.keptCommentLimit { comments.append((frame.number, comment)) }
        }
    }
}

/// Progress of a long read on stderr: percentage of the file and frames so far.
final class ProgressDisplay {
    private let status: StatusLine
    private let label: String
    private let totalBytes: UInt64?

    init(label: String, totalBytes: UInt64?, enabled: Bool) {
        status = StatusLine(enabled: enabled)
        self.label = label
        self.totalBytes = totalBytes
    }

    func update(bytesRead: UInt64, frames: Int) {
        status.update {
            if let totalBytes, totalBytes > 0 {
                let percent = Double(bytesRead) * 100 / Double(totalBytes)
                return "\(label): \(Format.fixed(percent, 1))% (\(frames) frames)"
            }
            return "\(label): \(frames) frames"
        }
    }

    func clear() { status.clear() }
}

/// How `inspect` presents what it reads; text and JSON share the reading loop.
protocol InspectOutput {
    func begin(path: String, format: CaptureFormat, fileSize: UInt64?, set: LoadedCaptureSet?)
    func frame(_ frame: CaptureFrame, interface: CaptureInterface, dissected: DissectedFrame, annotations: [FrameAnnotations], firstTimeNs: Int64)
    func end(summary: CaptureSummary, interfaces: [CaptureInterface], warnings: [CaptureWarning], set: LoadedCaptureSet?)
}

/// Human-readable output.
final class TextInspectOutput: InspectOutput {
    private let listFrames: Bool
    private let out = StandardOutput.shared

    init(listFrames: Bool) { self.listFrames = listFrames }

    /// Every line this output prints goes through here: captures and manifests carry text from
    /// devices and brokers (names, MQTT client ids and topics, comments), and an escape sequence
    /// in one would retitle the terminal or forge lines. Control characters are shown escaped,
    /// as `replay` and `annotate` show them.
    private func show(_ text: String) {
        out.line(text.escapingControlCharactersForReport())
    }

    func begin(path: String, format: CaptureFormat, fileSize: UInt64?, set: LoadedCaptureSet?) {
        let size = fileSize.map { ", \(Format.bytes($0))" } ?? ""
        show("File:        \(path) (\(format.rawValue)\(size))")
        if let set {
            let manifest = set.manifest
            show("Set:         \(set.directory.name): \(manifest.title)")
            show("Recorded:    \(manifest.recordedAt) by Tether \(manifest.tetherVersion), status \(manifest.status.rawValue)")
            show("SHA-256:     \(set.verified ? "matches the manifest" : "not verified")")
            if !manifest.devices.isEmpty {
                let devices = manifest.devices.map { device in
                    [device.name, device.model, device.firmware].compactMap { $0 }.joined(separator: " ")
                }
                show("Devices:     \(devices.joined(separator: "; "))")
            }
            for warning in set.warnings { Terminal.warn("tether: warning: \(warning)") }
        }
        if listFrames {
            show("")
            show("   Frame        Time  If  Direction  Summary")
        }
    }

    func frame(_ frame: CaptureFrame, interface: CaptureInterface, dissected: DissectedFrame, annotations: [FrameAnnotations], firstTimeNs: Int64) {
        let seconds = Format.seconds(frame.timestampNs &- firstTimeNs)
        let direction = AnnotatingFrameDissector.direction(of: frame, dissected) ?? "-"
        var line = Format.pad(String(frame.number), 8) + "  " + Format.pad(seconds, 10) + "  "
            + Format.pad(String(frame.interfaceIndex), 2) + "  " + direction.padding(9) + "  " + dissected.summary
        for comment in frame.comments { line += "  # " + comment.escapingControlCharactersForReport() }
        show(line)
    }

    func end(summary: CaptureSummary, interfaces: [CaptureInterface], warnings: [CaptureWarning], set: LoadedCaptureSet?) {
        if listFrames { show("") }
        show("Frames:      \(summary.frames)")
        if let first = summary.minTimeNs, let last = summary.maxTimeNs {
            show("Time span:   \(Format.utc(first)) → \(Format.utc(last)) (\(Format.seconds(last &- first)) s)")
        }
        show("Interfaces:  \(interfaces.count)")
        for (index, interface) in interfaces.enumerated() {
            var line = "  #\(index)  \(interface.linkType)"
            if let name = interface.name { line += "  name \(name)" }
            if let role = set?.manifest.interface(index: index)?.role { line += "  role \(role)" }
            line += "  \(summary.framesPerInterface[index, default: 0]) frames"
            let statistics = interface.statistics
            if statistics.interfaceDropped != nil || statistics.osDropped != nil {
                line += "  dropped \(statistics.totalDropped)"
            }
            if let received = statistics.received { line += "  received \(received)" }
            show(line)
            for comment in interface.comments { show("      # \(comment.escapingControlCharactersForReport())") }
        }
        show("Comments:    \(summary.commentCount)")
        for comment in summary.comments.prefix(50) {
            show("  frame \(comment.frame): \(comment.text.escapingControlCharactersForReport())")
        }
        if summary.commentCount > 50 { show("  … and \(summary.commentCount - 50) more") }
        if let set, !set.manifest.annotations.isEmpty {
            show("Annotations: \(set.manifest.annotations.count) (in manifest.yaml)")
        }
        let shown = warnings.filter { $0.kind != .skippedUnknown }
        if !shown.isEmpty { show("Warnings:    \(shown.count) (see stderr)") }
    }
}

/// JSON output, written as it is read: the frame list first, the summary keys after it (JSON
/// objects are unordered, and only the end knows the totals).
final class JSONInspectOutput: InspectOutput {
    private let listFrames: Bool
    private let out = StandardOutput.shared
    private var firstFrame = true

    init(listFrames: Bool) { self.listFrames = listFrames }

    func begin(path: String, format: CaptureFormat, fileSize: UInt64?, set: LoadedCaptureSet?) {
        var members: [(String, String)] = [("path", JSONText.string(path)), ("format", JSONText.string(format.rawValue))]
        if let fileSize { members.append(("file_size", String(fileSize))) }
        // As in text mode: the set's warnings (unsealed, a link type the manifest contradicts) go
        // to stderr, so stdout stays one JSON object.
        for warning in set?.warnings ?? [] { Terminal.warn("tether: warning: \(warning)") }
        let head = JSONText.object(members)
        out.write(String(head.dropLast()))
        if listFrames { out.write(",\"frame_list\":[") }
    }

    func frame(_ frame: CaptureFrame, interface: CaptureInterface, dissected: DissectedFrame, annotations: [FrameAnnotations], firstTimeNs: Int64) {
        var members: [(String, String)] = [
            ("number", String(frame.number)),
            ("time_ns", String(frame.timestampNs)),
            ("interface", String(frame.interfaceIndex)),
            ("length", String(frame.data.count)),
            ("original_length", String(frame.originalLength)),
            ("direction", JSONText.string(AnnotatingFrameDissector.direction(of: frame, dissected))),
            ("summary", JSONText.string(dissected.summary)),
        ]
        if !frame.comments.isEmpty { members.append(("comments", JSONText.strings(frame.comments))) }
        if let first = dissected.att.first {
            members.append(("att", Self.att(first)))
            members.append(("att_all", "[" + dissected.att.map(Self.att).joined(separator: ",") + "]"))
        }
        for annotated in annotations {
            members.append((annotated.jsonKey, annotated.annotations[0].json))
            members.append((annotated.jsonKey + "_all", "[" + annotated.annotations.map(\.json).joined(separator: ",") + "]"))
        }
        if let udp = dissected.udp {
            members.append(("udp", JSONText.object([
                ("src", JSONText.string(udp.sourceAddress.description)),
                ("src_port", String(udp.sourcePort)),
                ("dst", JSONText.string(udp.destinationAddress.description)),
                ("dst_port", String(udp.destinationPort)),
                ("length", String(udp.payload.count)),
            ])))
        }
        if let tcp = dissected.tcp {
            var fields: [(String, String)] = [
                ("src", JSONText.string(tcp.sourceAddress.description)),
                ("src_port", String(tcp.sourcePort)),
                ("dst", JSONText.string(tcp.destinationAddress.description)),
                ("dst_port", String(tcp.destinationPort)),
                ("flags", String(tcp.flags)),
                ("length", String(tcp.payload.count)),
            ]
            if let analysis = dissected.tcpAnalysis {
                fields.append(("relative_seq", String(analysis.relativeSequence)))
                if analysis.isRetransmission { fields.append(("retransmission", "true")) }
                if analysis.isOutOfOrder { fields.append(("out_of_order", "true")) }
                if analysis.lostBytes > 0 { fields.append(("lost_bytes", String(analysis.lostBytes))) }
            }
            members.append(("tcp", JSONText.object(fields)))
        }
        if let first = dissected.mqtt.first {
            members.append(("mqtt", Self.mqtt(first)))
            members.append(("mqtt_all", "[" + dissected.mqtt.map(Self.mqtt).joined(separator: ",") + "]"))
        }
        if let problem = dissected.problemDescription {
            members.append(("problem", JSONText.string(problem)))
            members.append(("problems", "[" + dissected.problems.map(Self.problem).joined(separator: ",") + "]"))
        }
        out.write((firstFrame ? "" : ",") + "\n" + JSONText.object(members))
        firstFrame = false
    }

    /// An MQTT control packet for scripts: `type` (the control packet type number), `type_name`,
    /// `direction` (`to_broker` or `to_client`), `length`, `version`; `topic` where the packet has
    /// one (PUBLISH: the Topic Name or what its MQTT 5 Topic Alias stands for; SUBSCRIBE and
    /// UNSUBSCRIBE: the first filter, all of them in `topics`); `qos` (PUBLISH's header QoS);
    /// `packet_id`; `payload` (PUBLISH's application message, hex); `problem` when malformed.
    static func mqtt(_ record: MQTTRecord) -> String {
        var members: [(String, String)] = [
            ("type", String(record.typeNumber)),
            ("type_name", JSONText.string(MQTTPacketType(rawValue: record.typeNumber)?.description)),
            ("direction", JSONText.string(record.fromClient ? "to_broker" : "to_client")),
            ("length", String(record.length)),
            ("version", JSONText.string(record.version.description)),
        ]
        if record.versionAssumed { members.append(("version_assumed", "true")) }
        if let topic = record.topic { members.append(("topic", JSONText.string(topic))) }
        if let packet = record.packet {
            if !packet.topicFilters.isEmpty { members.append(("topics", JSONText.strings(packet.topicFilters))) }
            if let id = packet.packetID { members.append(("packet_id", String(id))) }
            if case .publish(let publish) = packet.body {
                members.append(("qos", String(publish.qos)))
                if publish.dup { members.append(("dup", "true")) }
                if publish.retain { members.append(("retain", "true")) }
                if let alias = publish.topicAlias { members.append(("topic_alias", String(alias))) }
                members.append(("payload", JSONText.string(JSONText.hex(publish.payload))))
            }
        }
        if let problem = record.problem { members.append(("problem", JSONText.string(problem.description))) }
        return JSONText.object(members)
    }

    /// One of a frame's problems for scripts: `layer`, `kind` (``DissectionProblem/kindName``),
    /// `offset` and `context` where the problem has a place (a frame offset unless `context`
    /// names what it counts within), and `text`, the sentence `problem` joins.
    static func problem(_ problem: DissectionProblem) -> String {
        var members: [(String, String)] = [("layer", JSONText.string(problem.layer)), ("kind", JSONText.string(problem.kindName))]
        if let place = problem.place {
            members.append(("offset", String(place.offset)))
            if let context = place.context { members.append(("context", JSONText.string(context))) }
        }
        members.append(("text", JSONText.string(problem.description)))
        return JSONText.object(members)
    }

    static func att(_ record: ATTRecord) -> String {
        JSONText.object([
            ("opcode", String(record.opcode.rawValue)),
            ("opcode_name", JSONText.string(record.opcode.name)),
            ("handle", record.handle.map { String($0) } ?? "null"),
            ("value", JSONText.string(JSONText.hex(record.value))),
            ("direction", JSONText.string(record.direction.rawValue)),
            ("connection_handle", String(record.connectionHandle)),
            ("service_uuid", JSONText.string(record.serviceUUID?.description)),
            ("characteristic_uuid", JSONText.string(record.characteristicUUID?.description)),
        ])
    }

    func end(summary: CaptureSummary, interfaces: [CaptureInterface], warnings: [CaptureWarning], set: LoadedCaptureSet?) {
        if listFrames { out.write("\n]") }
        var members: [(String, String)] = [("frames", String(summary.frames))]
        let interfaceObjects = interfaces.enumerated().map { index, interface -> String in
            var fields: [(String, String)] = [
                ("index", String(index)),
                ("linktype", String(interface.linkType.rawValue)),
                ("linktype_name", JSONText.string(interface.linkType.name)),
                ("name", JSONText.string(interface.name)),
                ("frames", String(summary.framesPerInterface[index, default: 0])),
                ("bytes", String(summary.bytesPerInterface[index, default: 0])),
            ]
            let statistics = interface.statistics
            fields.append(("dropped", statistics.interfaceDropped != nil || statistics.osDropped != nil ? String(statistics.totalDropped) : "null"))
            fields.append(("received", statistics.received.map { String($0) } ?? "null"))
            if let role = set?.manifest.interface(index: index)?.role { fields.append(("role", JSONText.string(role.rawValue))) }
            if !interface.comments.isEmpty { fields.append(("comments", JSONText.strings(interface.comments))) }
            return JSONText.object(fields)
        }
        members.append(("interfaces", "[" + interfaceObjects.joined(separator: ",") + "]"))
        members.append(("first_time_ns", summary.minTimeNs.map { String($0) } ?? "null"))
        members.append(("last_time_ns", summary.maxTimeNs.map { String($0) } ?? "null"))
        members.append(("duration_ns", summary.minTimeNs.flatMap { first in summary.maxTimeNs.map { String($0 &- first) } } ?? "null"))
        members.append(("comment_count", String(summary.commentCount)))
        members.append(("comments", "[" + summary.comments.map {
            JSONText.object([("frame", String($0.frame)), ("text", JSONText.string($0.text))])
        }.joined(separator: ",") + "]"))
        members.append(("warnings", JSONText.strings(warnings.filter { $0.kind != .skippedUnknown }.map(\.description))))
        if let set {
            members.append(("set", JSONText.object([
                ("name", JSONText.string(set.directory.name)),
                ("title", JSONText.string(set.manifest.title)),
                ("status", JSONText.string(set.manifest.status.rawValue)),
                ("recorded_at", JSONText.string(set.manifest.recordedAt)),
                ("annotations", String(set.manifest.annotations.count)),
                ("verified", set.verified ? "true" : "false"),
            ])))
        }
        let tail = JSONText.object(members)
        out.write("," + String(tail.dropFirst()) + "\n")
    }
}
