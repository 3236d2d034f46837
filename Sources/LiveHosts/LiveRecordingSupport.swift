import BehaviourTrace
import CaptureKit
import CaptureSet
import LiveCapture

// What every core's live host shares when it records: the error a live run reports, where its
// API calls go, and the transports the H4 tap can sit in front of.

/// Why a live run (messaging, session, widget) could not be done.
public struct LiveMessagingError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public var description: String

    /// An error with its sentence.
    public init(description: String) { self.description = description }
}

/// Where a live host's API calls go besides the core: a recording's `api-calls` interface.
public protocol APICallRecording: AnyObject {
    /// Records one API-call record (its JSON text) at `timestampNs` (CLOCK_REALTIME).
    func recordAPICall(_ json: String, timestampNs: Int64) throws
}

extension APICallRecording {
    /// Records one API-call record, or says in the live run's terms why it could not.
    public func record(apiCall json: String, timestampNs: Int64) throws(LiveHostError) {
        do {
            try recordAPICall(json, timestampNs: timestampNs)
        } catch {
            throw LiveHostError(target: "recording", step: "write API call", detail: "\(error)", hint: "Check free disk space.")
        }
    }
}

/// What a live run of any core produced.
public struct LiveRunResult: Sendable {
    /// The trace, with CLOCK_REALTIME stamps (a host's `trace(zeroNs:)` makes them relative).
    public var events: [(realtimeNs: Int64, event: TraceEvent)]
    /// Steps that could not run, as sentences (also `step_failed` trace events).
    public var failedSteps: [String]

    /// A run's trace and its failed steps.
    public init(events: [(realtimeNs: Int64, event: TraceEvent)], failedSteps: [String]) {
        self.events = events
        self.failedSteps = failedSteps
    }
}

/// Writes API-call records into a recorder input.
public final class RecorderAPICalls: APICallRecording {
    let recorder: Recorder
    let input: Int

    /// Records into `input` of `recorder`.
    public init(recorder: Recorder, input: Int) {
        self.recorder = recorder
        self.input = input
    }

    /// One record as one frame of the `api-calls` interface.
    public func recordAPICall(_ json: String, timestampNs: Int64) throws {
        let bytes = Array(json.utf8)
        // A typed-throws closure here crashes Swift 6.3's IR generation; carry the error out instead.
        var failure: LiveCaptureError?
        bytes.withUnsafeBytes { raw in
            do throws(LiveCaptureError) {
                try recorder.write(LiveFrameView(timestampNs: timestampNs, originalLength: raw.count, data: raw), input: input)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }
}

/// Transport strings and capture facts the live session needs.
public enum LiveMessagingTransport {
    /// The H4 tap's controller for a Bumble transport string: `tcp-client:HOST:PORT` or
    /// `serial:PATH[,BAUD]`. Other transports (`usb:0`) cannot be tapped.
    public static func controller(for transport: String) throws(LiveCaptureError) -> H4ControllerAddress {
        if transport.hasPrefix("tcp-client:") {
            let rest = transport.dropFirst("tcp-client:".count)
            if let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]), port > 0 {
                return .tcp(host: String(rest[..<colon]), port: port)
            }
        } else if transport.hasPrefix("serial:") {
            let spec = transport.dropFirst("serial:".count).split(separator: ",")
            if let path = spec.first {
                let baud = spec.count > 1 ? Int(spec[1]) ?? H4ControllerAddress.defaultBaudRate : H4ControllerAddress.defaultBaudRate
                return .serial(path: String(path), baudRate: baud, flowControl: true)
            }
        }
        throw LiveCaptureError(
            kind: .misuse, source: transport, step: "parse --hci",
            detail: "recording needs the controller as tcp-client:HOST:PORT or serial:PATH[,BAUD], got \(transport)",
            hint: "Record through the H4 tap with a TCP or serial controller; for a USB dongle record with btmon and `tether import`.")
    }

    /// The capture file's first frame timestamp (ns since the epoch), or `nil` when it has none.
    public static func firstFrameTimestamp(_ capturePath: String) throws(CaptureError) -> Int64? {
        try CaptureFile.open(path: capturePath).next()?.timestampNs
    }
}
