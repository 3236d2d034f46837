import CaptureKit
import CaptureSet
import Foundation

/// One interface of a recording: a live source read on its own thread, or an interface whose
/// frames the caller writes itself with ``Recorder/write(_:input:)`` (the H4 tap, tests).
public struct RecorderInput: Sendable {
    /// The interface block written for it.
    public var interface: CaptureInterface
    /// The source the recorder reads, or `nil` when the caller writes the frames.
    public var source: (any LiveSource)?
    /// The role the manifest gives it.
    public var role: InterfaceRole?
    /// For ``InterfaceRole/ingestUDP``: the ingest server's port.
    public var ingestPort: UInt16?
    /// For ``InterfaceRole/mqttTCP``: the broker's port.
    public var brokerPort: UInt16?

    /// An input read from `source`.
    public init(source: any LiveSource, role: InterfaceRole? = nil, ingestPort: UInt16? = nil) {
        self.interface = source.interface
        self.source = source
        self.role = role
        self.ingestPort = ingestPort
    }

    /// An input whose frames the caller writes.
    public init(interface: CaptureInterface, role: InterfaceRole? = nil, ingestPort: UInt16? = nil) {
        self.interface = interface
        self.source = nil
        self.role = role
        self.ingestPort = ingestPort
    }

    /// TCP to an MQTT broker's port, captured by libpcap: role `mqtt-tcp` with the port.
    public static func mqttTCP(_ source: PcapLiveSource, port: UInt16) -> RecorderInput {
        var input = RecorderInput(source: source, role: .mqttTCP)
        input.brokerPort = port
        return input
    }

    /// UDP to the ingest port, captured by libpcap: role `ingest-udp` with the port.
    public static func ingestUDP(_ source: PcapLiveSource, port: UInt16) -> RecorderInput {
        RecorderInput(source: source, role: .ingestUDP, ingestPort: port)
    }
}

/// What one interface contributed to a finished recording.
public struct RecordedInterfaceSummary: Sendable, Hashable {
    /// Index in the capture file.
    public var index: Int
    /// `if_name`.
    public var name: String?
    /// Link type of its frames.
    public var linkType: LinkType
    /// Frames written for it.
    public var frames: Int
    /// What the source counted (libpcap's `ps_recv`, drops `ps_drop + ps_ifdrop`), when it counts.
    public var statistics: InterfaceStatistics?

    /// One interface's part of a recording.
    public init(index: Int, name: String?, linkType: LinkType, frames: Int, statistics: InterfaceStatistics?) {
        self.index = index
        self.name = name
        self.linkType = linkType
        self.frames = frames
        self.statistics = statistics
    }
}

/// A finished (sealed) recording.
public struct RecordingSummary: Sendable, Equatable {
    /// The capture set's folder.
    public var setPath: String
    /// The capture file.
    public var capturePath: String
    /// Frames written, all interfaces.
    public var frames: Int
    /// Per interface.
    public var interfaces: [RecordedInterfaceSummary]
    /// The annotations, as the manifest has them.
    public var annotations: [ManifestAnnotation]
    /// SHA-256 of the capture file, as sealed.
    public var sha256: String
    /// Things the user should know (timestamp precision, marks with no frame to carry them).
    public var notices: [String]

    /// A summary as ``Recorder`` seals one.
    public init(setPath: String, capturePath: String, frames: Int, interfaces: [RecordedInterfaceSummary],
                annotations: [ManifestAnnotation], sha256: String, notices: [String]) {
        self.setPath = setPath
        self.capturePath = capturePath
        self.frames = frames
        self.interfaces = interfaces
        self.annotations = annotations
        self.sha256 = sha256
        self.notices = notices
    }

    /// Drops of every interface, added up.
    public var totalDropped: UInt64 { interfaces.reduce(0) { $0 + ($1.statistics?.totalDropped ?? 0) } }

    /// ``notices``, then one sentence for each interface whose source counted drops: what a run
    /// that recorded must tell its user, since a capture that lost packets replays as a peer that
    /// never sent them.
    public var noticesAndDrops: [String] {
        var sentences = notices
        for interface in interfaces {
            guard let statistics = interface.statistics, statistics.totalDropped > 0 else { continue }
            let of = statistics.received.map { " of \($0) received" } ?? ""
            sentences.append("interface #\(interface.index) (\(interface.name ?? "unnamed"), \(interface.linkType.name)) of \(setPath) dropped "
                + "\(statistics.totalDropped) packet\(statistics.totalDropped == 1 ? "" : "s")\(of) while recording: the capture lacks them, "
                + "and a replay sees a peer that never sent them; record again on a less loaded machine")
        }
        return sentences
    }
}

/// Writes live frames into a capture set's `capture.pcapng` as they arrive.
///
/// - One Interface Description Block per input, in input order.
/// - Flushed to the OS at least every ``flushInterval``: a killed recorder leaves a file that
///   CaptureKit reads up to the last flush (a cut-off last block is reported as truncation).
/// - ``mark(_:)`` attaches a note as a packet comment to the next frame that arrives; if none
///   arrives before the end, to the last frame (when it has not been flushed yet; otherwise the
///   note is kept in the manifest only, and a notice says so).
/// - The manifest is written at start with status `recording` and sealed at the end with status
///   `complete`, the file's SHA-256, the annotations, and each interface's frame, received and drop
///   counts.
///
/// Use: `start()`, then `run()` (async, returns after ``stop()`` with the sealed summary); or, for
/// inputs without a source, `start()`, `write(_:input:)`…, `finish()`.
///
/// `@unchecked Sendable`: every `var` (the `PcapngWriter` included) is read and written under `lock`
/// only, by the source threads, the caller and `mark`/`stop` alike; the `let`s never change after
/// `init`.
public final class Recorder: @unchecked Sendable {
    // Thread-safety: every mutable member is guarded by `lock`; source threads, `mark` and `stop`
    // may come from any thread.

    /// The capture set folder.
    public let setPath: String
    /// The inputs, in interface order.
    public let inputs: [RecorderInput]
    /// Longest time written frames stay in memory before reaching the OS.
    public let flushInterval: Duration
    /// How long frames wait to be written in timestamp order (zero: written as they come). Sources
    /// on their own threads hand over frames a little late (libpcap's buffer) while a host writes
    /// its own records at once, so without a window a call can land in the file before the packet
    /// it reacted to. With one, every frame stamped at most this long before a later-arriving one
    /// is still written before it.
    public let reorderWindow: Duration

    private let manifestTemplate: CaptureSetManifest
    private let lock = NSLock()
    private let monotonic = ContinuousClock()

    private var writer: PcapngWriter?
    private var capturePath = ""
    private var started = false
    private var finished = false
    private var stopRequested = false
    private var frameCount = 0
    private var framesPerInput: [Int]
    private var firstTimestampNs: Int64?
    private var annotations: [ManifestAnnotation] = []
    private var pendingMarks: [String] = []
    private var noticeList: [String] = []
    private var lastFlush: ContinuousClock.Instant
    private var failure: (any Error)?
    private var running = 0
    private var runWaiter: CheckedContinuation<Void, Never>?

    /// Frames waiting for the reorder window, kept in timestamp order (equal stamps in arrival
    /// order) as they come, so writing them out takes a prefix.
    private var waiting: [WaitingFrame] = []

    private struct WaitingFrame {
        var input: Int
        var timestampNs: Int64
        var originalLength: Int
        var data: [UInt8]
    }

    // The newest frame is held back until the next one arrives or the flush interval passes, so a
    // mark made after it can still ride on it when no frame follows.
    private var held = HeldFrame()

    private struct HeldFrame {
        var valid = false
        var input = 0
        var number = 0
        var timestampNs: Int64 = 0
        var originalLength = 0
        var data: [UInt8] = []
        var count = 0
        var comments: [String] = []
    }

    /// A recorder for a new capture set at `setPath` (the folder must not hold a manifest yet).
    /// - Parameters:
    ///   - title: the manifest's one-line title.
    ///   - description: free text for the manifest.
    ///   - devices: the devices that took part.
    public init(
        setPath: String, title: String, description: String? = nil, devices: [ManifestDevice] = [],
        inputs: [RecorderInput], flushInterval: Duration = .seconds(1), reorderWindow: Duration = .zero
    ) {
        self.setPath = setPath
        self.inputs = inputs
        self.flushInterval = flushInterval
        self.reorderWindow = max(.zero, min(reorderWindow, flushInterval))
        self.framesPerInput = Array(repeating: 0, count: inputs.count)
        self.lastFlush = monotonic.now
        var manifest = CaptureSetManifest(title: title, description: description, recordedAt: CaptureSetManifest.timestamp(Date()), devices: devices)
        manifest.interfaces = inputs.enumerated().map { index, input in
            var interface = ManifestInterface(
                index: index, name: input.interface.name, linkType: input.interface.linkType,
                role: input.role ?? Self.defaultRole(for: input.interface.linkType),
                ingestPort: input.ingestPort)
            interface.brokerPort = input.brokerPort
            return interface
        }
        self.manifestTemplate = manifest
    }

    /// Frames written (or held) so far.
    public var framesRecorded: Int { lock.withLock { frameCount } }

    /// Things the user should know (also returned in the summary).
    public var notices: [String] { lock.withLock { noticeList + inputs.flatMap { $0.source?.notices ?? [] } } }

    /// Creates the set folder, writes the manifest (status `recording`) and the capture file's
    /// section and interface blocks.
    /// - Throws: ``LiveCaptureError`` (`.output`) when the folder or file cannot be written,
    ///   (`.misuse`) when called twice.
    public func start() throws(LiveCaptureError) {
        try lock.locked { () throws(LiveCaptureError) in
            guard !started else {
                throw LiveCaptureError(kind: .misuse, source: setPath, step: "start", detail: "the recorder was already started", hint: "Make a new Recorder for another recording.")
            }
            let directory: CaptureSetDirectory
            do {
                directory = try CaptureSetDirectory.create(at: setPath, manifest: manifestTemplate)
            } catch {
                throw LiveCaptureError(kind: .output, source: setPath, step: "create capture set", detail: "\(error)", hint: "Choose a new set name, or remove the old set.")
            }
            capturePath = directory.capturePath(for: manifestTemplate)
            do {
                let writer = try PcapngWriter(path: capturePath, comment: "Tether live recording: \(manifestTemplate.title)")
                for input in inputs { _ = try writer.addInterface(input.interface) }
                try writer.flush()
                self.writer = writer
            } catch {
                throw LiveCaptureError(kind: .output, source: capturePath, step: "write capture header", detail: "\(error)", hint: "Check free disk space and permissions of the folder.")
            }
            started = true
            lastFlush = monotonic.now
        }
    }

    /// Notes `text` on the next frame (see the type's description for the end-of-recording case).
    /// Safe from any thread.
    public func mark(_ text: String) {
        lock.withLock { pendingMarks.append(text) }
    }

    /// Asks ``run()`` to end: every source stops reading, then the recording is sealed. Safe from any thread.
    public func stop() {
        let sources = lock.withLock { () -> [any LiveSource] in
            stopRequested = true
            return inputs.compactMap(\.source)
        }
        for source in sources { source.stop() }
    }

    /// Starts (if needed), reads every source on its own thread until ``stop()`` (or a source
    /// fails), then seals the recording.
    /// - Throws: a source's ``LiveCaptureError`` after sealing what was recorded, or an output error.
    public func run() async throws -> RecordingSummary {
        if !lock.withLock({ started }) { try start() }
        let sources = inputs.enumerated().compactMap { index, input in input.source.map { (index, $0) } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyStopped = lock.withLock { () -> Bool in
                if sources.isEmpty { return true }
                running = sources.count
                runWaiter = continuation
                return false
            }
            if alreadyStopped { continuation.resume() ; return }
            for (index, source) in sources {
                let thread = Thread { [self] in
                    do {
                        try source.run { event in try self.handle(event, input: index) }
                    } catch {
                        self.lock.withLock { if self.failure == nil { self.failure = error } }
                        self.stop()
                    }
                    let waiter = self.lock.withLock { () -> CheckedContinuation<Void, Never>? in
                        self.running -= 1
                        guard self.running == 0 else { return nil }
                        defer { self.runWaiter = nil }
                        return self.runWaiter
                    }
                    waiter?.resume()
                }
                thread.name = "tether-record-\(input(index).interface.name ?? "\(index)")"
                thread.start()
            }
            if lock.withLock({ stopRequested }) { stop() }
        }
        let summary = try finish()
        if let failure = lock.withLock({ failure }) { throw failure }
        return summary
    }

    private func input(_ index: Int) -> RecorderInput { inputs[index] }

    private func handle(_ event: LiveSourceEvent, input: Int) throws {
        switch event {
        case .frame(let frame): try write(frame, input: input)
        case .idle: try flushIfDue()
        }
    }

    /// Writes one frame of input `input` (its index in ``inputs``). For inputs without a source;
    /// sources' frames arrive here from their threads.
    /// - Throws: ``LiveCaptureError`` (`.output`) when the file cannot be written, (`.misuse`)
    ///   before ``start()``, after ``finish()``, or for an unknown input.
    public func write(_ frame: LiveFrameView, input: Int) throws(LiveCaptureError) {
        try lock.locked { () throws(LiveCaptureError) in
            guard started, !finished, let writer else {
                throw LiveCaptureError(kind: .misuse, source: setPath, step: "write frame", detail: started ? "the recording is finished" : "the recorder was not started", hint: "Call start() first; write nothing after finish().")
            }
            guard inputs.indices.contains(input) else {
                throw LiveCaptureError(kind: .misuse, source: setPath, step: "write frame", detail: "input \(input) does not exist (there are \(inputs.count))", hint: "Pass the index of the input in the order given to Recorder.")
            }
            guard reorderWindow > .zero else {
                try emit(writer, input: input, timestampNs: frame.timestampNs, originalLength: frame.originalLength, data: frame.data)
                try flushIfDueLocked(writer)
                return
            }
            // Frames nearly always come in order: the place is found from the end, usually at once.
            var index = waiting.endIndex
            while index > waiting.startIndex, waiting[index - 1].timestampNs > frame.timestampNs { index -= 1 }
            waiting.insert(WaitingFrame(input: input, timestampNs: frame.timestampNs, originalLength: frame.originalLength,
                                        data: Array(frame.data)), at: index)
            try drainWaiting(writer, all: false)
            try flushIfDueLocked(writer)
        }
    }

    /// Writes the waiting frames stamped more than ``reorderWindow`` ago (or all of them), oldest
    /// stamp first; equal stamps keep their arrival order.
    private func drainWaiting(_ writer: PcapngWriter, all: Bool) throws(LiveCaptureError) {
        guard !waiting.isEmpty else { return }
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let horizon = all ? Int64.max : (Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)) &- reorderWindow.nanosecondsForRecorder
        var written = 0
        defer { waiting.removeFirst(written) }
        for frame in waiting {
            guard frame.timestampNs <= horizon else { break }
            // A typed-throws closure here crashes Swift 6.3's IR generation; carry the error out instead.
            var failure: LiveCaptureError?
            frame.data.withUnsafeBytes { bytes in
                do throws(LiveCaptureError) {
                    try emit(writer, input: frame.input, timestampNs: frame.timestampNs, originalLength: frame.originalLength, data: bytes)
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            written += 1
        }
    }

    /// Writes one frame: the held frame goes out, this one is held (so a mark made after it can
    /// still ride on it), numbered, and given the marks waiting.
    private func emit(_ writer: PcapngWriter, input: Int, timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer) throws(LiveCaptureError) {
        try writeHeld(writer)
        frameCount += 1
        framesPerInput[input] += 1
        if firstTimestampNs == nil { firstTimestampNs = timestampNs }
        held.valid = true
        held.input = input
        held.number = frameCount
        held.timestampNs = timestampNs
        held.originalLength = originalLength
        if held.data.count < data.count { held.data = [UInt8](repeating: 0, count: max(data.count, 2048)) }
        held.data.withUnsafeMutableBytes { $0.copyMemory(from: data) }
        held.count = data.count
        held.comments = pendingMarks
        for text in pendingMarks {
            annotations.append(ManifestAnnotation(frame: frameCount, timeNs: timestampNs &- (firstTimestampNs ?? timestampNs), text: text))
        }
        pendingMarks = []
    }

    /// Hands every written frame to the OS now.
    /// - Throws: ``LiveCaptureError`` (`.output`).
    public func flush() throws(LiveCaptureError) {
        try lock.locked { () throws(LiveCaptureError) in
            guard let writer, !finished else { return }
            try drainWaiting(writer, all: false)
            try writeHeld(writer)
            try flushWriter(writer)
        }
    }

    /// Flushes if ``flushInterval`` has passed since the last flush. Sources' threads call it when
    /// idle; a caller writing frames itself calls it at least once per interval.
    /// - Throws: ``LiveCaptureError`` (`.output`).
    public func flushIfDue() throws(LiveCaptureError) {
        try lock.locked { () throws(LiveCaptureError) in
            guard let writer, !finished else { return }
            try flushIfDueLocked(writer)
        }
    }

    private func flushIfDueLocked(_ writer: PcapngWriter) throws(LiveCaptureError) {
        try drainWaiting(writer, all: false)
        guard lastFlush.duration(to: monotonic.now) >= flushInterval else { return }
        try writeHeld(writer)
        try flushWriter(writer)
    }

    private func flushWriter(_ writer: PcapngWriter) throws(LiveCaptureError) {
        do {
            try writer.flush()
        } catch {
            throw LiveCaptureError(kind: .output, source: capturePath, step: "flush", detail: "\(error)", hint: "Check free disk space; frames up to the previous flush are in the file.")
        }
        lastFlush = monotonic.now
    }

    private func writeHeld(_ writer: PcapngWriter) throws(LiveCaptureError) {
        guard held.valid else { return }
        held.valid = false
        do {
            if held.comments.isEmpty {
                try held.data.withUnsafeBytes { bytes in
                    try writer.write(interfaceIndex: held.input, timestampNs: held.timestampNs, originalLength: held.originalLength,
                                     data: UnsafeRawBufferPointer(rebasing: bytes[0..<held.count]))
                }
            } else {
                try writer.write(CaptureFrame(
                    number: held.number, interfaceIndex: held.input, timestampNs: held.timestampNs,
                    originalLength: held.originalLength, data: Array(held.data[0..<held.count]), comments: held.comments))
            }
        } catch {
            throw LiveCaptureError(kind: .output, source: capturePath, step: "write frame \(held.number)", detail: "\(error)", hint: "Check free disk space; frames up to the previous flush are in the file.")
        }
    }

    /// Stops the sources, writes the last frame and an Interface Statistics Block per source that
    /// counts (received, `ps_drop + ps_ifdrop` as `isb_ifdrop`), closes the file and seals the
    /// manifest. Called by ``run()``; call it yourself only for inputs without a source.
    /// - Throws: ``LiveCaptureError`` (`.output`).
    @discardableResult
    public func finish() throws(LiveCaptureError) -> RecordingSummary {
        // Closing a source while its thread still reads it would pull the handle from under it.
        try lock.locked { () throws(LiveCaptureError) in
            guard running == 0 else {
                throw LiveCaptureError(kind: .misuse, source: setPath, step: "finish", detail: "\(running) source(s) are still being read by run()", hint: "Call stop() and let run() finish the recording.")
            }
        }
        let statistics = inputs.map { $0.source?.statistics() }
        for input in inputs { input.source?.close() }
        return try lock.locked { () throws(LiveCaptureError) -> RecordingSummary in
            guard started, let writer, !finished else {
                throw LiveCaptureError(kind: .misuse, source: setPath, step: "finish", detail: started ? "the recording is already finished" : "the recorder was not started", hint: "Call start() once and finish() once.")
            }
            try drainWaiting(writer, all: true)
            if !pendingMarks.isEmpty {
                if held.valid {
                    held.comments += pendingMarks
                    let offset = held.timestampNs &- (firstTimestampNs ?? held.timestampNs)
                    annotations += pendingMarks.map { ManifestAnnotation(frame: held.number, timeNs: offset, text: $0) }
                } else if frameCount > 0 {
                    // The last frame is on disk already; the note can only go in the manifest.
                    let offset = lastWrittenOffset()
                    annotations += pendingMarks.map { ManifestAnnotation(frame: frameCount, timeNs: offset, text: $0) }
                    noticeList.append("\(pendingMarks.count) mark(s) came after the last frame had been flushed; they are in manifest.yaml (frame \(frameCount)) but not in the pcapng comments")
                } else {
                    noticeList.append("\(pendingMarks.count) mark(s) were not recorded: no frame was captured to attach them to (\(pendingMarks.joined(separator: "; ")))")
                }
                pendingMarks = []
            }
            try writeHeld(writer)
            do {
                for (index, stats) in statistics.enumerated() {
                    if let stats { try writer.writeStatistics(interfaceIndex: index, stats) }
                }
                try writer.close()
            } catch {
                throw LiveCaptureError(kind: .output, source: capturePath, step: "close capture", detail: "\(error)", hint: "Check free disk space; the manifest stays `recording` and the file keeps every flushed frame.")
            }
            finished = true

            let summaries = inputs.enumerated().map { index, input in
                RecordedInterfaceSummary(index: index, name: input.interface.name, linkType: input.interface.linkType, frames: framesPerInput[index], statistics: statistics[index])
            }
            let digest: String
            do {
                digest = try CaptureSetDirectory.sha256(ofFile: capturePath)
                var manifest = try CaptureSetDirectory.readManifest(at: setPath)
                manifest.status = .complete
                manifest.captureSha256 = digest
                manifest.annotations = annotations
                for summary in summaries {
                    guard let slot = manifest.interfaces.firstIndex(where: { $0.index == summary.index }) else { continue }
                    manifest.interfaces[slot].frames = summary.frames
                    manifest.interfaces[slot].received = summary.statistics?.received
                    manifest.interfaces[slot].dropped = summary.statistics.map(\.totalDropped)
                }
                try CaptureSetDirectory.saveManifest(manifest, to: setPath)
            } catch {
                throw LiveCaptureError(kind: .output, source: setPath, step: "seal manifest", detail: "\(error)", hint: "The capture file is complete; seal it with `tether seal \(setPath)` once the problem is fixed.")
            }
            let notices = noticeList + inputs.flatMap { $0.source?.notices ?? [] }
            return RecordingSummary(setPath: setPath, capturePath: capturePath, frames: frameCount, interfaces: summaries, annotations: annotations, sha256: digest, notices: notices)
        }
    }

    private func lastWrittenOffset() -> Int64 {
        held.timestampNs &- (firstTimestampNs ?? held.timestampNs)
    }

    static func defaultRole(for linkType: LinkType) -> InterfaceRole {
        switch linkType {
        case .bluetoothLinuxMonitor: .bleMonitor
        case .bluetoothHCIH4WithPHDR: .bleHCI
        default: .context
        }
    }
}

extension Duration {
    /// Whole nanoseconds (the window is at most the flush interval, so this never overflows).
    fileprivate var nanosecondsForRecorder: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
