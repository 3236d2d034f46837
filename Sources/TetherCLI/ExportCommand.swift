import ArgumentParser
import CaptureKit
import CaptureSet

/// `tether export SET --format pcapng|btsnoop --out FILE`.
struct ExportCommand: ParsableCommand {
    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case pcapng, btsnoop
    }

    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a capture set's frames as a pcapng or btsnoop file.",
        discussion: """
            pcapng keeps everything: every interface, nanosecond timestamps, packet comments, \
            custom options and drop statistics. btsnoop holds one Bluetooth interface: HCI H4 with \
            direction (link type 201) becomes datalink 1002, BlueZ monitor records (254) become \
            2001; timestamps are cut to microseconds and comments are lost (btsnoop has no room for \
            them). When the set has several Bluetooth interfaces, choose one with --interface; \
            frames of other interfaces are left out and counted.

            Hand a BLE capture to a colleague whose tools read Android snoop logs:
              tether export Captures/pixel-pairing --format btsnoop --out pairing.log
            """
    )

    @Argument(help: "The capture set folder (or a capture file) to export.")
    var set: String

    @Option(name: .long, help: "The output format: pcapng or btsnoop.")
    var format: OutputFormat

    @Option(name: .long, help: "The file to write (replaced if it exists, only once the export is complete).")
    var out: String

    @Option(name: .long, help: "For btsnoop: the index of the Bluetooth interface to export (default: the only one).",
            transform: { try OptionValues.integer($0, option: "--interface", range: 0...Int(UInt32.max)) })
    var interface: Int?

    func validate() throws {
        guard FileIO.exists(set) else {
            throw ValidationError("\(set) does not exist. Give a capture set folder such as Captures/<name>.")
        }
        if FileIO.isDirectory(set) && !CaptureSetDirectory.isCaptureSet(set) {
            throw ValidationError("\(set) has no manifest.yaml, so it is not a capture set. `tether import FILE --out Captures/<name>` makes one.")
        }
        if FileIO.isDirectory(out) {
            throw ValidationError("\(out) is a folder; --out takes a file name, e.g. \(FileIO.join(out, "capture.\(format.rawValue)")).")
        }
        try OutputFile.check(out, option: "--out")
        if FileIO.isDirectory(set) {
            try OutputFile.refuseInside(out, option: "--out", set: set)
        } else {
            try OutputFile.refuseOverwriting(out, option: "--out", protected: [set], reading: "the capture exported")
        }
        if interface != nil && format != .btsnoop {
            throw ValidationError("--interface chooses the one interface a btsnoop file can hold; pcapng keeps every interface, so leave it out.")
        }
    }

    func run() throws {
        var capturePath = set
        if FileIO.isDirectory(set) {
            let loaded = try CaptureSetDirectory.load(set, verify: true)
            for warning in loaded.warnings { Terminal.warn("tether: warning: \(warning)") }
            capturePath = loaded.capturePath
        }
        let progress = ProgressDisplay(label: FileIO.split(capturePath).base, totalBytes: FileIO.size(capturePath), enabled: Terminal.stderrIsTerminal)
        switch format {
        case .pcapng:
            let reader = try CaptureFile.open(path: capturePath)
            let copy = try OutputFile.write(to: out) { temporary in
                let writer = try PcapngWriter(path: temporary)
                let copy = try CaptureCopy.copy(from: reader, to: writer, progress: progress)
                try writer.close()
                return copy
            }
            for warning in copy.warnings { Terminal.warn("tether: warning: \(warning)") }
            StandardOutput.shared.line("Wrote \(copy.frames) frames on \(copy.interfaces.count) interface(s) to \(out) (pcapng)")
        case .btsnoop:
            try OutputFile.write(to: out) { temporary in try exportBtsnoop(capturePath, to: temporary, progress: progress) }
        }
    }

    /// Writes the btsnoop file at `path` (a temporary name; `run` renames it to --out).
    private func exportBtsnoop(_ capturePath: String, to path: String, progress: ProgressDisplay) throws {
        // First pass over the interface list only: pcapng describes interfaces before their frames,
        // but may describe more later, so the choice is made when the first Bluetooth frame shows up.
        let reader = try CaptureFile.open(path: capturePath)
        var writer: BtsnoopWriter?
        var chosen = interface
        var written = 0
        var skipped = 0
        var lastDrops: UInt64 = 0
        while let frame = try reader.next() {
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            if chosen == nil, linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothLinuxMonitor {
                let bluetooth = reader.interfaces.indices.filter {
                    let type = reader.interfaces[$0].linkType
                    return type == .bluetoothHCIH4WithPHDR || type == .bluetoothLinuxMonitor
                }
                if bluetooth.count > 1 {
                    throw CommandFailure.failed("\(set) has \(bluetooth.count) Bluetooth interfaces (\(bluetooth.map { "#\($0)" }.joined(separator: ", "))); a btsnoop file holds one. Choose with --interface N.")
                }
                chosen = frame.interfaceIndex
            }
            guard frame.interfaceIndex == chosen else {
                skipped += 1
                continue
            }
            if writer == nil {
                let datalink: BtsnoopWriter.Datalink
                switch linkType {
                case .bluetoothHCIH4WithPHDR: datalink = .h4
                case .bluetoothLinuxMonitor: datalink = .monitor
                default:
                    throw CommandFailure.failed("interface #\(frame.interfaceIndex) of \(set) is \(linkType), which btsnoop cannot hold (only HCI H4 with direction, 201, and BlueZ monitor, 254). Export it as pcapng.")
                }
                writer = try BtsnoopWriter(path: path, datalink: datalink)
            }
            // btsnoop carries a cumulative drop count per record: use the interface's as known so far.
            let drops = reader.interfaces[frame.interfaceIndex].statistics.totalDropped
            if drops != lastDrops {
                writer?.cumulativeDrops = UInt32(clamping: drops)
                lastDrops = drops
            }
            try writer?.write(frame, linkType: linkType)
            written += 1
            progress.update(bytesRead: reader.bytesRead, frames: written + skipped)
        }
        progress.clear()
        for warning in reader.warnings where warning.kind != .skippedUnknown {
            Terminal.warn("tether: warning: \(warning)")
        }
        guard let writer else {
            throw CommandFailure.failed("\(set) has no Bluetooth HCI frames (link type 201 or 254) to write as btsnoop. Export it as pcapng instead.")
        }
        try writer.close()
        var line = "Wrote \(written) frames to \(out) (btsnoop \(writer.datalink.rawValue))"
        if skipped > 0 { line += "; left out \(skipped) frames of other interfaces" }
        StandardOutput.shared.line(line)
    }
}
