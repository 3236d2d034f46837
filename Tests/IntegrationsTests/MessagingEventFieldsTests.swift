import MessagingCore
import MonkeyC
import MonkeyCTrace
import Testing

@testable import BehaviourTrace
@testable import MessagingIntegration

/// The core's `progress`, `completion` and `message_received` events hold their fields as the
/// core's values (``MessagingAppEventFields``): every way of reading, writing, comparing or
/// digesting them must be that of the dictionary they replaced, or a baseline would change.
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
    ]

    @Test(arguments: 0..<cases.count)
    func anEventHeldAsTheCoresValuesIsTheDictionaryItReplaced(_ index: Int) throws {
        let (coreEvent, dictionary) = Self.cases[index]
        let event = MessagingTrace.event(coreEvent, timeNs: 1_250)
        let reference = TraceEvent(timeNs: 1_250, core: event.core, event: event.event, fields: dictionary)
        #expect(event.fields == dictionary)
        for key in dictionary.keys + ["absent", "t_ns"] { #expect(event.field(key) == dictionary[key]) }
        #expect(event.jsonLine() == reference.jsonLine())
        #expect(event.stableDigest == reference.stableDigest)
        #expect(event == reference && reference == event)
        #expect(event.hashValue == reference.hashValue)
        let parsed = try TraceEvent(jsonLine: event.jsonLine(), lineNumber: 1, file: "progress.jsonl")
        #expect(parsed == event)
    }
}
