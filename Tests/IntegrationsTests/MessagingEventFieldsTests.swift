import MessagingCore
import MonkeyC
import MonkeyCTrace
import Testing

@testable import BehaviourTrace
@testable import MessagingIntegration

/// Every `messaging` event holds its fields as the core's values (``MessagingEventFields``): every
/// way of reading, writing, comparing or digesting them must be that of the dictionary
/// docs/trace-format.md lists for the event, or a baseline would change.
@Suite struct MessagingEventFieldsTests {
    static let app = IQApp(uuid: IQUUID("6A8B1C2D-0000-4000-8000-0000000000AA")!,
                           device: IQUUID("A6230408-B526-A5D6-8929-7791342EB4AF")!)
    static var appFields: [String: TraceValue] {
        ["app": .string(app.uuid.description), "device": .string(app.device.description)]
    }

    static let message = MonkeyCValue.dictionary([
        MonkeyCPair(.string("hr \"bpm\""), .int32(72)), MonkeyCPair(.string("ok"), .bool(true)),
    ])

    /// Each event as the core makes it, beside the dictionary the mapping used to build for it.
    static let cases: [(MessagingEvent, [String: TraceValue])] = [
        (.progress(SendID(rawValue: 7), app, sent: 512, total: 2048),
         appFields.merging(["send": .int(7), "sent": .int(512), "total": .int(2048)]) { a, _ in a }),
        (.completion(SendID(rawValue: 8), app, .success),
         appFields.merging(["send": .int(8), "result": .string(IQSendMessageResult.success.name)]) { a, _ in a }),
        (.completion(SendID(rawValue: 9), app, IQSendMessageResult.allCases.last!),
         appFields.merging(["send": .int(9), "result": .string(IQSendMessageResult.allCases.last!.name)]) { a, _ in a }),
        (.messageReceived(app, ListenerID(rawValue: 3), message),
         appFields.merging(["listener": .int(3), "value": MonkeyCJSON.traceValue(message)]) { a, _ in a }),
        (.messageUnclaimed(app, message), appFields.merging(["value": MonkeyCJSON.traceValue(message)]) { a, _ in a }),
        (.appStatus(RequestID(rawValue: 4), app, IQAppStatus(isInstalled: true, version: 12)),
         appFields.merging(["request": .int(4), "installed": .bool(true), "version": .int(12)]) { a, _ in a }),
        (.appStatus(RequestID(rawValue: 5), app, nil),
         appFields.merging(["request": .int(5), "installed": .null, "version": .null]) { a, _ in a }),
        (.openAppResult(RequestID(rawValue: 6), app, .success),
         appFields.merging(["request": .int(6), "result": .string(IQSendMessageResult.success.name)]) { a, _ in a }),
        (.connectionOpened(app, connection: 2, largePackets: true, byWatch: false),
         appFields.merging(["connection": .int(2), "large_packets": .bool(true), "by_watch": .bool(false)]) { a, _ in a }),
        (.connectionClosed(app, connection: 2), appFields.merging(["connection": .int(2)]) { a, _ in a }),
        (.deviceListReplaced([IQDevice(uuid: app.device, modelName: "fenix 7", friendlyName: "Run \"watch\"")]),
         ["devices": .array([.object(["uuid": .string(app.device.description), "model": .string("fenix 7"),
                                      "name": .string("Run \"watch\"")])])]),
        (.deviceListReplaced([]), ["devices": .array([])]),
        (.deviceStatus(app.device, .connected), ["device": .string(app.device.description), "status": .string("Connected")]),
        (.timeout(.openApp, app.device, app, deadline: .seconds(30)),
         ["what": .string("open-app"), "device": .string(app.device.description), "app": .string(app.uuid.description)]),
        (.timeout(.connect, app.device, nil, deadline: .seconds(30)),
         ["what": .string("connect"), "device": .string(app.device.description)]),
        (.violation(app.device, .unknownCommand, detail: "command 0x7f"),
         ["device": .string(app.device.description), "kind": .string("unknown-command"), "detail": .string("command 0x7f")]),
    ]

    @Test(arguments: 0..<cases.count)
    func anEventHeldAsTheCoresValuesIsTheDictionaryItReplaced(_ index: Int) throws {
        let (coreEvent, dictionary) = Self.cases[index]
        try expectPayloadEventIsItsDictionary(MessagingTrace.event(coreEvent, timeNs: 1_250), dictionary)
    }

    @Test func theSavedDeviceListWritesItsCount() throws {
        let device = IQDevice(uuid: Self.app.device, modelName: "fenix 7", friendlyName: "Run")
        let event = try #require(MessagingTrace.events(for: .saveDeviceList([device, device]), timeNs: 9).first)
        #expect(event.event == MessagingTrace.Names.deviceListSaved)
        #expect(event.jsonLine() == TraceEvent(timeNs: 9, core: event.core, event: event.event, fields: ["count": .int(2)]).jsonLine())
    }

    /// A live run's deadlines are on the core's own clock: two timeouts that write the same line
    /// are the same event, whatever deadline each core computed.
    @Test func timeoutsWithDifferentDeadlinesAreEqualEvents() {
        let live = MessagingTrace.event(.timeout(.connect, Self.app.device, Self.app, deadline: .seconds(2)), timeNs: 40)
        let replayed = MessagingTrace.event(.timeout(.connect, Self.app.device, Self.app, deadline: .seconds(9_000)), timeNs: 40)
        #expect(live == replayed)
        #expect(live.hashValue == replayed.hashValue)
    }

    /// A message's value is compared as the JSON it writes: a dictionary's pairs in another order
    /// write the same line.
    @Test func messagesWhoseValuesWriteTheSameJSONAreEqualEvents() {
        let pairs = [MonkeyCPair(.string("a"), .int32(1)), MonkeyCPair(.string("b"), .int32(2))]
        let one = MessagingTrace.event(.messageReceived(Self.app, ListenerID(rawValue: 1), .dictionary(pairs)), timeNs: 1)
        let other = MessagingTrace.event(.messageReceived(Self.app, ListenerID(rawValue: 1), .dictionary(pairs.reversed())), timeNs: 1)
        #expect(one == other)
        #expect(one.jsonLine() == other.jsonLine())
    }
}
