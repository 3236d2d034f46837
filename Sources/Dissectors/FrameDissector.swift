import CaptureKit

/// Dissects captured frames into one-line summaries, ATT records and UDP datagrams.
///
/// Stateful across frames: IP fragments, ACL fragments, outstanding ATT requests and each
/// connection's GATT database are carried from frame to frame, so feed one capture's frames in
/// order to one dissector. All state is bounded. Bluetooth link types: 187, 201, 254. IP link
/// types: 0, 1, 101, 108, 113, 228, 229, 276. Any other link type gets a summary and a problem saying
/// it is not dissected. Bad bytes never trap: they become ``DissectedFrame/problem``.
public struct FrameDissector: Sendable {
    private var ip = UDPExtractor()
    private var bluetooth = BluetoothDissector()
    /// Handles named by hand (a manifest's `gatt_handles`): used for ATT records whose handle
    /// discovery in the capture did not name.
    public var namedHandles: [UInt16: (service: String?, characteristic: String)] = [:]

    /// Whether ATT PDUs get their one-line ``DissectedFrame/summary`` (`tether inspect` shows it).
    /// Replay turns it off: it reads the records, links and datagrams only. Records are the same either way.
    public var producesSummaries: Bool {
        get { bluetooth.att.producesSummaries }
        set { bluetooth.att.producesSummaries = newValue }
    }

    /// A dissector with no state.
    public init() {}

    /// A dissector that names `handles` when the capture's own discovery does not.
    public init(namedHandles: [UInt16: (service: String?, characteristic: String)]) {
        self.namedHandles = namedHandles
    }

    /// Dissects one frame of an interface with link type `linkType`.
    public mutating func dissect(_ frame: CaptureFrame, linkType: LinkType) -> DissectedFrame {
        var result = dissectUnnamed(frame, linkType: linkType)
        if !namedHandles.isEmpty {
            for i in result.att.indices where result.att[i].characteristicUUID == nil {
                guard let handle = result.att[i].handle, let named = namedHandles[handle] else { continue }
                result.att[i].characteristicUUID = named.characteristic.lowercased()
                result.att[i].serviceUUID = named.service?.lowercased()
            }
        }
        return result
    }

    private mutating func dissectUnnamed(_ frame: CaptureFrame, linkType: LinkType) -> DissectedFrame {
        frame.data.withUnsafeBytes { data in
            if UDPExtractor.handles(linkType) {
                return Self.describe(ip.dissect(data, linkType: linkType))
            }
            if linkType == .user0 {
                return Self.describeAPICall(data)
            }
            return bluetooth.dissect(data, linkType: linkType, flags: frame.flags)
        }
    }

    /// What GATT discovery so far told about a connection's handles, or `nil` when nothing was seen
    /// (or the connection was disconnected). `adapter` is the BlueZ monitor index (0 for H4).
    public func gattDatabase(connectionHandle: UInt16, adapter: UInt16 = 0) -> GATTDatabase? {
        bluetooth.att.databases[ConnectionKey(adapter: adapter, handle: connectionHandle)]
    }

    /// Gives a connection a GATT database when the capture holds no discovery (for example built
    /// from the handles a manifest names). Discovery seen later adds to it; Disconnection Complete
    /// forgets it, as it forgets discovered ones.
    public mutating func setGATTDatabase(_ database: GATTDatabase, connectionHandle: UInt16, adapter: UInt16 = 0) {
        bluetooth.att.setDatabase(database, for: ConnectionKey(adapter: adapter, handle: connectionHandle))
    }

    /// Tether's API-call records (LINKTYPE_USER0): one JSON object of UTF-8 text per frame.
    static func describeAPICall(_ data: UnsafeRawBufferPointer) -> DissectedFrame {
        guard let text = String(validating: data, as: UTF8.self) else {
            return DissectedFrame(problem: "API call record: expected UTF-8 JSON text, found \(data.count) bytes that are not UTF-8")
        }
        let shown = text.count > 160 ? String(text.prefix(157)) + "…" : text
        return DissectedFrame(summary: "API call \(shown)")
    }

    static func describe(_ outcome: UDPExtractor.Outcome) -> DissectedFrame {
        switch outcome {
        case .udp(let datagram, let reassembled):
            let source = endpoint(datagram.sourceAddress, datagram.sourcePort)
            let destination = endpoint(datagram.destinationAddress, datagram.destinationPort)
            let suffix = reassembled ? " (reassembled)" : ""
            return DissectedFrame(summary: "UDP \(source) → \(destination) \(datagram.payload.count) bytes\(suffix)", udp: datagram)
        case .fragmentPending(let version, let identification, let offset):
            return DissectedFrame(summary: "IPv\(version) fragment id \(hex(identification, digits: version == 4 ? 4 : 8)) offset \(offset)")
        case .otherTransport(let version, let proto, let source, let destination):
            return DissectedFrame(summary: "IPv\(version) \(IPProtocol.name(proto)) \(source) → \(destination)")
        case .notIP(let name):
            return DissectedFrame(summary: name)
        case .problem(let problem):
            return DissectedFrame(problem: problem.description)
        }
    }

    private static func endpoint(_ address: IPAddress, _ port: UInt16) -> String {
        address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
    }
}
