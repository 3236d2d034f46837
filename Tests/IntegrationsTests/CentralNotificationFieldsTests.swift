import Testing

@testable import BehaviourTrace
@testable import CentralIntegration

/// The `central` core's `notification`, written once per notified frame, holds the recorded
/// values (``CentralNotificationFields``): it must be the dictionary docs/trace-format.md lists.
@Suite struct CentralNotificationFieldsTests {
    @Test(arguments: [false, true])
    func aNotificationIsTheDictionaryItReplaced(indication: Bool) throws {
        let fields = CentralNotificationFields(frame: 42, handle: 0x002A, isIndication: indication, value: [0x16, 0x48, 0x00, 0xFF])
        let event = TraceEvent(timeNs: 7_000, core: CentralIntegration.core, event: CentralAdapter.Names.notification, payload: fields)
        try expectPayloadEventIsItsDictionary(event, [
            "frame": .int(42), "handle": .int(0x2A), "indication": .bool(indication), "value": .string("164800ff"),
        ])
    }

    @Test func anEmptyValueIsAnEmptyHexString() throws {
        let event = TraceEvent(timeNs: 0, core: CentralIntegration.core, event: CentralAdapter.Names.notification,
                               payload: CentralNotificationFields(frame: 1, handle: 3, isIndication: false, value: []))
        try expectPayloadEventIsItsDictionary(event, ["frame": .int(1), "handle": .int(3), "indication": .bool(false), "value": .string("")])
    }
}
