import IngestIntegration
import LiveHosts
import Foundation
import JSONBytes
import IngestCore
import CoreRandom

/// The payload types a simulated plugin sends.
public enum SimulatedPayloadKind: String, Sendable, Hashable, CaseIterable {
    /// Six `float64` entries, like the Motion plugin sample.
    case float64
    /// Six `int64` entries (the float values × 1000, rounded toward zero).
    case int64
    /// Six `vector_3d` entries (value, value / 2, −value).
    case vector3D = "vector_3d"
    /// Six `string` entries (the float value as Swift prints it).
    case string
    /// One of each: `float64`, `int64`, `vector_3d`, `string`, `bytes`, `float64`.
    case mixed
}

/// A kind of bad traffic the simulator can inject, once each, at a position chosen from the seed.
public enum TrafficFault: Sendable, Hashable, CustomStringConvertible {
    /// A datagram that is not JSON at all.
    case notJSON
    /// A data message whose payload is not base64.
    case badBase64
    /// A 10,000-byte datagram, over the 9216-byte limit.
    case oversize
    /// A `float64` entry whose payload is 4 bytes instead of 8.
    case wrongPayloadLength
    /// A data message entry without its `p` member.
    case missingFields
    /// A valid data message, sent right after another, whose sample time is one second earlier.
    case timeBackwards
    /// The plugin stops sending for this long; everything after it is shifted.
    case stall(Duration)

    /// Whether the ingest side is expected to accept the datagram (only ``timeBackwards`` carries
    /// valid data; ``stall(_:)`` sends nothing).
    public var carriesValidData: Bool {
        if case .timeBackwards = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .notJSON: "not-json"
        case .badBase64: "bad-base64"
        case .oversize: "oversize"
        case .wrongPayloadLength: "wrong-payload-length"
        case .missingFields: "missing-fields"
        case .timeBackwards: "time-backwards"
        case .stall(let d): "stall-\(d.components.seconds)s"
        }
    }
}

/// How a simulated plugin behaves. Every output is a pure function of these values.
public struct PluginTrafficConfiguration: Sendable, Hashable {
    /// Data messages per second.
    public var rate: Double
    /// How long the plugin sends; the end message goes out at this offset (plus any stall).
    public var duration: Duration
    /// What the entries carry.
    public var payloadKind: SimulatedPayloadKind
    /// Chooses the signal phases and the fault positions.
    public var seed: UInt64
    /// Wall-clock time of the first sample, nanoseconds since the Unix epoch: the plugin stamps each
    /// sample with `start + offset`, as a real plugin stamps with its NTP-synced clock.
    public var startWallClockNs: Int64
    /// The name message's text.
    public var pluginName: String
    /// Interval of the name message; the first goes out one interval after start, as in the sample.
    public var nameInterval: Duration
    /// Whether to send `{"end": "true"}` at the end.
    public var sendsEndMessage: Bool
    /// Bad traffic to inject.
    public var faults: [TrafficFault]

    /// Defaults: 20 Hz, 10 s, float64, seed 1, name "Plugin Sample" every 10 s, an end message.
    public init(
        rate: Double = 20, duration: Duration = .seconds(10), payloadKind: SimulatedPayloadKind = .float64,
        seed: UInt64 = 1, startWallClockNs: Int64 = 1_674_790_238_000_000_000, pluginName: String = "Plugin Sample",
        nameInterval: Duration = .seconds(10), sendsEndMessage: Bool = true, faults: [TrafficFault] = []
    ) {
        self.rate = rate
        self.duration = duration
        self.payloadKind = payloadKind
        self.seed = seed
        self.startWallClockNs = startWallClockNs
        self.pluginName = pluginName
        self.nameInterval = nameInterval
        self.sendsEndMessage = sendsEndMessage
        self.faults = faults
    }
}

/// One entry of a data message, as the simulator meant it.
public struct SimulatedEntry: Sendable, Hashable {
    /// `n`, e.g. `v1/1/yaw`.
    public var name: String
    /// `t`, e.g. `float64`.
    public var type: String
    /// What the payload encodes.
    public var value: DataValue
    /// The payload bytes before base64.
    public var payload: [UInt8]
}

/// One datagram of the simulated plugin and when to send it.
public struct ScheduledDatagram: Sendable, Hashable {
    /// What the datagram is.
    public enum Kind: Sendable, Hashable {
        /// A data message (the index counts data messages from 0).
        case data(index: Int)
        /// `{"name": …}`.
        case name
        /// `{"end": "true"}`.
        case end
        /// Injected bad traffic.
        case fault(TrafficFault)
    }

    /// Send time, measured from the start of sending.
    public var offset: Duration
    /// The datagram's bytes (UTF-8 JSON, pretty-printed as the sample plugin prints it, except for faults).
    public var bytes: [UInt8]
    /// What it is.
    public var kind: Kind
    /// For data messages (and a time-backwards fault): the sample time the datagram carries,
    /// nanoseconds since the Unix epoch, as the ingest side parses it (100 ns resolution).
    public var sampleTimeNs: Int64?
    /// For data messages (and a time-backwards fault): the entries it carries.
    public var entries: [SimulatedEntry]

    /// Whether the ingest side should accept this datagram's data points.
    public var carriesValidData: Bool {
        switch kind {
        case .data: true
        case .fault(let fault): fault.carriesValidData
        case .name, .end: false
        }
    }

    /// Whether the ingest side should refuse this datagram.
    public var isMalformed: Bool {
        if case .fault(let fault) = kind { return !fault.carriesValidData }
        return false
    }
}

/// A simulated Motion plugin's traffic, as a pure schedule: the same configuration always gives the
/// same datagrams at the same offsets. ``PluginSender`` paces it onto a real socket.
public struct PluginTrafficGenerator: Sendable {
    /// The names the Motion plugin sample sends, in its order.
    public static let entryNames = ["v1/1/yaw", "v1/1/pitch", "v1/1/roll", "v1/1/x", "v1/1/y", "v1/1/z"]
    /// Size of the oversize fault datagram.
    public static let oversizeLength = 10_000

    /// The configuration the schedule comes from.
    public let configuration: PluginTrafficConfiguration

    /// A generator for `configuration`.
    public init(configuration: PluginTrafficConfiguration) {
        self.configuration = configuration
    }

    /// Every datagram in send order, with its offset from the start of sending.
    public func schedule() -> [ScheduledDatagram] {
        let config = configuration
        var rng = SeededRandom(seed: config.seed)
        let phases = (0..<6).map { _ in Double(rng.next() % 3600) / 10 * .pi / 180 }
        let period = config.rate > 0 ? 1 / config.rate : 1
        let durationSeconds = Self.seconds(config.duration)
        let sampleCount = config.rate > 0 ? Int((durationSeconds * config.rate).rounded(.down)) : 0

        // Faults sit after a data message chosen from the seed, never the first or the last.
        var faultsAfter: [Int: [TrafficFault]] = [:]
        for fault in config.faults {
            let position = sampleCount >= 3 ? Int(rng.next() % UInt64(sampleCount - 2)) + 1 : 0
            faultsAfter[position, default: []].append(fault)
        }

        var datagrams: [ScheduledDatagram] = []
        var shift: Duration = .zero
        var nextName = config.nameInterval
        func emitNames(upTo offset: Duration) {
            guard config.nameInterval > .zero else { return }
            while nextName <= offset && nextName <= config.duration {
                datagrams.append(ScheduledDatagram(
                    offset: nextName + shift, bytes: Self.nameMessage(config.pluginName), kind: .name,
                    sampleTimeNs: nil, entries: []))
                nextName += config.nameInterval
            }
        }

        for index in 0..<sampleCount {
            let base = Duration.nanoseconds(Int64((Double(index) * period * 1e9).rounded()))
            emitNames(upTo: base)
            let offset = base + shift
            let timeNs = Self.truncatedTo100ns(config.startWallClockNs &+ Self.nanoseconds(offset))
            let entries = Self.entries(kind: config.payloadKind, seconds: Double(index) * period, phases: phases)
            datagrams.append(ScheduledDatagram(
                offset: offset, bytes: Self.dataMessage(timeNs: timeNs, entries: entries), kind: .data(index: index),
                sampleTimeNs: timeNs, entries: entries))
            for fault in faultsAfter[index] ?? [] {
                switch fault {
                case .stall(let length):
                    shift += length
                case .timeBackwards:
                    let earlier = Self.truncatedTo100ns(timeNs &- 1_000_000_000)
                    datagrams.append(ScheduledDatagram(
                        offset: offset, bytes: Self.dataMessage(timeNs: earlier, entries: entries),
                        kind: .fault(fault), sampleTimeNs: earlier, entries: entries))
                default:
                    datagrams.append(ScheduledDatagram(
                        offset: offset, bytes: Self.faultBytes(fault, timeNs: timeNs), kind: .fault(fault),
                        sampleTimeNs: nil, entries: []))
                }
            }
        }
        emitNames(upTo: config.duration)
        if config.sendsEndMessage {
            datagrams.append(ScheduledDatagram(
                offset: config.duration + shift, bytes: Self.endMessage(), kind: .end, sampleTimeNs: nil, entries: []))
        }
        return datagrams
    }

    // MARK: Values

    /// The float signal of channel `channel` at `seconds` after start: a slow sine per channel,
    /// with the amplitude of an attitude in degrees (yaw, pitch, roll) or a position in metres.
    static func signal(channel: Int, seconds: Double, phases: [Double]) -> Double {
        let amplitudes: [Double] = [180, 90, 45, 2.5, 1.5, 0.75]
        let frequencies: [Double] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7]
        let phase = channel < phases.count ? phases[channel] : 0
        return amplitudes[channel % 6] * sin(2 * .pi * frequencies[channel % 6] * seconds + phase)
    }

    static func entries(kind: SimulatedPayloadKind, seconds: Double, phases: [Double]) -> [SimulatedEntry] {
        entryNames.enumerated().map { channel, name in
            let v = signal(channel: channel, seconds: seconds, phases: phases)
            let type: SimulatedPayloadKind
            if kind == .mixed {
                type = [.float64, .int64, .vector3D, .string, .float64, .float64][channel]
                if channel == 4 {
                    let bytes = Array(String(v).utf8.prefix(8))
                    return SimulatedEntry(name: name, type: "bytes", value: .bytes(bytes), payload: bytes)
                }
            } else {
                type = kind
            }
            switch type {
            case .float64, .mixed:
                return SimulatedEntry(name: name, type: "float64", value: .float64(v), payload: bigEndian(v.bitPattern))
            case .int64:
                let n = Int64(v * 1000)
                return SimulatedEntry(name: name, type: "int64", value: .int64(n), payload: bigEndian(UInt64(bitPattern: n)))
            case .vector3D:
                let (a, b, c) = (v, v / 2, -v)
                return SimulatedEntry(
                    name: name, type: "vector_3d", value: .vector3D(a, b, c),
                    payload: bigEndian(a.bitPattern) + bigEndian(b.bitPattern) + bigEndian(c.bitPattern))
            case .string:
                let text = String(v)
                return SimulatedEntry(name: name, type: "string", value: .string(text), payload: Array(text.utf8))
            }
        }
    }

    // MARK: Messages

    /// A data message, pretty-printed like the sample's `JSONSerialization` output.
    static func dataMessage(timeNs: Int64, entries: [SimulatedEntry]) -> [UInt8] {
        var text = "{\n  \"t\" : \"\(sampleTimeString(timeNs))\",\n  \"d\" : [\n"
        for (i, entry) in entries.enumerated() {
            text += "    {\n      \"n\" : \"\(entry.name)\",\n      \"t\" : \"\(entry.type)\",\n      \"p\" : \"\(Base64Text.encode(entry.payload))\"\n    }"
            text += i + 1 < entries.count ? ",\n" : "\n"
        }
        text += "  ]\n}"
        return Array(text.utf8)
    }

    static func nameMessage(_ name: String) -> [UInt8] {
        Array("{\n  \"name\" : \(JSONStringEscaping.quoted(name))\n}".utf8)
    }

    static func endMessage() -> [UInt8] {
        Array("{\n  \"end\" : \"true\"\n}".utf8)
    }

    static func faultBytes(_ fault: TrafficFault, timeNs: Int64) -> [UInt8] {
        let t = sampleTimeString(timeNs)
        switch fault {
        case .notJSON:
            return Array("this is not JSON {\"t\": \(t)".utf8)
        case .badBase64:
            return Array("{\n  \"t\" : \"\(t)\",\n  \"d\" : [\n    {\n      \"n\" : \"v1/1/x\",\n      \"t\" : \"float64\",\n      \"p\" : \"QF7d*xqf!nc=\"\n    }\n  ]\n}".utf8)
        case .wrongPayloadLength:
            return Array("{\n  \"t\" : \"\(t)\",\n  \"d\" : [\n    {\n      \"n\" : \"v1/1/x\",\n      \"t\" : \"float64\",\n      \"p\" : \"QF7dLw==\"\n    }\n  ]\n}".utf8)
        case .missingFields:
            return Array("{\n  \"t\" : \"\(t)\",\n  \"d\" : [\n    {\n      \"n\" : \"v1/1/x\",\n      \"t\" : \"float64\"\n    }\n  ]\n}".utf8)
        case .oversize:
            // Valid JSON padded with spaces, so only its size is wrong.
            var bytes = Array("{\n  \"name\" : \"oversize\"".utf8)
            bytes += [UInt8](repeating: UInt8(ascii: " "), count: oversizeLength - bytes.count - 1)
            bytes.append(UInt8(ascii: "}"))
            return bytes
        case .timeBackwards, .stall:
            return []
        }
    }

    // MARK: Helpers

    /// `seconds.fffffff`: the sample's `t`, seven fraction digits as a Swift `Double` prints a
    /// typical wall-clock time.
    public static func sampleTimeString(_ timeNs: Int64) -> String {
        let magnitude = timeNs.magnitude
        let seconds = magnitude / 1_000_000_000
        let fraction = String((magnitude % 1_000_000_000) / 100)
        return "\(seconds).\(String(repeating: "0", count: 7 - fraction.count))\(fraction)"
    }

    static func truncatedTo100ns(_ ns: Int64) -> Int64 { ns - ns % 100 }

    static func nanoseconds(_ d: Duration) -> Int64 {
        d.components.seconds &* 1_000_000_000 &+ d.components.attoseconds / 1_000_000_000
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// Standard, padded base64 (RFC 4648 §4), as the sample's `Data.base64EncodedString()` writes it.
enum Base64Text {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }
}
