import Dissectors
import HeartRateCore
import HeartRateIntegration
import ReplayKit
import Testing

// The adapter's mapping from ATT records to the client, frame by frame.

/// A strap's ATT records as the engine hands them over: one dissected HCI frame.
private func strapFrame(_ records: [ATTRecord], number: Int = 7) -> ReplayFrame {
    let interface = ReplayInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR)
    return ReplayFrame(number: number, virtualTimeNs: 0, timestampNs: 0, interface: interface,
                       dissected: DissectedFrame(summary: "", direction: .received, content: .att(records)))
}

@Test func anErrorResponseFromTheStrapReachesTheClient() {
    var adapter = HeartRateAdapter(configuration: .standard, handles: HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013),
                                   calls: [], matching: .off)
    // Error Response (§3.4.1.1): Write Request refused on the CCCD, Write Not Permitted. The
    // dissector keeps the handle in `handle` and the request opcode and code in `value`.
    let refusal = ATTRecord(connectionHandle: 0x40, direction: .received, opcode: .errorResponse, handle: 0x0013, value: [0x12, 0x03])
    #expect(refusal.pdu == .errorResponse(requestOpcodeInError: .writeRequest, attributeHandleInError: 0x0013, errorCode: .writeNotPermitted))
    let events = adapter.frame(strapFrame([refusal]), bytes: [], now: .milliseconds(5))
    // Nothing was asked yet, so the client reports the answer as unexpected: it got it.
    #expect(events.map(\.event) == ["error"])
    #expect(events.first?.field("kind") == .string("unexpected_response"))
    #expect(events.first?.field("response") == .string("error_response"))
}

/// One `api-calls` record as the engine hands it over.
private func apiCallFrame(_ json: String, number: Int = 3) -> ReplayFrame {
    let interface = ReplayInterface(index: 1, linkType: .user0, role: .apiCalls)
    return ReplayFrame(number: number, virtualTimeNs: 0, timestampNs: 0, interface: interface,
                       apiCall: APICallRecord(parsing: Array(json.utf8), frame: number))
}

@Test func anotherCoresRecordOnTheSameInterfaceIsLeftAlone() {
    var adapter = HeartRateAdapter(configuration: .standard, handles: HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013),
                                   calls: [], matching: .off)
    #expect(adapter.frame(apiCallFrame(#"{"core":"messaging","call":"send_message"}"#), bytes: [], now: .milliseconds(1)).isEmpty)
    // This core's record, named or not, is read.
    let named = adapter.frame(apiCallFrame(#"{"core":"heart_rate","call":"start"}"#), bytes: [], now: .milliseconds(2))
    #expect(named.first?.event == "api_call")
    let unnamed = adapter.frame(apiCallFrame(#"{"call":"no_such_call"}"#), bytes: [], now: .milliseconds(3))
    #expect(unnamed.map(\.event) == ["api_call", "api_record_malformed"])
}

@Test(arguments: [
    HeartRateEvent.subscribed, .measurement(HeartRateMeasurement(heartRate: 72)), .sensorLocation(.chest), .energyExpendedReset,
    .noData(silentFor: .seconds(5)), .dataResumed(silentFor: .seconds(6)), .sensorContactChanged(detected: true),
    .error(.malformedSensorLocation(length: 2)),
])
func everyEventIsTracedUnderTheNameTheCoreGivesIt(_ event: HeartRateEvent) {
    #expect(HeartRateTrace.name(of: event).text == event.name)
    #expect(HeartRateIntegration().emittedEvents.contains(HeartRateTrace.name(of: event)))
}
