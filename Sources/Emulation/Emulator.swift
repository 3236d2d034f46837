/// What the emulator does with a request the capture cannot answer (`--on-unknown`).
public enum UnknownRequestPolicy: String, Sendable, CaseIterable {
    /// Accept a write (a Write Response, nothing else); answer a read with an empty value.
    case ignore
    /// Answer with ATT error 0x0E (Unlikely Error).
    case attError = "att-error"
    /// Answer with ATT error 0x0E and end the emulation.
    case end
}

/// Who answered a request.
public enum AnswerSource: String, Sendable, Hashable {
    /// Played back from the capture.
    case capture
    /// Made by a responder (the generic GATT one: CCCD writes and reads; or a protocol-aware one).
    case responder
    /// Nothing in the capture answers it: `--on-unknown` decided.
    case unanswered
}

/// The immediate ATT answer to a request.
public enum ImmediateReply: Sendable, Hashable {
    /// Accept a write (Write Response; nothing for a Write Command).
    case accept
    /// Answer a read with this value.
    case value([UInt8])
    /// Refuse with this ATT error code.
    case error(UInt8)
}

/// The emulator's answer to one request.
public struct EmulatorOutcome: Sendable, Hashable {
    /// The ATT response.
    public var reply: ImmediateReply
    /// Notifications and indications to send afterwards, each at its delay after the request arrived.
    public var answers: [RecordedAnswer]
    /// Who answered.
    public var source: AnswerSource
    /// Whether the emulation ends after this answer (`--on-unknown end`).
    public var endsEmulation: Bool
    /// How the request was matched (`handle+bytes`, `handle+position`), or why it was not.
    public var note: String
    /// The frame of the recorded write that answered it, when one did.
    public var recordedFrame: Int? = nil
}

/// How many requests were answered from the capture, by a responder, or not at all.
public struct EmulationTally: Sendable, Hashable {
    /// Answered from the capture.
    public var fromCapture = 0
    /// Made by a responder.
    public var byResponder = 0
    /// Not answerable from the capture.
    public var unanswered = 0
    /// Of ``fromCapture``, writes matched by handle and position (their bytes differed).
    public var matchedByPosition = 0
    /// Security Requests the emulator sent, as the recorded peripheral did.
    public var securityRequestsSent = 0
    /// Pairings completed with a central.
    public var pairings = 0
    /// Discoveries of a central's GATT database the emulator made, as the recorded peripheral did.
    public var centralDiscoveries = 0
    /// ATT requests those discoveries sent to the central.
    public var centralDiscoveryRequests = 0

    /// An empty tally.
    public init() {}
}

/// The generic responder: plays a capture's answers back to a live central, request by request.
///
/// Sans-I/O: give it each request as it arrives and carry out the returned ``EmulatorOutcome``.
/// A write is matched by handle and bytes — the k-th write of those bytes to that handle gets what
/// followed the k-th such write in the capture (a cursor per request, so the same write answered
/// differently each time plays back in order) — falling back to handle and position (the n-th write
/// to that handle). Reads give the recorded values of that handle in recorded order, the last one
/// again once they run out. Cursors run on across connections, as the recording did, unless
/// `resetPerConnection`.
public struct Emulator: Sendable {
    private struct WriteKey: Hashable {
        var handle: UInt16
        var value: [UInt8]
    }

    /// The script played back.
    public let script: AnswerScript
    /// The database served (its CCCDs get the generic answers).
    public let database: EmulatedDatabase
    /// What to do with a request the capture cannot answer.
    public let policy: UnknownRequestPolicy
    /// Whether each connection starts the script from the beginning.
    public let resetPerConnection: Bool
    /// The session link's handshake responder, when the database serves the session link.
    public let sessionLink: SessionLinkHandshake?
    /// The counts so far.
    public private(set) var tally = EmulationTally()
    /// Connections seen so far.
    public private(set) var connections = 0
    /// What the recorded peripheral did unasked on each recorded connection (by ordinal).
    public let initiatives: [Int: PeripheralInitiative]
    /// What to do unasked on the current connection (set by ``connect()``).
    public private(set) var initiative = PeripheralInitiative()

    private let occurrences: [WriteKey: [Int]]
    private let writesByHandle: [UInt16: [Int]]
    private let cccds: Set<UInt16>
    private var usedByKey: [WriteKey: Int] = [:]
    private var writesSeen: [UInt16: Int] = [:]
    private var readsSeen: [UInt16: Int] = [:]
    private var lastRead: [UInt16: [UInt8]] = [:]
    private var cccdValues: [UInt16: [UInt8]] = [:]
    /// The nonce of the live phone's latest HELLO, gathered from the pieces that carry it (all of
    /// it in one write at a large MTU).
    private var liveNonce: [UInt8?] = Array(repeating: nil, count: 4)

    /// An emulator at the start of `script`.
    /// `sessionLink` answers the session link's handshake (``SessionLinkHandshake``).
    /// `initiatives` are the recorded peripheral's Security Requests and discoveries of the central
    /// (``RecordedPeripheral/initiatives``).
    public init(script: AnswerScript, database: EmulatedDatabase, policy: UnknownRequestPolicy = .ignore, resetPerConnection: Bool = false,
                sessionLink: SessionLinkHandshake? = nil, initiatives: [Int: PeripheralInitiative] = [:]) {
        self.script = script
        self.initiatives = initiatives
        self.database = database
        self.policy = policy
        self.resetPerConnection = resetPerConnection
        self.sessionLink = sessionLink
        var occurrences: [WriteKey: [Int]] = [:]
        var byHandle: [UInt16: [Int]] = [:]
        for (index, write) in script.writes.enumerated() {
            let key = sessionLink?.matchKey(handle: write.handle, value: write.value) ?? write.value
            occurrences[WriteKey(handle: write.handle, value: key), default: []].append(index)
            byHandle[write.handle, default: []].append(index)
        }
        self.occurrences = occurrences
        self.writesByHandle = byHandle
        self.cccds = database.cccdHandles
    }

    /// A central connected: the notifications the peripheral sent on the matching recorded
    /// connection before any write (none past the recorded connections).
    public mutating func connect() -> [RecordedAnswer] {
        if resetPerConnection {
            usedByKey = [:]
            writesSeen = [:]
            readsSeen = [:]
            lastRead = [:]
        }
        let ordinal = resetPerConnection ? 0 : connections
        connections += 1
        cccdValues = [:]
        // Past the recorded connections the peripheral goes on as on its last one: a device that
        // asks to be paired on every connection asks again on the next.
        let recorded = max(script.connections, (initiatives.keys.max() ?? -1) + 1)
        initiative = initiatives[min(ordinal, max(0, recorded - 1))] ?? PeripheralInitiative()
        return script.connectionAnswers[ordinal] ?? []
    }

    /// A Write Request or Write Command of `value` to `handle`.
    public mutating func write(handle: UInt16, value: [UInt8]) -> EmulatorOutcome {
        let key = WriteKey(handle: handle, value: sessionLink?.matchKey(handle: handle, value: value) ?? value)
        let position = writesSeen[handle, default: 0]
        writesSeen[handle] = position + 1
        let used = usedByKey[key, default: 0]
        if let sessionLink {
            for (index, byte) in sessionLink.helloNonceBytes(handle: handle, value: value) { liveNonce[index] = byte }
        }
        if let sessionLink, sessionLink.isHelloPiece(handle: handle, value: value),
           let indices = occurrences[key], used < indices.count {
            // The session link's handshake: the recorded WELCOME, echoing this HELLO's nonce (its
            // pieces that carry the nonce, at a small MTU).
            usedByKey[key] = used + 1
            tally.byResponder += 1
            var outcome = played(script.writes[indices[used]], note: "session-link HELLO, occurrence \(used + 1) of \(indices.count)")
            let nonce = liveNonce.compactMap { $0 }
            if nonce.count == liveNonce.count { outcome.answers = sessionLink.answering(outcome.answers, nonce: nonce) }
            outcome.source = .responder
            return outcome
        }
        if let indices = occurrences[key], used < indices.count {
            usedByKey[key] = used + 1
            tally.fromCapture += 1
            if cccds.contains(handle) { cccdValues[handle] = value }
            return played(script.writes[indices[used]], note: "handle+bytes, occurrence \(used + 1) of \(indices.count)")
        }
        if let indices = writesByHandle[handle], position < indices.count {
            tally.fromCapture += 1
            tally.matchedByPosition += 1
            if cccds.contains(handle) { cccdValues[handle] = value }
            return played(script.writes[indices[position]], note: "handle+position, write \(position + 1) of \(indices.count) to this handle")
        }
        if cccds.contains(handle) {
            cccdValues[handle] = value
            tally.byResponder += 1
            return EmulatorOutcome(reply: .accept, answers: [], source: .responder, endsEmulation: false, note: "CCCD write accepted")
        }
        return unknown("write of \(value.count) bytes to handle 0x\(hex4(handle)) that the capture never answered", ignored: .accept)
    }

    /// A Read Request (`offset` 0) or Read Blob Request of `handle`.
    public mutating func read(handle: UInt16, offset: Int = 0) -> EmulatorOutcome {
        if offset > 0, let value = lastRead[handle] {
            tally.fromCapture += 1
            return EmulatorOutcome(reply: .value(value), answers: [], source: .capture, endsEmulation: false, note: "long read continued")
        }
        if let recorded = script.reads[handle], !recorded.isEmpty {
            let position = readsSeen[handle, default: 0]
            readsSeen[handle] = position + 1
            let read = recorded[min(position, recorded.count - 1)]
            tally.fromCapture += 1
            let note = position < recorded.count ? "read \(position + 1) of \(recorded.count)" : "read \(position + 1): the last recorded value again"
            if let value = read.value {
                lastRead[handle] = value
                return EmulatorOutcome(reply: .value(value), answers: [], source: .capture, endsEmulation: false, note: note)
            }
            return EmulatorOutcome(reply: .error(read.error ?? 0x0E), answers: [], source: .capture, endsEmulation: false, note: note)
        }
        if cccds.contains(handle) {
            tally.byResponder += 1
            return EmulatorOutcome(reply: .value(cccdValues[handle] ?? [0, 0]), answers: [], source: .responder, endsEmulation: false, note: "CCCD read")
        }
        return unknown("read of handle 0x\(hex4(handle)) that the capture never shows", ignored: .value([]))
    }

    /// A request a responder answered (counted only).
    public mutating func countResponderAnswer() { tally.byResponder += 1 }

    /// A Security Request was sent to the central (counted only).
    public mutating func countSecurityRequest() { tally.securityRequestsSent += 1 }

    /// A pairing with the central completed (counted only).
    public mutating func countPairing() { tally.pairings += 1 }

    /// A discovery of the central's database was made with `requests` ATT requests (counted only).
    public mutating func countCentralDiscovery(requests: Int) {
        tally.centralDiscoveries += 1
        tally.centralDiscoveryRequests += max(0, requests)
    }

    private func played(_ write: RecordedWrite, note: String) -> EmulatorOutcome {
        let reply: ImmediateReply = write.error.map { .error($0) } ?? .accept
        return EmulatorOutcome(reply: reply, answers: write.answers, source: .capture, endsEmulation: false, note: note + " (frame \(write.frame))",
                               recordedFrame: write.frame)
    }

    /// A request nothing answers: `ignored` is the reply under the `ignore` policy.
    private mutating func unknown(_ what: String, ignored: ImmediateReply) -> EmulatorOutcome {
        tally.unanswered += 1
        switch policy {
        case .ignore:
            return EmulatorOutcome(reply: ignored, answers: [], source: .unanswered, endsEmulation: false, note: what + "; ignored")
        case .attError:
            return EmulatorOutcome(reply: .error(0x0E), answers: [], source: .unanswered, endsEmulation: false, note: what + "; ATT error 0x0E")
        case .end:
            return EmulatorOutcome(reply: .error(0x0E), answers: [], source: .unanswered, endsEmulation: true, note: what + "; ending the emulation")
        }
    }
}
