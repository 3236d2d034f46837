import SessionIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
import CaptureSet
import Foundation
import LiveCapture
import SessionCore

/// Runs one side of a live session (``SessionLiveHost``), recording it into `recordSet` when given:
/// an H4 tap in front of the side's controller and its API calls, with the manifest's `session`
/// section (role, identity, paired peer) so `tether replay` replays this side.
/// `settings` are the overrides the host ran with, written to the manifest so replay uses them too.
public func runLiveSession(_ options: SessionLiveHost.Options, recordSet: String?, title: String? = nil,
                           settings: SessionOverrides? = nil) throws(LiveMessagingError) -> LiveRunOutcome {
    guard let setPath = recordSet else {
        return try LiveRunOutcome.unrecorded { () throws(LiveHostError) in try SessionLiveHost(options: options).run() }
    }
    let recording: LiveTapRecording
    do throws(LiveCaptureError) {
        recording = try LiveTapRecording(
            setPath: setPath, title: title ?? "Live session, \(options.role) side",
            description: "tether live session --role \(options.role) over \(options.transport)",
            transport: options.transport, apiDescription: "Tether: the \(options.role) app's WatchConnectivity calls and host facts, one JSON record per frame")
    } catch {
        throw LiveMessagingError(description: error.description)
    }
    var hostOptions = options
    hostOptions.transport = recording.hostTransport
    let result: SessionLiveHost.Result
    do throws(LiveHostError) {
        result = try SessionLiveHost(options: hostOptions, recording: recording.apiCalls).run()
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    let section: ManifestSection
    do throws(CaptureSetError) {
        section = try ManifestSection(name: "session", encoding: ManifestSession(
            role: options.role.rawValue, identity: options.identity.description, pairedPeer: options.pairedPeer.description, settings: settings))
    } catch {
        throw LiveMessagingError(description: error.description + " (\(recording.abandon()))")
    }
    let (summary, zeroNs) = try recording.finish { manifest in
        manifest.setSection(section)
        for index in manifest.interfaces.indices where manifest.interfaces[index].role == .bleHCI {
            manifest.interfaces[index].core = "session"
        }
    }
    return LiveRunOutcome(recorded: result, into: summary, zeroNs: zeroNs, notices: recording.notices)
}
