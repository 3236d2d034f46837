import MessagingIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
import CaptureKit
import CaptureSet
import Foundation
import LiveCapture
import MessagingCore

/// Runs ``MessagingLiveHost`` with `options`, recording it into `recordSet` when given: an H4 tap
/// in front of the phone's controller (the transport must then be `tcp-client:HOST:PORT` or
/// `serial:PATH`) writing every HCI packet, and every API call, with the manifest's `messaging`
/// section (which address is which watch) so `tether replay` replays the run.
public func runLiveMessaging(_ options: MessagingLiveHost.Options, recordSet: String?, title: String? = nil) throws(LiveMessagingError) -> LiveRunOutcome {
    guard let setPath = recordSet else {
        return try LiveRunOutcome.unrecorded { () throws(LiveHostError) in try MessagingLiveHost(options: options).run() }
    }

    let recording: LiveTapRecording
    do throws(LiveCaptureError) {
        recording = try LiveTapRecording(
            setPath: setPath, title: title ?? "Live Connect IQ messaging session", description: "tether live messaging over \(options.transport)",
            transport: options.transport, apiDescription: "Tether: the app's Connect IQ SDK calls, one JSON record per frame",
            devices: options.devices.map { ManifestDevice(name: $0.name, model: $0.model, appIds: []) })
    } catch {
        throw LiveMessagingError(description: error.description)
    }
    var hostOptions = options
    hostOptions.transport = recording.hostTransport
    let host = MessagingLiveHost(options: hostOptions, recording: recording.apiCalls)
    let result: MessagingLiveHost.Result
    do throws(LiveHostError) {
        result = try host.run()
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    // Replay must know which address is which device.
    let section: ManifestSection
    do throws(CaptureSetError) {
        section = try ManifestSection(name: "messaging", encoding: ManifestMessaging(devices: options.devices.map {
            ManifestMessagingDevice(uuid: $0.uuid.description, address: $0.address, name: $0.name, model: $0.model)
        }))
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    let (summary, zeroNs) = try recording.finish { manifest in manifest.setSection(section) }
    return LiveRunOutcome(recorded: result, into: summary, zeroNs: zeroNs, notices: recording.notices)
}

