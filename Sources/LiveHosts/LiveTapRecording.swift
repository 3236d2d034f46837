import CaptureKit
import CaptureSet
import Foundation
import LiveCapture

/// The recording side of a live BLE host: an H4 tap between the host's bridge and its controller,
/// and a recorder writing every HCI packet (link type 201) and every API-call record (link type
/// 147, an `api-calls` interface) on one timeline into a new capture set. Used by
/// `tether live messaging --record` and `tether live session --record`.
///
/// The tap waits for the bridge on a Unix socket in a ``PrivateSocketDirectory``, serves only a
/// process this one started (the bridge), and exactly one: no other process can take the bridge's
/// place during its start-up and have its packets recorded as the host's (a loopback TCP port would
/// let any local process in first).
public final class LiveTapRecording {
    /// The set being written.
    public let setPath: String
    /// The Bumble transport the host's bridge must use instead of the controller's: the tap's
    /// socket, `unix:PATH`.
    public let hostTransport: String
    /// Where the host writes its API-call records.
    public let apiCalls: APICallRecording
    private let tap: H4Tap
    private let recorder: Recorder
    private let sockets: PrivateSocketDirectory
    private var cleanupNotices: [String] = []

    /// Starts the recorder and the tap in front of `transport` (`tcp-client:HOST:PORT` or
    /// `serial:PATH[,BAUD]`).
    public init(setPath: String, title: String, description: String, transport: String, apiDescription: String,
                devices: [ManifestDevice] = []) throws(LiveCaptureError) {
        let controller = try LiveMessagingTransport.controller(for: transport)
        let sockets = try PrivateSocketDirectory()
        let socketPath = sockets.socketPath("hci.sock")
        let tap = H4Tap(endpoint: .unixSocket(path: socketPath), controller: controller, options: H4Tap.Options(exactlyOneHost: true, onlyChildProcesses: true))
        let apiInterface = CaptureInterface(linkType: .user0, name: "api-calls", description: apiDescription, snapLength: 262_144, nanosecondsPerTick: 1)
        let recorder = Recorder(setPath: setPath, title: title, description: description, devices: devices,
                                inputs: [tap.recorderInput, RecorderInput(interface: apiInterface, role: .apiCalls)])
        do throws(LiveCaptureError) {
            try recorder.start()
            tap.record(into: recorder, input: 0)
            try tap.start()
            hostTransport = "unix:\(socketPath)"
        } catch {
            tap.stop()
            // The error to report is the tap's; a folder left behind is named in the message.
            do throws(LiveCaptureError) {
                try sockets.remove()
            } catch let removal {
                throw LiveCaptureError(kind: error.kind, source: error.source, step: error.step, detail: error.detail, hint: error.hint + " (Also: \(removal))")
            }
            throw error
        }
        self.sockets = sockets
        self.setPath = setPath
        self.tap = tap
        self.recorder = recorder
        self.apiCalls = RecorderAPICalls(recorder: recorder, input: 1)
    }

    /// The tap's notices (host connected, refused or gone, controller gone, framing errors), and
    /// a private socket folder that could not be removed.
    public var notices: [String] { tap.notices + cleanupNotices }

    /// Stops the tap and removes its socket folder (noting a failure: the run's outcome does not
    /// depend on it).
    private func stopTap() {
        tap.stop()
        do throws(LiveCaptureError) {
            try sockets.remove()
        } catch {
            cleanupNotices.append(error.description)
        }
    }

    /// Stops the tap and seals what was recorded; used when the run failed (its error is the one
    /// to report, so a sealing error is only appended to it).
    public func abandon() -> String {
        stopTap()
        do throws(LiveCaptureError) {
            _ = try recorder.finish()
            return "what was recorded is sealed in \(setPath)"
        } catch {
            return "sealing what was recorded in \(setPath) failed too: \(error)"
        }
    }

    /// Stops the tap, seals the set, lets `complete` add what replay must know to the manifest,
    /// and returns the summary and the capture's first frame time (the trace's zero).
    public func finish(complete: (inout CaptureSetManifest) -> Void) throws(LiveMessagingError) -> (summary: RecordingSummary, zeroNs: Int64?) {
        stopTap()
        let summary: RecordingSummary
        do throws(LiveCaptureError) {
            summary = try recorder.finish()
        } catch {
            throw LiveMessagingError(description: error.description)
        }
        do throws(CaptureSetError) {
            var manifest = try CaptureSetDirectory.load(setPath, verify: false).manifest
            complete(&manifest)
            try CaptureSetDirectory.saveManifest(manifest, to: setPath)
        } catch {
            throw LiveMessagingError(description: "the recording in \(setPath) is sealed, but its manifest could not be completed: \(error)")
        }
        do throws(CaptureError) {
            return (summary, try LiveMessagingTransport.firstFrameTimestamp(summary.capturePath))
        } catch {
            throw LiveMessagingError(description: "the recording in \(setPath) cannot be read back: \(error)")
        }
    }
}
