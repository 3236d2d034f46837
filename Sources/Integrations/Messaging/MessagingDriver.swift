import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import MessagingCore
import MonkeyC

/// Applies one API call to a core: the `api_call` trace event, the call, and an `api_error` event
/// instead when the core refuses it (a caller error: the core's state is unchanged). Used by replay
/// and by the live host, so both turn a call into the same events.
public enum MessagingDriver {
    /// The core's actions and the trace events of the call itself.
    public static func apply(_ call: MessagingAPICall, to core: inout MessagingCore, now: Duration) -> (actions: [MessagingAction], events: [TraceEvent]) {
        let timeNs = now.replayNanoseconds
        var fields = call.record
        var actions: [MessagingAction] = []
        func error(_ text: String) -> (actions: [MessagingAction], events: [TraceEvent]) {
            fields["error"] = .string(text)
            return ([], [TraceEvent(timeNs: timeNs, core: MessagingTrace.core, event: .apiError, fields: fields)])
        }
        func uuid(_ text: String, _ what: String) -> IQUUID? { IQUUID(text) }
        do throws(MessagingAPIError) {
            switch call {
            case .deviceList(let url):
                actions = try core.handleDeviceSelectionURL(url, now: now)
            case .bindDevice:
                break
            case .bluetoothState(let ready):
                actions = core.bluetoothStateChanged(ready: ready, now: now)
            case .registerDevice(let device):
                guard let id = uuid(device, "device") else { return error("device \(device) is not a UUID") }
                actions = try core.registerForDeviceEvents(id, now: now)
            case .unregisterDevice(let device):
                guard let id = uuid(device, "device") else { return error("device \(device) is not a UUID") }
                actions = try core.unregisterForDeviceEvents(id, now: now)
            case .unregisterAllDevices:
                actions = core.unregisterForAllDeviceEvents(now: now)
            case .registerApp(let app, let device, let listener):
                guard let target = iqApp(app, device) else { return error("app \(app) or device \(device) is not a UUID") }
                actions = try core.registerForAppMessages(target, listener: ListenerID(rawValue: UInt64(listener)), now: now)
            case .unregisterApp(let app, let device, let listener):
                guard let target = iqApp(app, device) else { return error("app \(app) or device \(device) is not a UUID") }
                actions = try core.unregisterForAppMessages(target, listener: ListenerID(rawValue: UInt64(listener)), now: now)
            case .appStatus(let app, let device):
                guard let target = iqApp(app, device) else { return error("app \(app) or device \(device) is not a UUID") }
                let (request, result) = try core.getAppStatus(target, now: now)
                fields["request"] = .int(Int64(request.rawValue))
                actions = result
            case .send(let app, let device, let message):
                guard let target = iqApp(app, device) else { return error("app \(app) or device \(device) is not a UUID") }
                let (send, result) = try core.sendMessage(message, to: target, now: now)
                fields["send"] = .int(Int64(send.rawValue))
                actions = result
            case .openApp(let app, let device):
                guard let target = iqApp(app, device) else { return error("app \(app) or device \(device) is not a UUID") }
                let (request, result) = try core.openApp(target, now: now)
                fields["request"] = .int(Int64(request.rawValue))
                actions = result
            }
        } catch let refusal {
            return error(refusal.description)
        }
        return (actions, [TraceEvent(timeNs: timeNs, core: MessagingTrace.core, event: .apiCall, fields: fields)])
    }

    private static func iqApp(_ app: String, _ device: String) -> IQApp? {
        guard let appID = IQUUID(app), let deviceID = IQUUID(device) else { return nil }
        return IQApp(uuid: appID, device: deviceID)
    }
}

extension MessagingCore: ReplayedCore {
    /// Applies `call` through ``MessagingDriver``, as replay and the live host do.
    public mutating func apply(_ call: MessagingAPICall, now: Duration) -> (actions: [MessagingAction], events: [TraceEvent]) {
        MessagingDriver.apply(call, to: &self, now: now)
    }
}
