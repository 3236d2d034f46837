@testable import IngestCore
import TetherTestSupport

/// A fixed sender, as the sample plugin on the same phone would be.
let plugin = DatagramSource(address: "127.0.0.1", port: 50_000)
/// A second sender, for tests with two streams.
let otherPlugin = DatagramSource(address: "::1", port: 50_001)

/// Big-endian IEEE 754 bytes of `value`, as the sample's `Double.toData()` writes them.
func float64Bytes(_ value: Double) -> [UInt8] {
    let bits = value.bitPattern
    return (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64($0))) }
}

/// A data message as the sample plugin builds it: pretty-printed, with the trailing comma the
/// sample's string-building code leaves before `]`.
func sampleDataMessage(time: String, entries: [(name: String, type: String, payload: [UInt8])]) -> [UInt8] {
    var text = "{\n  \"t\": \"\(time)\",\n  \"d\": ["
    for entry in entries {
        text += "\n    {\n      \"n\": \"\(entry.name)\",\n      \"t\": \"\(entry.type)\",\n      \"p\": \"\(Base64.encode(entry.payload))\"\n    },"
    }
    text += "\n  ]\n}"
    return Array(text.utf8)
}

/// A compact data message of float64 entries.
func floatMessage(time: String, _ values: [(String, Double)]) -> [UInt8] {
    let entries = values.map { "{\"n\":\"\($0.0)\",\"t\":\"float64\",\"p\":\"\(Base64.encode(float64Bytes($0.1)))\"}" }
    return Array("{\"t\":\"\(time)\",\"d\":[\(entries.joined(separator: ","))]}".utf8)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

func ms(_ value: Int) -> Duration { .milliseconds(value) }

/// The points of every `dataPoint` event.
func points(_ events: [IngestEvent]) -> [DataPoint] {
    events.compactMap { if case .dataPoint(let point) = $0 { point } else { nil } }
}

/// The chunks of every `chunkReady` event.
func chunks(_ events: [IngestEvent]) -> [IngestChunk] {
    events.compactMap { if case .chunkReady(let chunk) = $0 { chunk } else { nil } }
}

/// The reasons of every `rejected` event.
func rejections(_ events: [IngestEvent]) -> [RejectionReason] {
    events.compactMap { if case .rejected(_, let reason, _) = $0 { reason } else { nil } }
}

