import MonkeyC
import MonkeyCTrace
import SessionCore
import Testing

@testable import BehaviourTrace
@testable import SessionIntegration

/// Every `session` event holds the core's own value as its fields (``SessionEventFields``): every
/// way of reading, writing, comparing or digesting it must be that of the dictionary
/// docs/trace-format.md lists for it, or a committed baseline would change.
@Suite struct SessionEventFieldsTests {
    static let peer = SessionDeviceID(bytes: Array(0x10..<0x20))!
    static let value = MonkeyCValue.dictionary([
        MonkeyCPair(.string("steps"), .int32(4_200)), MonkeyCPair(.string("big"), .int64(7)),
        MonkeyCPair(.string("note \"quoted\""), .string("ü")),
    ])
    static let refused = SessionError(.messageReplyFailed, "no reply within 5 s")
    static let bytes: [UInt8] = [0x00, 0x7F, 0xFF]

    /// A core event, and the fields docs/trace-format.md gives its line.
    static let cases: [(SessionEvent, [String: TraceValue])] = [
        (.activationDidComplete(.activated, error: nil), ["state": .string("activated"), "code": .null]),
        (.activationDidComplete(.notActivated, error: refused),
         ["state": .string("notActivated"), "code": .int(Int64(refused.code.rawValue)), "error": .string(refused.code.name)]),
        (.sessionDidBecomeInactive, [:]),
        (.sessionDidDeactivate, [:]),
        (.watchStateDidChange(isPaired: true, isWatchAppInstalled: false, isComplicationEnabled: true),
         ["paired": .bool(true), "installed": .bool(false), "complication": .bool(true)]),
        (.reachabilityDidChange(true), ["reachable": .bool(true)]),
        (.handshakeCompleted(peer: peer, peerEpoch: 3, peerIncarnation: 9),
         ["peer": .string(peer.description), "peer_epoch": .int(3), "peer_incarnation": .int(9)]),
        (.peerReinstalled(peer), ["peer": .string(peer.description)]),
        (.didReceiveApplicationContext(value), ["value": MonkeyCJSON.traceValue(value)]),
        (.applicationContextUnchanged, [:]),
        (.applicationContextFailed(refused), ["code": .int(Int64(refused.code.rawValue)), "error": .string(refused.code.name)]),
        (.didReceiveMessage(SessionMessageID(rawValue: 4), value, expectsReply: true),
         ["id": .int(4), "value": MonkeyCJSON.traceValue(value), "expects_reply": .bool(true)]),
        (.didReceiveMessageData(SessionMessageID(rawValue: 5), bytes, expectsReply: false),
         ["id": .int(5), "data": .string("007fff"), "expects_reply": .bool(false)]),
        (.messageDelivered(SessionMessageID(rawValue: 6)), ["id": .int(6)]),
        (.didReceiveReply(SessionMessageID(rawValue: 7), value), ["id": .int(7), "value": MonkeyCJSON.traceValue(value)]),
        (.didReceiveReplyData(SessionMessageID(rawValue: 8), bytes), ["id": .int(8), "data": .string("007fff")]),
        (.messageFailed(SessionMessageID(rawValue: 9), refused),
         ["id": .int(9), "code": .int(Int64(refused.code.rawValue)), "error": .string(refused.code.name)]),
        (.lateReplyDiscarded(SessionMessageID(rawValue: 10)), ["id": .int(10)]),
        (.didReceiveUserInfo(UserInfoTransferID(rawValue: 11), value, isCurrentComplicationInfo: true),
         ["id": .int(11), "value": MonkeyCJSON.traceValue(value), "complication": .bool(true)]),
        (.userInfoTransferDidFinish(UserInfoTransferID(rawValue: 12), error: nil), ["id": .int(12), "code": .null]),
        (.didReceiveFile(SessionFile(peer: peer, id: FileTransferID(rawValue: 13), size: 4_096, metadata: nil)),
         ["peer": .string(peer.description), "file": .int(13), "size": .int(4_096), "metadata": .null]),
        (.didReceiveFile(SessionFile(peer: peer, id: FileTransferID(rawValue: 14), size: 1, metadata: value)),
         ["peer": .string(peer.description), "file": .int(14), "size": .int(1), "metadata": MonkeyCJSON.traceValue(value)]),
        (.fileTransferProgress(FileTransferID(rawValue: 15), completed: 1_024, total: 4_096),
         ["file": .int(15), "completed": .int(1_024), "total": .int(4_096)]),
        (.fileTransferDidFinish(FileTransferID(rawValue: 16), error: refused),
         ["file": .int(16), "code": .int(Int64(refused.code.rawValue)), "error": .string(refused.code.name)]),
        (.timeout(.messageReply(SessionMessageID(rawValue: 17)), deadline: .seconds(5)),
         ["what": .string(SessionTimer.messageReply(SessionMessageID(rawValue: 17)).description)]),
        (.violation(.malformedFrame, detail: "2 bytes"), ["kind": .string("malformed-frame"), "detail": .string("2 bytes")]),
    ]

    @Test(arguments: 0..<cases.count)
    func everyCoreEventWritesTheFieldsItsDictionaryWrote(_ index: Int) throws {
        let (coreEvent, dictionary) = Self.cases[index]
        try expectPayloadEventIsItsDictionary(SessionTrace.event(coreEvent, timeNs: 2_500), dictionary)
    }

    @Test func everyCoreEventIsNamedByADeclaredName() {
        for (coreEvent, _) in Self.cases {
            #expect(SessionTrace.Names.all.contains(SessionTrace.name(of: coreEvent)))
        }
    }

    @Test func theHostsFileActionsWriteTheirDocumentedFields() throws {
        let stored = SessionTrace.events(
            for: .writeIncomingFile(Self.peer, FileTransferID(rawValue: 3), offset: 512, bytes: Self.bytes), timeNs: 10)
        try expectPayloadEventIsItsDictionary(try #require(stored.first),
            ["peer": .string(Self.peer.description), "file": .int(3), "offset": .int(512), "length": .int(3)])
        let discarded = SessionTrace.events(for: .discardIncomingFile(Self.peer, FileTransferID(rawValue: 4)), timeNs: 20)
        try expectPayloadEventIsItsDictionary(try #require(discarded.first), ["peer": .string(Self.peer.description), "file": .int(4)])
    }

    /// A live run's deadlines are on the core's own clock: two timeouts that write the same line
    /// are the same event, whatever deadline each core computed.
    @Test func timeoutsWithDifferentDeadlinesAreEqualEvents() {
        let live = SessionTrace.event(.timeout(.handshake, deadline: .seconds(3)), timeNs: 100)
        let replayed = SessionTrace.event(.timeout(.handshake, deadline: .seconds(8_000)), timeNs: 100)
        #expect(live == replayed)
        #expect(live.hashValue == replayed.hashValue)
    }

    /// An error's detail is not written (the line has its code and name), so two failures that
    /// differ only in their detail are the same event.
    @Test func failuresDifferingOnlyInAnUnwrittenDetailAreEqualEvents() {
        let one = SessionTrace.event(.messageFailed(SessionMessageID(rawValue: 1), SessionError(.messageReplyFailed, "a")), timeNs: 5)
        let other = SessionTrace.event(.messageFailed(SessionMessageID(rawValue: 1), SessionError(.messageReplyFailed, "b")), timeNs: 5)
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        let third = SessionTrace.event(.messageFailed(SessionMessageID(rawValue: 2), SessionError(.messageReplyFailed, "a")), timeNs: 5)
        #expect(one != third)
    }
}
