import Dissectors

/// One ATT PDU of the capture, with which side sent it.
public struct RecordedPDU: Sendable, Hashable {
    /// 1-based frame number in the capture (for messages).
    public var frame: Int
    /// Capture time in nanoseconds.
    public var timeNs: Int64
    /// 0-based ordinal of the LE connection it travelled on, counting connections in capture order.
    public var connection: Int
    /// `true` when the GATT client (the central using the peripheral's database) sent it.
    public var fromClient: Bool
    /// The ATT opcode.
    public var opcode: UInt8
    /// The attribute handle, for PDUs that carry one.
    public var handle: UInt16?
    /// The PDU's value (or its parameters after the opcode and handle).
    public var value: [UInt8]

    /// A PDU; see the properties.
    public init(frame: Int, timeNs: Int64, connection: Int, fromClient: Bool, opcode: UInt8, handle: UInt16?, value: [UInt8]) {
        self.frame = frame
        self.timeNs = timeNs
        self.connection = connection
        self.fromClient = fromClient
        self.opcode = opcode
        self.handle = handle
        self.value = value
    }
}

/// What the capture tells about the peripheral to stand in for: its ATT traffic, its GATT database
/// as discovery showed it, and how it advertised.
public struct RecordedPeripheral: Sendable {
    /// Every ATT PDU of every connection, in capture order.
    public var pdus: [RecordedPDU]
    /// The union of what GATT discovery told on every connection.
    public var discovered: GATTDatabase
    /// The frame whose discovery response first told of each handle (a service's start, a
    /// characteristic's declaration or value, a typed attribute), for warnings about the database.
    public var discoveryFrames: [UInt16: Int] = [:]
    /// Handles named by the manifest (`gatt_handles`): value handle → (service, characteristic).
    public var namedHandles: [UInt16: GATTHandleName]
    /// The peripheral's address as the central saw it (`F0:F1:F2:F3:F4:F5`), when the capture shows a connection.
    public var address: String?
    /// The local name from its advertising reports or scan responses, when the capture holds one.
    public var name: String?
    /// Service UUIDs listed in its advertising, in the order first seen.
    public var advertisedServices: [BluetoothUUID]
    /// Readable notes on what was inferred or left out (printed by `tether emulate`).
    public var notes: [String]
    /// Whether the capture was taken on the central's side (the usual phone btsnoop): then a
    /// recorded delay between a request and its answers includes the link's round trip.
    public var recordedAtCentral = false
    /// Every Security Request the peripheral sent, in capture order.
    public var securityRequests: [RecordedSecurityRequest] = []
    /// Every pairing the capture shows (Pairing Request and, when captured, Response), in order.
    public var pairings: [RecordedPairing] = []
    /// The peripheral's discoveries of the central's GATT database, one per connection that had one.
    public var centralDiscoveries: [RecordedCentralDiscovery] = []
    /// Every advertising report and scan response of the capture (every advertiser's), in order,
    /// times since the capture's first frame.
    public var advertisements: [RecordedAdvertisement] = []
    /// Every LE connection, in order, times since the capture's first frame.
    public var connections: [RecordedConnection] = []
    /// The capture's first frame's timestamp (Unix nanoseconds): where those times count from.
    public var captureStartNs: Int64 = 0

    /// What the peripheral did unasked on each connection (by ordinal), for the emulator to do again.
    public var initiatives: [Int: PeripheralInitiative] {
        var byConnection: [Int: PeripheralInitiative] = [:]
        for request in securityRequests where byConnection[request.connection]?.securityRequest == nil {
            byConnection[request.connection, default: PeripheralInitiative()].securityRequest = request
        }
        for discovery in centralDiscoveries { byConnection[discovery.connection, default: PeripheralInitiative()].centralDiscovery = discovery }
        return byConnection
    }

    /// A peripheral; see the properties.
    public init(pdus: [RecordedPDU], discovered: GATTDatabase = GATTDatabase(),
                namedHandles: [UInt16: GATTHandleName] = [:],
                address: String? = nil, name: String? = nil, advertisedServices: [BluetoothUUID] = [], notes: [String] = []) {
        self.pdus = pdus
        self.discovered = discovered
        self.namedHandles = namedHandles
        self.address = address
        self.name = name
        self.advertisedServices = advertisedServices
        self.notes = notes
    }
}

/// ATT opcodes by who sends them (Core v6.0 Vol 3 Part F §3.4.8).
enum ATTRole {
    /// Requests and commands only a client sends (MTU Request excepted: either side may start it).
    static let clientOnly: Set<UInt8> = [0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x1E, 0x20, 0x52, 0xD2]
    /// Responses, notifications and indications only a server sends.
    static let serverOnly: Set<UInt8> = [0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x1B, 0x1D, 0x21, 0x23]
    /// Reads and writes of attribute values: what the central using the peripheral's database does,
    /// and a peripheral discovering the central's database does not.
    static let dataAccess: Set<UInt8> = [0x0A, 0x0C, 0x0E, 0x12, 0x16, 0x18, 0x20, 0x52, 0xD2]
}
