import Dissectors
import HeartRateCore
import ReplayKit

/// Replays the phone's side of a Heart Rate strap connection into ``HeartRateClient``.
///
/// Inputs, each at its captured instant: the app's calls (the section's `api_calls`, records of an
/// `api-calls` interface naming `heart_rate`, or calls a test schedules); from the phone's HCI,
/// the strap's notifications, Read and Write Responses and the Error Responses to reads and
/// writes (discovery's own answers are not the core's), and the link going down.
///
/// Outputs: every request the core makes is written as its ATT PDU and compared, in order, with
/// the reads and writes the phone sent in the capture (``FrameMatcher``: `frame_matched`,
/// `frame_diverged`); every event becomes a `heart_rate` trace event with the core's name and
/// fields.
public struct HeartRateAdapter: CoreAdapter {
    /// `heart_rate`.
    public let core = HeartRateTrace.core
    /// The adapter reads ATT records.
    public var dissectsFrames: Bool { true }
    /// The core under test.
    public private(set) var client: HeartRateClient
    private let handles: HeartRateHandles
    private var calls: [HeartRateSection.Call]
    private var nextCall = 0
    private var matcher: FrameMatcher
    private let matching: FrameMatchingMode
    private var counts = (calls: 0, notifications: 0, requests: 0)

    /// The ATT opcodes of the requests a Heart Rate client makes: Read Request, Write Request,
    /// Write Command. The phone's other requests (discovery, MTU) are its stack's, not the core's.
    static let clientRequestOpcodes: Set<ATTOpcode> = [.readRequest, .writeRequest, .writeCommand]

    /// An adapter around a fresh client.
    public init(configuration: HeartRateConfiguration, handles: HeartRateHandles, calls: [HeartRateSection.Call], matching: FrameMatchingMode) {
        client = HeartRateClient(configuration: configuration)
        self.handles = handles
        self.calls = calls.enumerated().sorted { ($0.element.tNs, $0.offset) < ($1.element.tNs, $1.offset) }.map(\.element)
        self.matching = matching
        matcher = FrameMatcher(core: HeartRateTrace.core, decode: Self.describe)
    }

    /// API-call records raw; BLE interfaces dissected.
    public func input(for interface: ReplayInterface) -> ReplayInput { .bleCore(for: interface) }

    /// The adapter keeps no faults (the engine applies them to the frames it feeds), so a fault
    /// sweep may fork a copy of it with another variant's faults instead of replaying the
    /// capture from its first frame.
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool { true }

    /// The next section call, or the core's own timer.
    public var nextDeadline: Duration? {
        let call = nextCall < calls.count ? Duration.nanoseconds(calls[nextCall].tNs) : nil
        switch (call, client.nextDeadline) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b): return b
        }
    }

    /// One frame: an API-call record, or HCI.
    public mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        if frame.interface.carriesAPICalls {
            switch frame.apiCallRecord() {
            case .parsed(let record):
                // One `api-calls` interface may carry several cores' records: another core's
                // are not this one's to read (a record without `core` is taken as this core's).
                if let named = record["core"], named != .string(core.text) { return [] }
                guard case .string(let name)? = record["call"] else {
                    return [event(.apiRecordMalformed, now, ["frame": .int(Int64(frame.number)), "detail": .string("no \"call\"")])]
                }
                return call(name, now: now)
            case .malformed(let detail):
                return [event(.apiRecordMalformed, now, ["frame": .int(Int64(frame.number)), "detail": .string(detail)])]
            }
        }
        guard let dissected = frame.dissected else { return [] }
        var events: [TraceEvent] = []
        for record in dissected.att {
            if record.direction == .sent {
                guard Self.clientRequestOpcodes.contains(record.opcode), let handle = record.handle, matching != .off else { continue }
                events += matcher.captured(Self.pdu(record.opcode.rawValue, handle, record.value), channel: "strap", frame: frame.number, timeNs: now.replayNanoseconds)
                continue
            }
            switch record.pdu {
            case .handleValueNotification(let handle, let value):
                counts.notifications += 1
                events += perform(client.notification(handle: handle, value: value, now: now), now: now)
            case .writeResponse:
                events += perform(client.writeResponse(now: now), now: now)
            case .readResponse(let value):
                events += perform(client.readResponse(value: value, now: now), now: now)
            case .errorResponse(let request, let handle, let code):
                guard Self.clientRequestOpcodes.contains(request) else { continue }
                events += perform(client.errorResponse(requestOpcode: request.rawValue, handle: handle, code: code.rawValue, now: now), now: now)
            default:
                continue
            }
        }
        if case .disconnected(_, let reason)? = dissected.linkChange {
            events.append(event(HeartRateTrace.linkDown, now, ["reason": .int(Int64(reason))]))
            events += perform(client.disconnected(now: now), now: now)
            events += matcher.linkDown(channel: "strap", timeNs: now.replayNanoseconds)
        }
        return events
    }

    /// Section calls due now, then the core's timer.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        while nextCall < calls.count, Duration.nanoseconds(calls[nextCall].tNs) <= now {
            let name = calls[nextCall].call
            nextCall += 1
            events += call(name, now: now)
        }
        if let deadline = client.nextDeadline, deadline <= now {
            events += perform(client.timeout(now: now), now: now)
        }
        return events
    }

    /// Unpaired requests, then a `summary`.
    public mutating func finish(now: Duration) -> [TraceEvent] {
        var events = matching == .off ? [] : matcher.finish(timeNs: now.replayNanoseconds)
        events.append(event(.summary, now, [
            "api_calls": .int(Int64(counts.calls)), "notifications": .int(Int64(counts.notifications)),
            "requests": .int(Int64(counts.requests)), "frames_matched": .int(Int64(matcher.matched)),
            "frames_diverged": .int(Int64(matcher.diverged)),
        ]))
        return events
    }

    // MARK: calls and outputs

    private mutating func call(_ name: String, now: Duration) -> [TraceEvent] {
        counts.calls += 1
        var events = [event(.apiCall, now, ["call": .string(name)])]
        switch name {
        case "start": events += perform(client.start(handles: handles, now: now), now: now)
        case "reset_energy_expended": events += perform(client.resetEnergyExpended(now: now), now: now)
        case "read_sensor_location": events += perform(client.readSensorLocation(now: now), now: now)
        default: events.append(event(.apiRecordMalformed, now, ["detail": .string("unknown call \"\(name)\"")]))
        }
        return events
    }

    private mutating func perform(_ outputs: [HeartRateOutput], now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for output in outputs {
            switch output {
            case .request(let request):
                counts.requests += 1
                let value: [UInt8]
                if case .write(_, let bytes) = request { value = bytes } else { value = [] }
                let pdu = Self.pdu(request.attOpcode, request.handle, value)
                if matching == .off {
                    events.append(FrameMatcher.emittedEvent(core: core, channel: "strap", bytes: pdu, packet: Self.describe(pdu), timeNs: now.replayNanoseconds))
                } else {
                    events += matcher.emitted(pdu, channel: "strap", timeNs: now.replayNanoseconds)
                }
            case .event(let heartRateEvent):
                var fields: [String: TraceValue] = [:]
                for (key, value) in heartRateEvent.fields { fields[key] = Self.traceValue(value) }
                events.append(event(HeartRateTrace.name(of: heartRateEvent), now, fields))
            }
        }
        return events
    }

    private func event(_ name: TraceName, _ now: Duration, _ fields: [String: TraceValue]) -> TraceEvent {
        TraceEvent(timeNs: now.replayNanoseconds, core: core, event: name, fields: fields)
    }

    static func traceValue(_ value: HeartRateFieldValue) -> TraceValue {
        switch value {
        case .int(let i): .int(Int64(i))
        case .double(let d): .double(d)
        case .bool(let b): .bool(b)
        case .string(let s): .string(s)
        case .ints(let list): .array(list.map { .int(Int64($0)) })
        }
    }

    /// An ATT request PDU: opcode, handle (little-endian), value.
    static func pdu(_ opcode: UInt8, _ handle: UInt16, _ value: [UInt8]) -> [UInt8] {
        [opcode, UInt8(handle & 0xFF), UInt8(handle >> 8)] + value
    }

    /// `Write Request 0x0016 01 00`, for frame-matching reports.
    @Sendable static func describe(_ pdu: [UInt8]) -> String {
        guard pdu.count >= 3 else { return "ATT " + pdu.map { String($0, radix: 16) }.joined(separator: " ") }
        let handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        let name = switch pdu[0] {
        case 0x0A: "Read Request"
        case 0x12: "Write Request"
        case 0x52: "Write Command"
        default: "ATT 0x" + String(pdu[0], radix: 16)
        }
        let hex = "0x" + String(repeating: "0", count: max(0, 4 - String(handle, radix: 16).count)) + String(handle, radix: 16)
        let value = pdu.dropFirst(3).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
        return value.isEmpty ? "\(name) \(hex)" : "\(name) \(hex) \(value)"
    }
}
