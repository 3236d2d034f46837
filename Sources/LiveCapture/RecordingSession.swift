import CaptureSet
import Foundation

/// What `tether record` records: the live sources, where, and under which title.
public struct RecordingRequest: Sendable {
    /// Which BLE source.
    public enum BLESource: Sendable, Equatable {
        /// An H4 tap in front of this controller, listening where the host stack connects. A tap
        /// listening beyond loopback serves exactly one host and says so in ``RecordingSession/warnings``.
        case tap(H4ControllerAddress, listen: H4ListenAddress)
        /// The BlueZ monitor channel: one adapter, or (`nil`) every adapter.
        case bluez(adapter: UInt16?)
    }

    /// The new set's folder.
    public var setPath: String
    /// The manifest's title; by default, what is recorded (`UDP on lo:12345 and …`).
    public var title: String?
    /// The manifest's description.
    public var description: String?
    /// UDP with libpcap: the device, the port (`nil`: every UDP datagram), a BPF filter instead.
    public var udp: (device: String, port: UInt16?, filter: String?)?
    /// TCP to an MQTT broker with libpcap: the device and the broker's port.
    public var mqttTCP: (device: String, port: UInt16)?
    /// An App Group container folder, watched with inotify.
    public var appGroup: String?
    /// BLE.
    public var ble: BLESource?

    /// A request for the set at `setPath`; add the sources.
    public init(setPath: String) {
        self.setPath = setPath
    }
}

/// One live recording into a new capture set: the sources and the tap opened, then started,
/// then run until stopped; what `tether record` runs, with no terminal or signal in it.
///
/// ```swift
/// let session = try RecordingSession(request)   // opens sources; nothing is written yet
/// try session.start()                            // creates the set, starts the tap
/// Task { try await Task.sleep(for: .seconds(10)); session.stop() }
/// let summary = try await session.run()          // sealed when it returns
/// ```
public final class RecordingSession: Sendable {
    // Thread-safety: `recorder`, `tap` and `stopped` are thread-safe themselves; the rest is set
    // in `init` and never changed.

    /// What is recorded, one phrase per source (`UDP on lo:12345`), for the title and messages.
    public let parts: [String]
    /// The H4 tap, when BLE goes through one: its address, statistics and failure.
    public let tap: H4Tap?
    /// The tap's interface index in the capture, when there is a tap.
    public let tapInput: Int?
    /// The set's folder.
    public let setPath: String
    /// What the user must be told before recording starts: a tap listening beyond loopback
    /// (``H4Tap/exposureWarning``).
    public let warnings: [String]
    private let recorder: Recorder
    private let hasSources: Bool
    private let stopped = StopSignal()

    /// Opens every source (and connects the tap to its controller) before the set exists, so a
    /// wrong interface or address leaves nothing behind.
    /// - Throws: ``LiveCaptureError`` naming the source that could not be opened.
    public init(_ request: RecordingRequest) throws(LiveCaptureError) {
        var inputs: [RecorderInput] = []
        var parts: [String] = []
        if let udp = request.udp {
            var options = udp.port.map { PcapLiveSource.Options.udpPort($0) } ?? PcapLiveSource.Options(filter: "udp")
            if let filter = udp.filter { options.filter = filter }
            inputs.append(RecorderInput(source: try PcapLiveSource(device: udp.device, options: options), role: .ingestUDP, ingestPort: udp.port))
            parts.append("UDP on \(udp.device)\(udp.port.map { ":\($0)" } ?? "")")
        }
        if let tcp = request.mqttTCP {
            let source = try PcapLiveSource(device: tcp.device, options: PcapLiveSource.Options(filter: "tcp port \(tcp.port)"))
            inputs.append(.mqttTCP(source, port: tcp.port))
            parts.append("MQTT over TCP on \(tcp.device):\(tcp.port)")
        }
        if let appGroup = request.appGroup {
            inputs.append(RecorderInput(source: try AppGroupSource(folder: appGroup), role: .appGroup))
            parts.append("App Group \(appGroup)")
        }
        var tap: H4Tap?
        var tapInput: Int?
        var warnings: [String] = []
        switch request.ble {
        case .bluez(let adapter)?:
            let monitor = try BlueZMonitorSource()
            inputs.append(RecorderInput(source: adapter.map { MonitorAdapterFilter(monitor, adapter: $0) } ?? monitor, role: .bleMonitor))
            parts.append("BLE from the BlueZ monitor channel (\(adapter.map { "hci\($0)" } ?? "every adapter"))")
        case .tap(let controller, let listen)?:
            let created = H4Tap(listen: listen, controller: controller)
            let port = try created.open()
            tapInput = inputs.count
            inputs.append(created.recorderInput)
            parts.append("BLE through the H4 tap on \(H4ListenAddress(host: listen.host, port: port)) (controller \(controller))")
            if let warning = created.exposureWarning { warnings.append(warning) }
            tap = created
        case nil:
            break
        }
        self.parts = parts
        self.warnings = warnings
        self.tap = tap
        self.tapInput = tapInput
        self.setPath = request.setPath
        hasSources = inputs.contains { $0.source != nil }
        recorder = Recorder(
            setPath: request.setPath, title: request.title ?? parts.joined(separator: " and "),
            description: request.description, inputs: inputs)
    }

    /// Creates the set and starts recording; the tap starts accepting its host.
    /// - Throws: ``LiveCaptureError`` when the set cannot be created or the tap not started (the
    ///   tap is stopped and what was written is sealed).
    public func start() throws(LiveCaptureError) {
        do {
            try recorder.start()
        } catch {
            tap?.stop()
            throw error
        }
        guard let tap, let tapInput else { return }
        tap.record(into: recorder, input: tapInput)
        do {
            try tap.start()
        } catch {
            tap.stop()
            // The set is sealed with what it has; the tap's error is the one to report.
            _ = try? recorder.finish()
            throw error
        }
    }

    /// What the recorder and its sources noticed (a source that needed a fallback, say).
    public var notices: [String] { recorder.notices }
    /// Frames written so far.
    public var framesRecorded: Int { recorder.framesRecorded }

    /// A note on the timeline now (`--mark-stdin`).
    public func mark(_ text: String) { recorder.mark(text) }

    /// Ends the recording: the tap first, so it writes nothing after the recorder has finished.
    /// Safe from any thread, more than once.
    public func stop() {
        tap?.stop()
        recorder.stop()
        stopped.fire()
    }

    /// Records until ``stop()`` (or until a source fails), then seals the set.
    /// - Throws: ``LiveCaptureError`` when a source failed or the set could not be sealed.
    public func run() async throws -> RecordingSummary {
        do {
            if hasSources {
                let summary = try await recorder.run()
                tap?.stop()  // run() also ends when a source fails
                return summary
            }
            // Only the tap writes: wait for the stop, then seal.
            await stopped.wait()
            return try recorder.finish()
        } catch {
            tap?.stop()
            throw error
        }
    }
}

/// Fires once, from any thread; ``wait()`` returns once it has fired (at once if it already has).
///
/// `@unchecked Sendable`: `fired` and `waiter` are read and written under `lock` only.
final class StopSignal: @unchecked Sendable {
    // Thread-safety: both members are guarded by `lock`.
    private let lock = NSLock()
    private var fired = false
    private var waiter: CheckedContinuation<Void, Never>?

    /// Wakes the waiter; later calls do nothing.
    func fire() {
        let waiting = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            fired = true
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    /// Returns once ``fire()`` was called. One waiter at a time.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = lock.withLock { () -> Bool in
                if fired { return true }
                waiter = continuation
                return false
            }
            if already { continuation.resume() }
        }
    }
}
