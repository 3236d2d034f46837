#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A synthetic Motion plugin session, as `tether record` would capture it on `lo`: Ethernet frames
/// (zero MAC addresses) carrying IPv4/UDP from 127.0.0.1:50123 to 127.0.0.1:`port`.
///
/// Like the Motion sample: data datagrams at `rateHz`, each with six float64 entries
/// `v1/1/yaw`…`v1/1/z` (pretty-printed JSON, as the sample's JSONSerialization writes it), a name
/// message every 10 s starting 10 s in, and an end message at the end. Send times carry a small
/// deterministic jitter (0–1 ms), so the same spec always gives the same frames.
struct PluginSession: Sequence {
    /// Length of the session in seconds.
    var seconds: Int
    /// Data datagrams per second.
    var rateHz: Int
    /// The destination (ingest) port.
    var port: UInt16
    /// Capture time of the session's start, ns since the Unix epoch.
    var startNs: Int64 = 1_763_769_600_000_000_000 // 2025-11-22T00:00:00Z

    /// Data datagrams in the session.
    var dataCount: Int { seconds * rateHz }
    /// Every frame: data, names and the end.
    var frameCount: Int { dataCount + seconds / 10 + 1 }

    func makeIterator() -> Iterator { Iterator(session: self) }

    /// One captured frame: its timestamp and its bytes under LINKTYPE_ETHERNET.
    struct Frame {
        var timestampNs: Int64
        var bytes: [UInt8]
    }

    struct Iterator: IteratorProtocol {
        let session: PluginSession
        private var dataIndex = 0
        private var namesSent = 0
        private var ended = false
        private var ipID: UInt16 = 0
        private var random: UInt64 = 0x2545_F491_4F6C_DD1D

        init(session: PluginSession) { self.session = session }

        mutating func next() -> Frame? {
            if ended { return nil }
            let periodNs = 1_000_000_000 / Int64(session.rateHz)
            let nextNameNs = session.startNs + Int64(namesSent + 1) * 10_000_000_000
            let endNs = session.startNs + Int64(session.seconds) * 1_000_000_000
            if dataIndex < session.dataCount {
                let dataNs = session.startNs + Int64(dataIndex) * periodNs + jitter()
                if nextNameNs <= dataNs && nextNameNs <= endNs {
                    namesSent += 1
                    undoJitter()
                    return frame(at: nextNameNs, payload: Self.nameMessage)
                }
                dataIndex += 1
                return frame(at: dataNs, payload: dataMessage(sampleNs: dataNs))
            }
            if nextNameNs <= endNs && namesSent < session.seconds / 10 {
                namesSent += 1
                return frame(at: nextNameNs, payload: Self.nameMessage)
            }
            ended = true
            return frame(at: endNs + 1_000_000, payload: Self.endMessage)
        }

        private var lastRandom: UInt64 = 0

        /// 0–1 ms, from a xorshift generator: the same sequence on every run.
        private mutating func jitter() -> Int64 {
            lastRandom = random
            random ^= random << 13
            random ^= random >> 7
            random ^= random << 17
            return Int64(random % 1_000_000)
        }

        /// A name went out instead of the data whose jitter was drawn: draw it again next time.
        private mutating func undoJitter() { random = lastRandom }

        static let nameMessage = Array("{\n  \"name\" : \"Plugin Sample\"\n}".utf8)
        static let endMessage = Array("{\n  \"end\" : \"true\"\n}".utf8)
        static let entryNames = ["yaw", "pitch", "roll", "x", "y", "z"]

        private func dataMessage(sampleNs: Int64) -> [UInt8] {
            let t = Double(sampleNs - session.startNs) / 1e9
            let values = [
                180 * sin(t / 10), 30 * sin(t / 7), 45 * cos(t / 5),
                sin(t), cos(t), 9.80665 + 0.1 * sin(t * 3),
            ]
            var out: [UInt8] = []
            out.reserveCapacity(600)
            out += Array("{\n  \"t\" : \"".utf8)
            out += Array(Self.decimalSeconds(sampleNs).utf8)
            out += Array("\",\n  \"d\" : [\n".utf8)
            for (i, name) in Self.entryNames.enumerated() {
                out += Array("    {\n      \"n\" : \"v1/1/\(name)\",\n      \"t\" : \"float64\",\n      \"p\" : \"".utf8)
                out += base64(bigEndian: values[i].bitPattern)
                out += Array((i < 5 ? "\"\n    },\n" : "\"\n    }\n").utf8)
            }
            out += Array("  ]\n}".utf8)
            return out
        }

        /// Seconds since the epoch with seven decimals, as the sample prints a Swift Double.
        static func decimalSeconds(_ ns: Int64) -> String {
            let fraction = String((ns % 1_000_000_000) / 100)
            return "\(ns / 1_000_000_000)." + String(repeating: "0", count: 7 - fraction.count) + fraction
        }

        private mutating func frame(at timestampNs: Int64, payload: [UInt8]) -> Frame {
            let udpLength = 8 + payload.count
            let ipLength = 20 + udpLength
            var f = [UInt8](repeating: 0, count: 14)
            f[12] = 0x08
            var ip: [UInt8] = [
                0x45, 0, UInt8(ipLength >> 8), UInt8(ipLength & 0xff), UInt8(ipID >> 8), UInt8(ipID & 0xff),
                0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
            ]
            ipID &+= 1
            var sum: UInt32 = 0
            for i in stride(from: 0, to: 20, by: 2) { sum += UInt32(ip[i]) << 8 | UInt32(ip[i + 1]) }
            while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
            let checksum = ~UInt16(sum)
            ip[10] = UInt8(checksum >> 8)
            ip[11] = UInt8(checksum & 0xff)
            f += ip
            let sourcePort: UInt16 = 50123
            f += [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xff), UInt8(session.port >> 8), UInt8(session.port & 0xff),
                  UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0]
            f += payload
            return Frame(timestampNs: timestampNs, bytes: f)
        }
    }
}

/// Standard base64 (with padding) of a 64-bit value's big-endian bytes: an iSCP float64 payload.
func base64(bigEndian value: UInt64) -> [UInt8] {
    withUnsafeBytes(of: value.bigEndian) { Array(Data($0).base64EncodedString().utf8) }
}
