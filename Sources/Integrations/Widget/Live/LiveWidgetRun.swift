import WidgetIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
import CaptureKit
import CaptureSet
import Dispatch
import Foundation
import LiveCapture
import WidgetCore

/// The recording side of a live widget host: libpcap on `lo` for the broker's TCP port (role
/// `mqtt-tcp`), inotify on the App Group container (role `app-group`) and the host's API calls
/// (role `api-calls`), on one timeline in a new capture set.
final class LiveWidgetRecording {
    let setPath: String
    let apiCalls: APICallRecording
    private let recorder: Recorder
    private let done = DispatchSemaphore(value: 0)
    private let outcome = RunOutcome()

    /// How the recorder's run ended, set by its task and read by ``finish()``.
    /// `@unchecked Sendable`: both `var`s are read and written only under `lock`.
    final class RunOutcome: @unchecked Sendable {
        let lock = NSLock()
        var failure: (any Error)?
        var summary: RecordingSummary?
    }

    init(setPath: String, title: String, description: String, brokerPort: UInt16, container: String, apiDescription: String) throws(LiveCaptureError) {
        let pcap = try PcapLiveSource(device: "lo", options: PcapLiveSource.Options(filter: "tcp port \(brokerPort)"))
        let appGroup = try AppGroupSource(folder: container)
        let apiInterface = CaptureInterface(linkType: .user0, name: "api-calls", description: apiDescription, snapLength: 262_144, nanosecondsPerTick: 1)
        // The host writes its records at once; libpcap and inotify hand their frames over a little
        // later. The window puts every frame in timestamp order, so a call never lands in the file
        // before the packet it reacted to.
        let recorder = Recorder(setPath: setPath, title: title, description: description, inputs: [
            .mqttTCP(pcap, port: brokerPort), RecorderInput(source: appGroup, role: .appGroup),
            RecorderInput(interface: apiInterface, role: .apiCalls),
        ], reorderWindow: .milliseconds(250))
        try recorder.start()
        self.setPath = setPath
        self.recorder = recorder
        self.apiCalls = RecorderAPICalls(recorder: recorder, input: 2)
        let done = self.done
        let outcome = self.outcome
        Task.detached {
            do {
                let summary = try await recorder.run()
                outcome.lock.withLock { outcome.summary = summary }
            } catch {
                outcome.lock.withLock { outcome.failure = error }
            }
            done.signal()
        }
        // No wait here: the libpcap handle and the inotify watch exist already, and the kernel queues
        // what they see until the reading threads take it.
    }

    /// Stops the sources (after a moment, so the last packets and renames the kernel queued reach
    /// the reading threads, which poll every 100 ms), seals the set and returns its summary and
    /// first frame's time.
    func finish() throws(LiveMessagingError) -> (summary: RecordingSummary, zeroNs: Int64?) {
        Thread.sleep(forTimeInterval: 0.3)
        recorder.stop()
        done.wait()
        let (failure, recorded) = outcome.lock.withLock { (outcome.failure, outcome.summary) }
        if let failure { throw LiveMessagingError(description: "recording into \(setPath) failed: \(failure)") }
        guard let summary = recorded else { throw LiveMessagingError(description: "recording into \(setPath) ended without a summary") }
        do throws(CaptureError) {
            return (summary, try LiveMessagingTransport.firstFrameTimestamp(summary.capturePath))
        } catch {
            throw LiveMessagingError(description: "the recording in \(setPath) cannot be read back: \(error)")
        }
    }
}

/// Runs one process of the widget channel live (``WidgetLiveHost``), recording it into `recordSet`
/// when given: the broker's TCP traffic, the App Group container's changes and this process's API
/// calls, so `tether replay` can replay this process.
public func runLiveWidget(_ options: WidgetLiveHost.Options, recordSet: String?, title: String? = nil) throws(LiveMessagingError) -> LiveRunOutcome {
    guard let setPath = recordSet else {
        return try LiveRunOutcome.unrecorded { () throws(LiveHostError) in try WidgetLiveHost(options: options).run() }
    }
    let recording: LiveWidgetRecording
    do throws(LiveCaptureError) {
        recording = try LiveWidgetRecording(
            setPath: setPath, title: title ?? "Live widget channel, \(options.role) process",
            description: "tether live widget --role \(options.role), broker 127.0.0.1:\(options.brokerPort), App Group \(options.container)",
            brokerPort: options.brokerPort, container: options.container,
            apiDescription: "Tether: the \(options.role) process's widget-channel calls, one JSON record per frame")
    } catch {
        throw LiveMessagingError(description: error.description)
    }
    let result: WidgetLiveHost.Result
    do throws(LiveHostError) {
        result = try WidgetLiveHost(options: options, recording: recording.apiCalls).run()
    } catch {
        let sealing: String
        do throws(LiveMessagingError) {
            _ = try recording.finish()
            sealing = "what was recorded is sealed in \(setPath)"
        } catch {
            sealing = "sealing what was recorded in \(setPath) failed too: \(error)"
        }
        throw LiveMessagingError(description: error.description + " (\(sealing))")
    }
    let (summary, zeroNs) = try recording.finish()
    return LiveRunOutcome(recorded: result, into: summary, zeroNs: zeroNs)
}
