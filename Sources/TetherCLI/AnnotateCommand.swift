import BehaviourTrace
import ArgumentParser
import CaptureKit
import CaptureSet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether annotate SET --frame N --text "…"`.
struct AnnotateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "annotate",
        abstract: "Attach a note to one frame of a capture set: a packet comment and a manifest annotation.",
        discussion: """
            The capture file is rewritten to a temporary file beside it with the comment added to \
            frame N (1-based, as Wireshark numbers frames), synced, and renamed over capture.pcapng. \
            The steps are ordered so that a crash at any point leaves a set that loads: the \
            manifest first records the annotation and marks the set unsealed, then the capture file \
            is replaced, then the set is sealed again with the new SHA-256.

            Mark the moment the sender stalled, so the replay report and Wireshark both show it:
              tether annotate Captures/plugin-faulty --frame 412 --text "stall starts"
            """
    )

    @Argument(help: "The capture set folder.")
    var set: String

    @Option(name: .long, help: "The 1-based frame number to annotate (as tether inspect --frames and Wireshark number them).",
            transform: { try OptionValues.integer($0, option: "--frame", range: 1...Int(Int32.max)) })
    var frame: Int

    @Option(name: .long, help: "The note. It becomes the frame's pcapng comment (Wireshark's frame.comment).")
    var text: String

    @Option(name: .long, help: "Who wrote the note (kept in the manifest).")
    var author: String?

    func validate() throws {
        guard CaptureSetDirectory.isCaptureSet(set) else {
            throw ValidationError("\(set) is not a capture set (no manifest.yaml). `tether import FILE --out Captures/<name>` makes one from a capture file.")
        }
        guard frame >= 1 else {
            throw ValidationError("--frame is 1-based (the first frame is 1); got \(frame). `tether inspect \(set) --frames` lists the numbers.")
        }
        guard !text.isEmpty else {
            throw ValidationError("--text is empty; give the note to attach.")
        }
        // A pcapng option's length is 16 bits (pcapng 3.5): checked here, before the copy, so the
        // message is about the note and not about the temporary file the copy is written to.
        guard text.utf8.count <= Self.maximumTextBytes else {
            throw ValidationError("--text is \(text.utf8.count) bytes of UTF-8; a pcapng comment holds at most \(Self.maximumTextBytes). Shorten the note, or keep the long text in a file beside the set and point to it.")
        }
        if Self.rawArgumentsHaveInvalidUTF8(matching: text) {
            throw ValidationError("--text is not valid UTF-8 (pcapng comments are UTF-8 text, and Tether will not alter the note to fit). Re-type it in a UTF-8 terminal, or convert it with iconv.")
        }
    }

    /// The longest note, in UTF-8 bytes: a pcapng option's length field is 16 bits.
    static let maximumTextBytes = 0xFFFF

    /// `true` when a raw process argument that is not valid UTF-8 decodes (with repairs) to
    /// `text`, alone or as `--text=…`: argument-parser only ever sees repaired strings, so the
    /// original bytes are looked at here.
    static func rawArgumentsHaveInvalidUTF8(matching text: String, arguments: [[UInt8]] = rawArguments()) -> Bool {
        for bytes in arguments where String(validating: bytes, as: UTF8.self) == nil {
            let repaired = String(decoding: bytes, as: UTF8.self)
            if repaired == text || repaired == "--text=" + text { return true }
        }
        return false
    }

    /// The process's arguments as the bytes the kernel passed.
    static func rawArguments() -> [[UInt8]] {
        (0..<Int(CommandLine.argc)).compactMap { index in
            CommandLine.unsafeArgv[index].map { pointer in Array(UnsafeBufferPointer(start: pointer, count: strlen(pointer))).map { UInt8(bitPattern: $0) } }
        }
    }

    func run() throws {
        let loaded = try CaptureSetDirectory.load(set, verify: true)
        for warning in loaded.warnings { Terminal.warn("tether: warning: \(warning)") }
        let captureFile = loaded.capturePath
        let temporary = FileIO.temporarySibling(of: captureFile, purpose: "annotate")

        // 1. The annotated capture, complete and synced, under a temporary name.
        let reader = try CaptureFile.open(path: captureFile)
        var frameTimeNs: Int64?
        var firstTimeNs: Int64?
        let copy: CaptureCopy
        do {
            let writer = try PcapngWriter(path: temporary)
            let progress = ProgressDisplay(label: FileIO.split(captureFile).base, totalBytes: FileIO.size(captureFile), enabled: Terminal.stderrIsTerminal)
            copy = try CaptureCopy.copy(from: reader, to: writer, progress: progress) { current in
                if firstTimeNs == nil { firstTimeNs = current.timestampNs }
                if current.number == frame {
                    current.comments.append(text)
                    frameTimeNs = current.timestampNs
                }
            }
            try writer.flush(sync: true)
            try writer.close()
        } catch {
            try? FileSystemWrites.removeFile(temporary)
            throw error
        }
        guard let frameTimeNs, let firstTimeNs else {
            try FileSystemWrites.removeFile(temporary)
            throw CommandFailure.failed("\(set) has \(copy.frames) frames, so there is no frame \(frame). `tether inspect \(set) --frames` lists them.")
        }
        if !copy.warnings.isEmpty {
            try FileSystemWrites.removeFile(temporary)
            let reasons = copy.warnings.map(\.description).joined(separator: "; ")
            throw CommandFailure.failed("\(captureFile) could not be read to its end (\(reasons)); annotating would drop what follows. Inspect it with `tether inspect \(set)`.")
        }

        // 2. The manifest: annotation recorded, set unsealed (it loads with a warning meanwhile).
        var manifest = loaded.manifest
        manifest.annotations.append(ManifestAnnotation(frame: frame, timeNs: frameTimeNs &- firstTimeNs, text: text, author: author))
        let wasComplete = manifest.status == .complete
        manifest.status = .recording
        manifest.captureSha256 = nil
        try CaptureSetDirectory.saveManifest(manifest, to: set)

        // 3. The capture replaced in one rename, then 4. sealed again (when it was sealed before).
        try FileSystemWrites.rename(temporary, to: captureFile)
        try FileSystemWrites.sync(FileIO.split(captureFile).dir)
        if wasComplete {
            try CaptureSetDirectory.seal(at: set)
        } else {
            Terminal.warn("tether: warning: \(set) was not sealed (status recording) and is left unsealed")
        }
        StandardOutput.shared.line("Annotated frame \(frame) of \(set) at +\(Format.seconds(frameTimeNs &- firstTimeNs)) s: \(text.escapingControlCharactersForReport())")
    }
}
