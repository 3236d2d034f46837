import CaptureKit
import Dissectors
import MQTT

/// The MQTT layer: client ids, user names and passwords of the CONNECT packets a capture holds,
/// and the client ids MQTT 5 brokers assign in CONNACK.
///
/// Finding them reuses Tether's own dissection (``FrameDissector``: TCP reassembly per direction,
/// MQTT framing and decoding), so a CONNECT split over segments or sent after a retransmission is
/// found as `tether inspect` finds it. Rewriting then replaces each value, the same length, in the
/// byte stream of each direction of the connections to the broker ports (the segments put back
/// together by sequence number, so a value split over two segments is found), wherever it stands
/// as an MQTT string (after its own length) or as a word (a topic
/// `tether/{account}/api/request/{client id}`), so sequence numbers and lengths stay valid. The
/// TCP checksum is updated by ``IPRedaction``.
enum MQTTRedaction {
    /// Registers the CONNECT fields of every MQTT connection in `frames`.
    static func discover(_ frames: [CaptureFrame], interfaces: [CaptureInterface], ports: Set<UInt16>, into map: inout RedactionMap) {
        var dissector = FrameDissector()
        dissector.mqttPorts = ports
        dissector.producesSummaries = false
        dissector.retainsTCPPayload = false
        for frame in frames {
            guard frame.interfaceIndex < interfaces.count else { continue }
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard IPRedaction.reads(linkType) else { continue }
            let dissected = dissector.dissect(frame, linkType: linkType)
            for record in dissected.mqtt {
                switch record.packet?.body {
                case .connect(let connect)? where record.fromClient:
                    map.string(.clientID, Array(connect.clientID.utf8))
                    if let username = connect.username { map.string(.username, Array(username.utf8)) }
                    if let password = connect.password { map.string(.password, password) }
                case .connack(_, _, let properties)? where !record.fromClient:
                    // MQTT 5 §3.2.2.3.7: the client id a broker assigns to a CONNECT without one.
                    for case .assignedClientIdentifier(let id) in properties { map.string(.clientID, Array(id.utf8)) }
                default:
                    continue
                }
            }
        }
    }

    /// Whether a segment between these ports belongs to an MQTT connection.
    static func isMQTT(sourcePort: UInt16, destinationPort: UInt16, ports: Set<UInt16>) -> Bool {
        ports.contains(sourcePort) || ports.contains(destinationPort)
    }

    /// Replaces the registered MQTT values in one TCP payload; returns the count per kind.
    static func rewrite(_ d: inout [UInt8], payload: Range<Int>, map: RedactionMap) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        guard !payload.isEmpty else { return counts }
        for kind in [RedactedKind.clientID, .username, .password, .account] {
            var bytes = Array(d[payload])
            let n = ByteSubstitution.apply(map.substitutions(of: [kind], raw: true), to: &bytes)
            guard n > 0, bytes.count == payload.count else { continue }
            d.replaceSubrange(payload, with: bytes)
            counts[kind, default: 0] += n
        }
        return counts
    }

    /// What the stream rewrite changes: per frame (by index in the frame list), the bytes to
    /// write at offsets of the frame; and the replacements per kind.
    struct StreamEdits {
        var edits: [Int: [(offset: Int, byte: UInt8)]] = [:]
        var counts: [RedactedKind: Int] = [:]
    }

    private struct Flow: Hashable {
        var source: [UInt8]
        var destination: [UInt8]
        var sourcePort: UInt16
        var destinationPort: UInt16
    }

    private struct Segment {
        var frame: Int
        var payload: Range<Int>
        /// Where the payload starts in its direction's stream, from the first segment seen.
        var position: Int
    }

    /// Replaces the registered MQTT values in the byte stream of each direction of every
    /// connection to a broker port. Segments are placed by sequence number (relative to the first
    /// one seen, so a capture without the SYN works too); overlapping ones (retransmissions) agree
    /// or the later wins for the search, and each segment gets only the changes of bytes it holds
    /// as the stream does. Memory is bounded by the payload bytes captured.
    static func streamEdits(_ frames: [CaptureFrame], interfaces: [CaptureInterface], ports: Set<UInt16>, map: RedactionMap) -> StreamEdits {
        var result = StreamEdits()
        let substitutions = [RedactedKind.clientID, .username, .password, .account].map { ($0, map.substitutions(of: [$0], raw: true)) }
            .filter { !$0.1.isEmpty }
        guard !substitutions.isEmpty else { return result }
        var flows: [Flow: [Segment]] = [:]
        var bases: [Flow: UInt32] = [:]
        for (index, frame) in frames.enumerated() where frame.interfaceIndex < interfaces.count {
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard IPRedaction.reads(linkType), let layout = IPRedaction.layout(frame.data, linkType: linkType),
                  let tcp = IPRedaction.tcpPayload(frame.data, layout), !tcp.range.isEmpty,
                  isMQTT(sourcePort: tcp.sourcePort, destinationPort: tcp.destinationPort, ports: ports),
                  let (t, _) = layout.transport else { continue }
            let d = frame.data
            let sequence = UInt32(d[t + 4]) << 24 | UInt32(d[t + 5]) << 16 | UInt32(d[t + 6]) << 8 | UInt32(d[t + 7])
            let addresses = layout.addressOffsets.map { Array(d[$0..<($0 + layout.addressLength)]) }
            guard addresses.count == 2 else { continue }
            let flow = Flow(source: addresses[0], destination: addresses[1], sourcePort: tcp.sourcePort, destinationPort: tcp.destinationPort)
            let base = bases[flow] ?? sequence
            bases[flow] = base
            // Signed distance from the first segment, modulo 2^32 (a retransmission may come before it).
            let position = Int(Int32(bitPattern: sequence &- base))
            flows[flow, default: []].append(Segment(frame: index, payload: tcp.range, position: position))
        }
        for (_, segments) in flows {
            // Runs of overlapping or adjacent segments, each searched as one stretch of the stream.
            let ordered = segments.sorted { $0.position < $1.position }
            var runs: [[Segment]] = []
            var runEnd = Int.min
            for segment in ordered {
                if runs.isEmpty || segment.position > runEnd {
                    runs.append([segment])
                } else {
                    runs[runs.count - 1].append(segment)
                }
                runEnd = max(runEnd, segment.position + segment.payload.count)
            }
            for run in runs {
                let start = run.map(\.position).min() ?? 0
                let end = run.map { $0.position + $0.payload.count }.max() ?? start
                var stream = [UInt8](repeating: 0, count: end - start)
                for segment in run.sorted(by: { $0.frame < $1.frame }) {
                    let at = segment.position - start
                    stream.replaceSubrange(at..<(at + segment.payload.count), with: frames[segment.frame].data[segment.payload])
                }
                var replaced = stream
                for (kind, group) in substitutions {
                    let n = ByteSubstitution.apply(group, to: &replaced)
                    if n > 0 { result.counts[kind, default: 0] += n }
                }
                guard replaced.count == stream.count, replaced != stream else { continue }
                for segment in run {
                    let data = frames[segment.frame].data
                    for k in 0..<segment.payload.count {
                        let i = segment.position - start + k
                        let offset = segment.payload.lowerBound + k
                        if replaced[i] != stream[i], data[offset] == stream[i] {
                            result.edits[segment.frame, default: []].append((offset, replaced[i]))
                        }
                    }
                }
            }
        }
        return result
    }
}
