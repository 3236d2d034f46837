import ArgumentParser
import CaptureKit
import CaptureSet
import Dissectors
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether import FILE --out Captures/<name>`: any readable capture becomes a capture set.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Turn a capture file (pcap, pcapng, btsnoop, PacketLogger) into a capture set.",
        discussion: """
            The set is built in a hidden folder beside --out and renamed into place when complete, \
            so an interrupted import leaves no half-made set. The frames are written to \
            capture.pcapng with nanosecond timestamps, one interface block per source interface, \
            and every packet comment (each also becomes a manifest annotation). manifest.yaml gets \
            each interface's role: Bluetooth HCI link types become ble-hci or ble-monitor; an IP \
            interface carrying UDP to the ingest port (--ingest-port, default 12345) becomes \
            ingest-udp; anything else is context. The set is sealed with the SHA-256 of its \
            capture file.

            Import an Android HCI snoop log:
              tether import btsnoop_hci.log --out Captures/pixel-pairing --title "Pixel 8"
            """
    )

    @Argument(help: "The capture file to import (the format is found from its first bytes).")
    var file: String

    @Option(name: .long, help: "The capture set folder to create, e.g. Captures/<name>. It must not exist yet.")
    var out: String

    @Option(name: .long, help: "One line saying what was recorded (default: the file's name).")
    var title: String?

    @Option(name: .long, help: "Free text for the manifest's description.")
    var description: String?

    @Option(name: .customLong("ingest-port"), help: "The UDP port whose traffic marks an interface as ingest-udp (default 12345).",
            transform: { try OptionValues.integer($0, option: "--ingest-port", range: 1...UInt16.max) })
    var ingestPort: UInt16?

    @Flag(name: .customLong("allow-empty"), help: "Import a file that holds no frames (by default that is refused as a likely mistake).")
    var allowEmpty = false

    func validate() throws {
        guard FileIO.exists(file) else {
            throw ValidationError("\(file) does not exist. Give a pcap, pcapng, btsnoop or PacketLogger file.")
        }
        guard !FileIO.isDirectory(file) else {
            throw ValidationError("\(file) is a folder. `tether import` takes a capture file; a set folder can be inspected or exported as it is.")
        }
        guard !out.isEmpty, !out.hasSuffix("/") || out == "/" else {
            throw ValidationError("--out \(out.isEmpty ? "is empty" : "\(out) ends in /"); give the new set's folder name, e.g. --out Captures/pixel-pairing.")
        }
        var info = stat()
        if lstat(out, &info) == 0, !FileIO.exists(out) {
            throw ValidationError("--out \(out) is a symbolic link to something that does not exist; remove the link or choose another folder name.")
        }
        guard !FileIO.exists(out) else {
            throw ValidationError("\(out) already exists. Choose a new folder name under Captures/, or remove the old one first.")
        }
        try OutputFile.refuseNewSetInsideSet(out, option: "--out")
    }

    func run() throws {
        let reader = try CaptureFile.open(path: file)
        let parent = FileIO.split(out).dir
        try FileSystemWrites.makeDirectories(parent)
        let staging = FileIO.temporarySibling(of: FileIO.join(parent, FileIO.split(out).base), purpose: "importing")
        try FileSystemWrites.removeTree(staging)
        try FileSystemWrites.makeDirectories(staging)
        do {
            let summary = try Self.buildSet(
                at: staging, from: reader, title: title ?? FileIO.split(file).base, description: description,
                ingestPort: ingestPort ?? 12345, showProgress: Terminal.stderrIsTerminal, allowEmpty: allowEmpty)
            try FileSystemWrites.rename(staging, to: out)
            for warning in summary.warnings { Terminal.warn("tether: warning: \(warning)") }
            StandardOutput.shared.line("Imported \(summary.frames) frames on \(summary.interfaces.count) interface(s) from \(file) (\(reader.format.rawValue)) into \(out)")
            for (index, interface) in summary.interfaces.enumerated() {
                StandardOutput.shared.line("  #\(index)  \(interface.linkType)  \(summary.framesPerInterface[index, default: 0]) frames  role \(summary.roles[index])")
            }
            StandardOutput.shared.line("Next: tether inspect \(out) --frames")
        } catch {
            // The staging folder is ours alone; leaving it would only confuse the next import.
            try? FileSystemWrites.removeTree(staging)
            throw error
        }
    }

    /// What an import wrote.
    struct Summary {
        var frames: Int
        var interfaces: [CaptureInterface]
        var framesPerInterface: [Int: Int]
        var roles: [InterfaceRole]
        var warnings: [CaptureWarning]
    }

    /// Write `reader`'s frames as a sealed capture set in the (existing, empty) folder `folder`.
    /// A source without frames is refused unless `allowEmpty`.
    static func buildSet(
        at folder: String, from reader: any CaptureReader, title: String, description: String?,
        ingestPort: UInt16, showProgress: Bool, allowEmpty: Bool = false
    ) throws -> Summary {
        let capturePath = FileIO.join(folder, CaptureSetDirectory.defaultCaptureFileName)
        let writer = try PcapngWriter(path: capturePath, comment: "Imported by Tether \(TetherVersion.current) from \(FileIO.split(reader.path).base)")
        var extractor = UDPExtractor()
        var ingestFrames: [Int: Int] = [:]
        var annotations: [ManifestAnnotation] = []
        var firstTimeNs: Int64?
        let progress = ProgressDisplay(label: FileIO.split(reader.path).base, totalBytes: FileIO.size(reader.path), enabled: showProgress)
        let copy = try CaptureCopy.copy(from: reader, to: writer, progress: progress) { frame in
            if firstTimeNs == nil { firstTimeNs = frame.timestampNs }
            for comment in frame.comments {
                annotations.append(ManifestAnnotation(frame: frame.number, timeNs: frame.timestampNs &- (firstTimeNs ?? 0), text: comment, author: "import"))
            }
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            guard UDPExtractor.handles(linkType) else { return }
            let extraction = frame.data.withUnsafeBytes { extractor.datagram(from: $0, linkType: linkType) }
            if case .datagram(let datagram) = extraction, datagram.destinationPort == ingestPort {
                ingestFrames[frame.interfaceIndex, default: 0] += 1
            }
        }
        try writer.close()
        if copy.frames == 0 && !allowEmpty {
            let reasons = copy.warnings.isEmpty ? "" : " (\(copy.warnings.map(\.description).joined(separator: "; ")))"
            throw CommandFailure.failed("\(reader.path) holds no frames\(reasons), so the set would replay nothing. Check that it is the capture you meant, or pass --allow-empty to import it anyway.")
        }

        var roles: [InterfaceRole] = []
        var manifestInterfaces: [ManifestInterface] = []
        for (index, interface) in copy.interfaces.enumerated() {
            let role = Self.role(for: interface.linkType, carriesIngest: ingestFrames[index, default: 0] > 0)
            roles.append(role)
            manifestInterfaces.append(ManifestInterface(
                index: index, name: interface.name, linkType: interface.linkType, role: role,
                ingestPort: role == .ingestUDP ? ingestPort : nil))
        }
        let manifest = CaptureSetManifest(
            title: title, description: description, recordedAt: Format.utcNow(),
            interfaces: manifestInterfaces, annotations: annotations)
        try CaptureSetDirectory.create(at: folder, manifest: manifest)
        try CaptureSetDirectory.seal(at: folder)
        return Summary(frames: copy.frames, interfaces: copy.interfaces, framesPerInterface: copy.framesPerInterface, roles: roles, warnings: copy.warnings)
    }

    /// The replay role an imported interface gets.
    static func role(for linkType: LinkType, carriesIngest: Bool) -> InterfaceRole {
        switch linkType {
        case .bluetoothHCIH4WithPHDR, .bluetoothHCIH4: .bleHCI
        case .bluetoothLinuxMonitor: .bleMonitor
        default: carriesIngest ? .ingestUDP : .context
        }
    }
}
