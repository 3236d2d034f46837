/// The pairing features one side of an LE pairing offered: the parameters of a Pairing Request
/// (Core v6.0 Vol 3 Part H §3.5.1) or Pairing Response (§3.5.2), in their order on the air.
public struct SMPPairingFeatures: Sendable, Hashable {
    /// IO Capability (§3.5.1 table 3.4): 0 DisplayOnly, 1 DisplayYesNo, 2 KeyboardOnly,
    /// 3 NoInputNoOutput, 4 KeyboardDisplay.
    public var ioCapability: UInt8
    /// OOB Data Flag: 1 when the side has out-of-band data of the other.
    public var oobDataFlag: UInt8
    /// AuthReq: Bonding_Flags (bits 0–1), MITM (bit 2), SC (bit 3), Keypress (bit 4), CT2 (bit 5).
    public var authReq: UInt8
    /// Maximum Encryption Key Size, 7–16 octets.
    public var maximumEncryptionKeySize: UInt8
    /// Initiator Key Distribution: the keys the central will distribute.
    public var initiatorKeyDistribution: UInt8
    /// Responder Key Distribution: the keys the peripheral will distribute.
    public var responderKeyDistribution: UInt8

    /// The size of the parameters after the SMP code.
    public static let parameterLength = 6

    /// Reads the six parameters that follow a Pairing Request's or Response's code; `nil` when
    /// fewer are there (more are tolerated: a future field must not make a capture unreadable).
    public init?(parameters: [UInt8]) {
        guard parameters.count >= Self.parameterLength else { return nil }
        ioCapability = parameters[0]
        oobDataFlag = parameters[1]
        authReq = parameters[2]
        maximumEncryptionKeySize = parameters[3]
        initiatorKeyDistribution = parameters[4]
        responderKeyDistribution = parameters[5]
    }

    /// The features from their fields (tests, and the plan handed to the bridge).
    public init(ioCapability: UInt8, oobDataFlag: UInt8 = 0, authReq: UInt8, maximumEncryptionKeySize: UInt8 = 16,
                initiatorKeyDistribution: UInt8 = 0, responderKeyDistribution: UInt8 = 0) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authReq = authReq
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }

    /// Bonding_Flags = 01: the side asked to bond (store the keys).
    public var bonding: Bool { authReq & 0x03 == 0x01 }
    /// The MITM flag: the side asked for an authenticated (not Just Works) pairing.
    public var mitm: Bool { authReq & 0x04 != 0 }
    /// The SC flag: the side supports LE Secure Connections. Pairing is LE Secure Connections only
    /// when both sides set it (§2.3.5.6.1); otherwise it is LE legacy pairing.
    public var secureConnections: Bool { authReq & 0x08 != 0 }

    /// The IO capability's name in the specification.
    public var ioCapabilityName: String { Self.ioCapabilityName(ioCapability) }

    /// The name of IO capability `value` (§3.5.1 table 3.4).
    public static func ioCapabilityName(_ value: UInt8) -> String {
        switch value {
        case 0x00: "DisplayOnly"
        case 0x01: "DisplayYesNo"
        case 0x02: "KeyboardOnly"
        case 0x03: "NoInputNoOutput"
        case 0x04: "KeyboardDisplay"
        default: "reserved IO capability 0x\(String(value, radix: 16))"
        }
    }
}

/// Which LE pairing a connection did (Core v6.0 Vol 3 Part H §2.3).
public enum PairingKind: String, Sendable, Hashable {
    /// LE legacy pairing: at least one side cleared the SC flag.
    case legacy = "legacy pairing"
    /// LE Secure Connections: both sides set the SC flag.
    case secureConnections = "LE Secure Connections"
}

/// A pairing the capture holds: the central's Pairing Request, the peripheral's Pairing Response.
public struct RecordedPairing: Sendable, Hashable {
    /// 0-based ordinal of the connection it happened on.
    public var connection: Int
    /// The Pairing Request's frame.
    public var frame: Int
    /// What the central (the initiator) offered.
    public var request: SMPPairingFeatures
    /// What the peripheral (the responder) answered, `nil` when the capture does not show it.
    public var response: SMPPairingFeatures?
    /// The Pairing Failed reason (§3.5.5 table 3.7), when either side ended the pairing.
    public var failedReason: UInt8?

    /// A pairing; see the properties.
    public init(connection: Int, frame: Int, request: SMPPairingFeatures, response: SMPPairingFeatures? = nil, failedReason: UInt8? = nil) {
        self.connection = connection
        self.frame = frame
        self.request = request
        self.response = response
        self.failedReason = failedReason
    }

    /// The pairing the two sides agreed on; `nil` without the peripheral's response.
    public var kind: PairingKind? {
        guard let response else { return nil }
        return request.secureConnections && response.secureConnections ? .secureConnections : .legacy
    }

    /// The association model the IO capabilities select (§2.3.5.1, tables 2.6–2.8): `Just Works`,
    /// `Passkey Entry`, `Numeric Comparison` or `Out of Band`; `nil` without the response.
    public var associationModel: String? {
        guard let response, let kind else { return nil }
        let oob = kind == .legacy ? request.oobDataFlag == 1 && response.oobDataFlag == 1 : request.oobDataFlag == 1 || response.oobDataFlag == 1
        if oob { return "Out of Band" }
        // Neither side asked for MITM protection: Just Works whatever the IO capabilities.
        if !request.mitm && !response.mitm { return "Just Works" }
        let initiator = request.ioCapability
        let responder = response.ioCapability
        // Reserved values are treated as NoInputNoOutput (§3.5.1): nothing to enter or show.
        guard initiator <= 4, responder <= 4, initiator != 3, responder != 3 else { return "Just Works" }
        let displayOnly: UInt8 = 0, yesNo: UInt8 = 1, keyboardOnly: UInt8 = 2, keyboardDisplay: UInt8 = 4
        if initiator == keyboardOnly || responder == keyboardOnly { return "Passkey Entry" }
        if initiator == displayOnly || responder == displayOnly {
            // DisplayOnly against DisplayOnly or DisplayYesNo has nothing to enter.
            let other = initiator == displayOnly ? responder : initiator
            return other == keyboardDisplay ? "Passkey Entry" : "Just Works"
        }
        // Both of DisplayYesNo and KeyboardDisplay.
        if kind == .secureConnections { return "Numeric Comparison" }
        return initiator == yesNo && responder == yesNo ? "Just Works" : "Passkey Entry"
    }
}

/// A Security Request the peripheral sent (Core v6.0 Vol 3 Part H §3.6.7): it asked the central to
/// pair (or to encrypt with the keys of an earlier bond).
public struct RecordedSecurityRequest: Sendable, Hashable {
    /// 0-based ordinal of the connection.
    public var connection: Int
    /// Its frame in the capture.
    public var frame: Int
    /// Nanoseconds after the connection came up (its LE Connection Complete event; the
    /// connection's first frame when the capture began inside it).
    public var delayNs: Int64
    /// Its AuthReq (the bits of ``SMPPairingFeatures/authReq``).
    public var authReq: UInt8

    /// A Security Request; see the properties.
    public init(connection: Int, frame: Int, delayNs: Int64, authReq: UInt8) {
        self.connection = connection
        self.frame = frame
        self.delayNs = delayNs
        self.authReq = authReq
    }
}

/// The peripheral acting as GATT client on a connection: the discovery of the central's own GATT
/// database it made (Read By Group Type, Read By Type, Find Information, Find By Type Value
/// Requests sent by the peripheral).
public struct RecordedCentralDiscovery: Sendable, Hashable {
    /// 0-based ordinal of the connection.
    public var connection: Int
    /// The frame of its first request.
    public var frame: Int
    /// Nanoseconds from the connection coming up to the first request.
    public var delayNs: Int64
    /// The requests it sent, by ATT opcode (0x04, 0x06, 0x08, 0x10).
    public var requests: [UInt8: Int]

    /// A discovery; see the properties.
    public init(connection: Int, frame: Int, delayNs: Int64, requests: [UInt8: Int]) {
        self.connection = connection
        self.frame = frame
        self.delayNs = delayNs
        self.requests = requests
    }

    /// ATT requests that discover a GATT database (Core v6.0 Vol 3 Part G §4.4–§4.7).
    public static let discoveryOpcodes: Set<UInt8> = [0x04, 0x06, 0x08, 0x10]

    /// Whether it discovered services (Read By Group Type or Find By Type Value).
    public var services: Bool { requests[0x10] != nil || requests[0x06] != nil }
    /// Whether it discovered characteristics (Read By Type).
    public var characteristics: Bool { requests[0x08] != nil }
    /// Whether it discovered descriptors (Find Information).
    public var descriptors: Bool { requests[0x04] != nil }
    /// How many requests it sent.
    public var requestCount: Int { requests.values.reduce(0, +) }
}

/// What the recorded peripheral did of its own accord on one connection, which the emulator does
/// again on the matching live connection.
public struct PeripheralInitiative: Sendable, Hashable {
    /// The Security Request it sent, if it sent one.
    public var securityRequest: RecordedSecurityRequest?
    /// Its discovery of the central's database, if it made one.
    public var centralDiscovery: RecordedCentralDiscovery?

    /// An initiative; see the properties.
    public init(securityRequest: RecordedSecurityRequest? = nil, centralDiscovery: RecordedCentralDiscovery? = nil) {
        self.securityRequest = securityRequest
        self.centralDiscovery = centralDiscovery
    }

    /// Nothing done unasked.
    public var isEmpty: Bool { securityRequest == nil && centralDiscovery == nil }
}

/// The pairing the emulator offers a central: the peripheral's side of the recorded pairing.
public struct PairingOffer: Sendable, Hashable {
    /// Legacy pairing when the recording paired that way, else LE Secure Connections.
    public var kind: PairingKind
    /// The peripheral's IO capability as recorded (NoInputNoOutput without a recorded pairing).
    public var ioCapability: UInt8
    /// Whether the peripheral asked to bond.
    public var bonding: Bool
    /// Whether the peripheral asked for MITM protection.
    public var mitm: Bool
    /// Where it comes from, for the terminal (`frame 12: legacy pairing, Just Works …`).
    public var source: String

    /// An offer; see the properties.
    public init(kind: PairingKind, ioCapability: UInt8, bonding: Bool, mitm: Bool, source: String) {
        self.kind = kind
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.mitm = mitm
        self.source = source
    }

    /// What the emulator offered before pairing was read from captures, and still offers when the
    /// capture holds no pairing: LE Secure Connections, Just Works, bonding.
    public static let acceptAnything = PairingOffer(kind: .secureConnections, ioCapability: 0x03, bonding: true, mitm: false,
                                                   source: "no pairing in the capture: any pairing the central asks for is accepted")

    /// The peripheral's side of the first pairing of the capture that shows the peripheral's
    /// response; ``acceptAnything`` when there is none.
    public static func offer(for pairings: [RecordedPairing]) -> PairingOffer {
        guard let recorded = pairings.first(where: { $0.response != nil }), let response = recorded.response, let kind = recorded.kind else {
            return .acceptAnything
        }
        let every = pairings.filter { $0.kind != nil }
        let again = every.count > 1 ? ", \(every.count) pairings in the capture" : ""
        let mixed = Set(every.compactMap(\.kind)).count > 1 ? " (the capture holds both kinds; the first is offered)" : ""
        return PairingOffer(kind: kind, ioCapability: response.ioCapability, bonding: response.bonding, mitm: response.mitm,
                            source: "frame \(recorded.frame): \(kind.rawValue), \(recorded.associationModel ?? "?"), "
                                + "peripheral \(response.ioCapabilityName)\(response.bonding ? ", bonding" : "")\(again)\(mixed)")
    }
}
