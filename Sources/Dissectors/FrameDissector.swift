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
    private var tcpStreams = TCPReassembler()
    private var mqttTracker = MQTTTracker(ports: [1883])
    private var ipSummaries = true

    /// Whether ``DissectedFrame/tcp`` carries the segment's data (``TCPSegment/payload``); off, its
    /// payload is empty (its length still in the analysis and the MQTT records). Replay turns it
    /// off: it reads the MQTT records only.
    public var retainsTCPPayload: Bool {
        get { ip.copiesTCPPayload }
        set { ip.copiesTCPPayload = newValue }
    }

    /// TCP ports read as MQTT (the broker's side of the connection): 1883 unless told otherwise.
    public var mqttPorts: Set<UInt16> {
        get { mqttTracker.ports }
        set { mqttTracker.ports = newValue }
    }
    /// Handles named by hand (a manifest's `gatt_handles`): used for ATT records whose handle
    /// discovery in the capture did not name.
    public var namedHandles: [UInt16: GATTHandleName] = [:]

    /// Whether ATT PDUs and IP frames get their one-line ``DissectedFrame/summary`` (`tether
    /// inspect` shows it); off, an IP frame's summary is empty. Replay turns it off: it reads the
    /// records, links and datagrams only. Records, datagrams and problems are the same either way.
    public var producesSummaries: Bool {
        get { bluetooth.producesSummaries }
        set {
            bluetooth.producesSummaries = newValue
            ipSummaries = newValue
        }
    }

    /// A dissector with no state.
    public init() {}

    /// A dissector that names `handles` when the capture's own discovery does not.
    public init(namedHandles: [UInt16: GATTHandleName]) {
        self.namedHandles = namedHandles
    }

    /// Dissects one frame of an interface with link type `linkType`.
    public mutating func dissect(_ frame: CaptureFrame, linkType: LinkType) -> DissectedFrame {
        var result = dissectUnnamed(frame, linkType: linkType)
        nameHandles(&result)
        return result
    }

    /// Dissects one frame given as borrowed bytes (a reader's ``CaptureReader/withNextFrame(_:)``
    /// view), with its pcapng `epb_flags` when it has them.
    public mutating func dissect(bytes: UnsafeRawBufferPointer, flags: UInt32? = nil, linkType: LinkType) -> DissectedFrame {
        var result = dissectUnnamed(bytes, flags: flags, linkType: linkType)
        nameHandles(&result)
        return result
    }

    private func nameHandles(_ result: inout DissectedFrame) {
        guard !namedHandles.isEmpty else { return }
        result.updateATTRecords { record in
            guard record.characteristicUUID == nil, let handle = record.handle, let named = namedHandles[handle] else { return }
            record.characteristicUUID = named.characteristic
            record.serviceUUID = named.service
        }
    }

    private mutating func dissectUnnamed(_ frame: CaptureFrame, linkType: LinkType) -> DissectedFrame {
        frame.data.withUnsafeBytes { dissectUnnamed($0, flags: frame.flags, linkType: linkType) }
    }

    private mutating func dissectUnnamed(_ data: UnsafeRawBufferPointer, flags: UInt32?, linkType: LinkType) -> DissectedFrame {
        do {
            if UDPExtractor.handles(linkType) {
                let outcome = ip.dissect(data, linkType: linkType)
                if case .tcp(let segment, let range) = outcome {
                    guard let range else { return segment.payload.withUnsafeBytes { dissectTCP(segment, payload: $0) } }
                    return dissectTCP(segment, payload: UnsafeRawBufferPointer(rebasing: data[range]))
                }
                return ipSummaries ? Self.describe(outcome) : Self.record(outcome)
            }
            if linkType == .user0 {
                return Self.describeAPICall(data)
            }
            if linkType == .user1 {
                return Self.describeAppGroupEvent(data)
            }
            return bluetooth.dissect(data, linkType: linkType, flags: flags)
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

    private mutating func dissectTCP(_ segment: TCPSegment, payload: UnsafeRawBufferPointer) -> DissectedFrame {
        var records: [MQTTRecord] = []
        let client = mqttTracker.clientFlow(segment)
        let flow = TCPFlowKey(segment)
        if let client, segment.flags & TCPSegment.syn != 0 {
            // A new connection (the client's SYN) or the broker's side starting (SYN-ACK): nothing
            // earlier of it carries over.
            mqttTracker.restart(flow, client: client)
        }
        let analysis = tcpStreams.add(segment, payload: payload) { delivery in
            guard let client else { return }
            // A direction joined mid-stream: what was known of it before is stale.
            if delivery.startsStream, segment.flags & TCPSegment.syn == 0 { mqttTracker.restart(delivery.flow, client: client) }
            if delivery.lostBefore > 0 { mqttTracker.abandon(delivery.flow, client: client) }
            mqttTracker.feed(delivery.bytes, flow: delivery.flow, client: client, into: &records)
        }
        if let client, analysis.resetsConnection { mqttTracker.forget(client: client) }
        var problems: [DissectionProblem] = []
        if analysis.lostBytes > 0 {
            problems.append(DissectionProblem(layer: "TCP", kind: .tcpBytesNotCaptured(
                lostBytes: analysis.lostBytes, relativeSequence: analysis.relativeSequence, stopsMQTT: client != nil)))
        }
        // By index: a loop over the records would copy each one.
        for index in records.indices {
            guard let recordProblem = records[index].problem else { continue }
            problems.append(recordProblem)
        }
        let summary = ipSummaries ? Self.summary(segment, payloadLength: payload.count, analysis, records) : ""
        return DissectedFrame(summary: summary, content: .tcp(segment, analysis, mqtt: records), problems: problems)
    }

    static func summary(_ segment: TCPSegment, payloadLength: Int, _ analysis: TCPSegmentAnalysis, _ records: [MQTTRecord]) -> String {
        var tcp = "TCP \(endpoint(segment.sourceAddress, segment.sourcePort)) → \(endpoint(segment.destinationAddress, segment.destinationPort)) \(segment.flagNames) seq \(analysis.relativeSequence) len \(payloadLength)"
        if analysis.isRetransmission { tcp += " (retransmission)" }
        if analysis.isOutOfOrder { tcp += " (out of order)" }
        if analysis.overlapsDeliveredData { tcp += " (overlaps data already seen)" }
        if analysis.lostBytes > 0 { tcp += " (\(analysis.lostBytes) bytes missing before it)" }
        guard !records.isEmpty else { return tcp }
        return "MQTT " + records.map(MQTTSummary.describe).joined(separator: ", ") + " — " + tcp
    }

    /// Tether's API-call records (LINKTYPE_USER0): one JSON object of UTF-8 text per frame.
    static func describeAPICall(_ data: UnsafeRawBufferPointer) -> DissectedFrame {
        guard let text = String(validating: data, as: UTF8.self) else {
            return DissectedFrame(problem: DissectionProblem(layer: "API call record", kind: .notUTF8(byteCount: data.count)))
        }
        let shown = text.count > 160 ? String(text.prefix(157)) + "…" : text
        return DissectedFrame(summary: "API call \(shown)")
    }

    /// Tether's App Group container events (LINKTYPE_USER1): one JSON object of UTF-8 text per frame.
    static func describeAppGroupEvent(_ data: UnsafeRawBufferPointer) -> DissectedFrame {
        guard let text = String(validating: data, as: UTF8.self) else {
            return DissectedFrame(problem: DissectionProblem(layer: "App Group event", kind: .notUTF8(byteCount: data.count)))
        }
        let shown = text.count > 160 ? String(text.prefix(157)) + "…" : text
        return DissectedFrame(summary: "App Group \(shown)")
    }

    static func describe(_ outcome: UDPExtractor.Outcome) -> DissectedFrame {
        switch outcome {
        case .udp(let datagram, let reassembled, _):
            let source = endpoint(datagram.sourceAddress, datagram.sourcePort)
            let destination = endpoint(datagram.destinationAddress, datagram.destinationPort)
            let suffix = reassembled ? " (reassembled)" : ""
            return DissectedFrame(summary: "UDP \(source) → \(destination) \(datagram.payload.count) bytes\(suffix)", content: .udp(datagram))
        case .tcp(let segment, _):
            return DissectedFrame(summary: "TCP \(endpoint(segment.sourceAddress, segment.sourcePort)) → \(endpoint(segment.destinationAddress, segment.destinationPort)) \(segment.flagNames) len \(segment.payload.count)")
        case .fragmentPending(let version, let identification, let offset):
            return DissectedFrame(summary: "IPv\(version) fragment id \(hex(identification, digits: version == 4 ? 4 : 8)) offset \(offset)")
        case .otherTransport(let version, let proto, let source, let destination):
            return DissectedFrame(summary: "IPv\(version) \(IPProtocol.name(proto)) \(source) → \(destination)")
        case .notIP(let name):
            return DissectedFrame(summary: name)
        case .problem(let problem):
            return DissectedFrame(problem: problem)
        }
    }

    /// ``describe(_:)`` without the one-line summary (``producesSummaries`` off): the datagram and
    /// any problem alone. A replay reads nothing else of an IP frame, and writing two endpoints as
    /// text for every datagram was a tenth of an ingest sweep's time.
    static func record(_ outcome: UDPExtractor.Outcome) -> DissectedFrame {
        switch outcome {
        case .udp(let datagram, _, _): DissectedFrame(summary: "", content: .udp(datagram))
        case .problem(let problem): DissectedFrame(problem: problem)
        case .tcp, .fragmentPending, .otherTransport, .notIP: DissectedFrame(summary: "")
        }
    }

    private static func endpoint(_ address: IPAddress, _ port: UInt16) -> String {
        address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
    }
}
