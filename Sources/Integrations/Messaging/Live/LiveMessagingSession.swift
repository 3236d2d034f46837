import MessagingIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
import CaptureKit
import CaptureSet
import Foundation
import LiveCapture
import MessagingCore

/// One `tether live messaging` run: optionally an H4 tap and a recorder in front of the phone's
/// controller, the Bumble bridge, and ``MessagingLiveHost`` running the script.
public struct LiveMessagingRequest {
    /// The phone's controller as a Bumble transport (`tcp-client:127.0.0.1:9002`, `serial:/dev/ttyACM0`, `usb:0`).
    public var transport: String
    /// The watches.
    public var devices: [(uuid: IQUUID, address: String, name: String, model: String)]
    /// The script.
    public var script: LiveScript
    /// Path of `ciq_phone_bridge.py`.
    public var bridgeScript: String
    /// Where the bridge's stderr goes.
    public var bridgeLog: String?
    /// When set, a new capture set is recorded there: every HCI packet through an H4 tap (the
    /// transport must then be `tcp-client:HOST:PORT` or `serial:PATH`), and every API call.
    public var recordSet: String?
    /// The set's title.
    public var title: String = "Live Connect IQ messaging session"
    /// MessagingCore settings.
    public var configuration: MessagingConfiguration = .init()
    /// Seed for encryption keys (`nil`: the system's generator).
    public var keySeed: UInt64?
    /// Live progress lines.
    public var log: (String) -> Void = { _ in }
    /// The app's own code in the loop instead of the script (``MessagingLiveHost/Options/app``).
    public var app: LiveAppLoop?

    /// A request; see the properties.
    public init(transport: String, devices: [(uuid: IQUUID, address: String, name: String, model: String)], script: LiveScript, bridgeScript: String) {
        self.transport = transport
        self.devices = devices
        self.script = script
        self.bridgeScript = bridgeScript
    }
}

/// What a live run produced.
public struct LiveMessagingOutcome {
    /// The behaviour trace; `t_ns` counts from the recording's first frame when recording, else
    /// from the run's start.
    public var trace: [TraceEvent]
    /// Steps that could not run.
    public var failedSteps: [String]
    /// The sealed recording, when one was made.
    public var recording: RecordingSummary?
    /// The tap's notices (host or controller gone, framing errors).
    public var notices: [String]
}

/// Runs a live messaging session; see ``LiveMessagingRequest``.
public func runLiveMessaging(_ request: LiveMessagingRequest) throws(LiveMessagingError) -> LiveMessagingOutcome {
    var options = MessagingLiveHost.Options(transport: request.transport, devices: request.devices, script: request.script, bridgeScript: request.bridgeScript)
    options.bridgeLog = request.bridgeLog
    options.configuration = request.configuration
    options.keySeed = request.keySeed
    options.log = request.log
    options.app = request.app

    guard let setPath = request.recordSet else {
        let host = MessagingLiveHost(options: options)
        let startNs = MessagingLiveHost.realtimeNs()
        do throws(LiveHostError) {
            let result = try host.run()
            return LiveMessagingOutcome(trace: MessagingLiveHost.trace(result, zeroNs: startNs), failedSteps: result.failedSteps, recording: nil, notices: [])
        } catch {
            throw LiveMessagingError(description: error.description)
        }
    }

    let recording: LiveTapRecording
    do throws(LiveCaptureError) {
        recording = try LiveTapRecording(
            setPath: setPath, title: request.title, description: "tether live messaging over \(request.transport)",
            transport: request.transport, apiDescription: "Tether: the app's Connect IQ SDK calls, one JSON record per frame",
            devices: request.devices.map { ManifestDevice(name: $0.name, model: $0.model, appIds: []) })
    } catch {
        throw LiveMessagingError(description: error.description)
    }
    options.transport = recording.hostTransport
    let host = MessagingLiveHost(options: options, recording: recording.apiCalls)
    let result: MessagingLiveHost.Result
    do throws(LiveHostError) {
        result = try host.run()
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    // Replay must know which address is which device.
    let section: ManifestSection
    do throws(CaptureSetError) {
        section = try ManifestSection(name: "messaging", encoding: ManifestMessaging(devices: request.devices.map {
            ManifestMessagingDevice(uuid: $0.uuid.description, address: $0.address, name: $0.name, model: $0.model)
        }))
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    let (summary, zeroNs) = try recording.finish { manifest in manifest.setSection(section) }
    return LiveMessagingOutcome(
        trace: MessagingLiveHost.trace(result, zeroNs: zeroNs ?? result.events.first?.realtimeNs ?? 0), failedSteps: result.failedSteps,
        recording: summary, notices: recording.notices)
}

