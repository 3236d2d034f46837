import Testing

@testable import HeartRateCore

/// Handles laid out as the Bumble rig serves them after a Device Information service, so the
/// numbers are not the trivial 1, 2, 3 and a mix-up between them would show.
let handles = HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013, bodySensorLocation: 0x0015, controlPoint: 0x0017)

/// A measurement value with contact detection supported: `contact` true = detected.
func measurementValue(bpm: UInt8, contact: Bool? = nil) -> [UInt8] {
    var measurement = HeartRateMeasurement(heartRate: UInt16(bpm))
    if let contact { measurement.sensorContact = contact ? .detected : .notDetected }
    return measurement.encoded()
}

func seconds(_ value: Double) -> Duration { .milliseconds(Int(value * 1000)) }

/// The events of `outputs`, requests dropped.
func events(_ outputs: [HeartRateOutput]) -> [HeartRateEvent] {
    outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
}

/// The requests of `outputs`, events dropped.
func requests(_ outputs: [HeartRateOutput]) -> [GATTRequest] {
    outputs.compactMap { if case .request(let request) = $0 { request } else { nil } }
}

/// A client that has started and had its CCCD write and Body Sensor Location read answered at
/// `subscribedAt`, so notifications are on and no request is outstanding.
func subscribedClient(at subscribedAt: Duration = .seconds(1), handles: HeartRateHandles = handles) -> HeartRateClient {
    var client = HeartRateClient()
    _ = client.start(handles: handles, now: subscribedAt - .milliseconds(10))
    _ = client.writeResponse(now: subscribedAt)
    if handles.bodySensorLocation != nil {
        _ = client.readResponse(value: [0x01], now: subscribedAt + .milliseconds(10))
    }
    return client
}

@Suite("HeartRateClient: requests")
struct HeartRateClientRequestTests {
    @Test("start writes 01 00 to the measurement CCCD and nothing else yet")
    func startWritesCCCDFirst() {
        var client = HeartRateClient()
        let outputs = client.start(handles: handles, now: .zero)
        #expect(outputs == [.request(.write(handle: 0x0013, value: [0x01, 0x00]))])
    }

    @Test("the CCCD write response reports subscribed, then sends the Body Sensor Location read")
    func cccdResponseThenSensorLocationRead() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        let outputs = client.writeResponse(now: .milliseconds(30))
        #expect(outputs == [.event(.subscribed), .request(.read(handle: 0x0015))])
    }

    @Test("the Body Sensor Location read response reports the location and sends nothing more")
    func sensorLocationResponse() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        _ = client.writeResponse(now: .milliseconds(30))
        let outputs = client.readResponse(value: [0x01], now: .milliseconds(60))
        #expect(outputs == [.event(.sensorLocation(.chest))])
    }

    @Test("a sensor without Body Sensor Location gets only the CCCD write")
    func noSensorLocationHandle() {
        var client = HeartRateClient()
        _ = client.start(handles: HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013), now: .zero)
        #expect(client.writeResponse(now: .milliseconds(30)) == [.event(.subscribed)])
    }

    @Test("a Body Sensor Location value that is not one byte is an error event")
    func malformedSensorLocation() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        _ = client.writeResponse(now: .milliseconds(30))
        #expect(client.readResponse(value: [0x01, 0x02], now: .milliseconds(60)) == [.event(.error(.malformedSensorLocation(length: 2)))])
    }

    @Test("reset energy expended writes 01 to the control point with a Write Request")
    func resetWritesControlPoint() {
        var client = subscribedClient()
        #expect(client.resetEnergyExpended(now: .seconds(6)) == [.request(.write(handle: 0x0017, value: [0x01]))])
    }

    @Test("the control point write response reports energy_expended_reset")
    func resetAcknowledged() {
        var client = subscribedClient()
        _ = client.resetEnergyExpended(now: .seconds(6))
        #expect(client.writeResponse(now: .seconds(6) + .milliseconds(30)) == [.event(.energyExpendedReset)])
    }

    @Test("a reset asked for while the sensor location read is outstanding waits for its response")
    func resetQueuedBehindOutstandingRead() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        _ = client.writeResponse(now: .milliseconds(30))
        #expect(client.resetEnergyExpended(now: .milliseconds(40)) == [])
        let outputs = client.readResponse(value: [0x01], now: .milliseconds(60))
        #expect(outputs == [.event(.sensorLocation(.chest)), .request(.write(handle: 0x0017, value: [0x01]))])
    }

    @Test("requests queued behind one another go out one per response, in order")
    func queueOrder() {
        var client = HeartRateClient()
        var sent = requests(client.start(handles: handles, now: .zero))
        _ = client.resetEnergyExpended(now: .milliseconds(1))
        _ = client.readSensorLocation(now: .milliseconds(2))
        sent += requests(client.writeResponse(now: .milliseconds(10)))
        sent += requests(client.readResponse(value: [0x01], now: .milliseconds(20)))
        sent += requests(client.writeResponse(now: .milliseconds(30)))
        sent += requests(client.readResponse(value: [0x02], now: .milliseconds(40)))
        #expect(sent == [
            .write(handle: 0x0013, value: [0x01, 0x00]), .read(handle: 0x0015),
            .write(handle: 0x0017, value: [0x01]), .read(handle: 0x0015),
        ])
    }

    @Test("reset energy expended without a control point is a not_supported error and sends nothing")
    func resetWithoutControlPoint() {
        var client = subscribedClient(handles: HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013))
        #expect(client.resetEnergyExpended(now: .seconds(2)) == [.event(.error(.notSupported(operation: .resetEnergyExpended)))])
    }

    @Test("reading the sensor location without its characteristic is a not_supported error")
    func readLocationWithoutHandle() {
        var client = subscribedClient(handles: HeartRateHandles(measurement: 0x0012, measurementCCCD: 0x0013))
        #expect(client.readSensorLocation(now: .seconds(2)) == [.event(.error(.notSupported(operation: .readSensorLocation)))])
    }

    @Test("an app call before start is a not_connected error")
    func callBeforeStart() {
        var client = HeartRateClient()
        #expect(client.resetEnergyExpended(now: .zero) == [.event(.error(.notConnected(operation: .resetEnergyExpended)))])
    }

    @Test("start while connected is an already_started error and sends nothing")
    func startTwice() {
        var client = subscribedClient()
        #expect(client.start(handles: handles, now: .seconds(3)) == [.event(.error(.alreadyStarted))])
    }

    @Test("a response with no request outstanding is an unexpected_response error")
    func responseWithNothingOutstanding() {
        var client = subscribedClient()
        #expect(client.writeResponse(now: .seconds(3)) == [.event(.error(.unexpectedResponse(response: "write_response")))])
    }

    @Test("a read response to an outstanding write is unexpected and leaves the write outstanding")
    func readResponseToWrite() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        #expect(client.readResponse(value: [0x01], now: .milliseconds(5)) == [.event(.error(.unexpectedResponse(response: "read_response")))])
        #expect(client.writeResponse(now: .milliseconds(10)) == [.event(.subscribed), .request(.read(handle: 0x0015))])
    }
}

@Suite("HeartRateClient: error responses")
struct HeartRateClientErrorResponseTests {
    @Test("an error response to the control point write is an att_error event naming the operation")
    func controlPointRefused() {
        var client = subscribedClient()
        _ = client.resetEnergyExpended(now: .seconds(6))
        let outputs = client.errorResponse(requestOpcode: 0x12, handle: 0x0017, code: 0x80, now: .seconds(6) + .milliseconds(20))
        #expect(outputs == [.event(.error(.attError(operation: .resetEnergyExpended, requestOpcode: 0x12, handle: 0x0017, code: 0x80)))])
    }

    @Test("a refused CCCD write reports the error, arms no timer, and the queue goes on")
    func cccdRefused() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        let outputs = client.errorResponse(requestOpcode: 0x12, handle: 0x0013, code: 0x03, now: .milliseconds(30))
        #expect(outputs == [
            .event(.error(.attError(operation: .enableNotifications, requestOpcode: 0x12, handle: 0x0013, code: 0x03))),
            .request(.read(handle: 0x0015)),
        ])
        #expect(client.nextDeadline == nil)
    }

    @Test("an error response to the sensor location read is reported and the next request goes out")
    func sensorLocationRefused() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        _ = client.writeResponse(now: .milliseconds(30))
        _ = client.resetEnergyExpended(now: .milliseconds(31))
        let outputs = client.errorResponse(requestOpcode: 0x0A, handle: 0x0015, code: 0x02, now: .milliseconds(60))
        #expect(outputs == [
            .event(.error(.attError(operation: .readSensorLocation, requestOpcode: 0x0A, handle: 0x0015, code: 0x02))),
            .request(.write(handle: 0x0017, value: [0x01])),
        ])
    }

    @Test("an error response with nothing outstanding is unexpected")
    func errorResponseWithNothingOutstanding() {
        var client = subscribedClient()
        #expect(client.errorResponse(requestOpcode: 0x0A, handle: 1, code: 1, now: .seconds(2)) == [
            .event(.error(.unexpectedResponse(response: "error_response")))
        ])
    }
}

@Suite("HeartRateClient: notifications and contact")
struct HeartRateClientNotificationTests {
    @Test("a measurement notification is decoded into a measurement event")
    func measurementEvent() {
        var client = subscribedClient()
        let value: [UInt8] = [0x16, 0x48, 0x00, 0x04]
        #expect(client.notification(handle: 0x0012, value: value, now: .seconds(2)) == [
            .event(.measurement(HeartRateMeasurement(heartRate: 72, sensorContact: .detected, rrIntervals: [1024])))
        ])
    }

    @Test("a notification of another handle is ignored")
    func otherHandleIgnored() {
        var client = subscribedClient()
        #expect(client.notification(handle: 0x0099, value: [0x00, 0x48], now: .seconds(2)) == [])
    }

    @Test("a malformed measurement is an error event with the field and offset")
    func malformedMeasurement() {
        var client = subscribedClient()
        #expect(client.notification(handle: 0x0012, value: [0x10, 0x48, 0x00], now: .seconds(2)) == [
            .event(.error(.malformedMeasurement(HeartRateMeasurementError(field: .rrInterval, offset: 2, needed: 2, available: 1))))
        ])
    }

    @Test("the first measurement of a contact-detecting sensor sets the baseline without an event")
    func firstContactIsBaseline() {
        var client = subscribedClient()
        #expect(events(client.notification(handle: 0x0012, value: measurementValue(bpm: 70, contact: true), now: .seconds(2))).count == 1)
    }

    @Test("losing and regaining contact emits sensor_contact_changed false then true, after the measurement")
    func contactLostAndRegained() {
        var client = subscribedClient()
        var seen: [HeartRateEvent] = []
        for (second, contact) in [(2, true), (3, false), (4, false), (5, true), (6, true)] {
            seen += events(client.notification(handle: 0x0012, value: measurementValue(bpm: 70, contact: contact), now: .seconds(second)))
        }
        #expect(seen.filter { $0.name == "sensor_contact_changed" } == [
            .sensorContactChanged(detected: false), .sensorContactChanged(detected: true),
        ])
        #expect(seen[2] == .sensorContactChanged(detected: false))
        #expect(seen[1].name == "measurement")
    }

    @Test("a sensor that does not support contact detection never emits sensor_contact_changed")
    func noContactSupportNoEvents() {
        var client = subscribedClient()
        var seen: [HeartRateEvent] = []
        for second in 2...5 {
            seen += events(client.notification(handle: 0x0012, value: measurementValue(bpm: 70), now: .seconds(second)))
        }
        #expect(seen.allSatisfy { $0.name == "measurement" })
    }
}

@Suite("HeartRateClient: no-data timer")
struct HeartRateClientTimerTests {
    @Test("no timer runs before the CCCD write is acknowledged")
    func noDeadlineBeforeSubscribed() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        #expect(client.nextDeadline == nil)
    }

    @Test("the deadline is the acknowledgement of the CCCD write plus the timeout")
    func deadlineFromSubscription() {
        let client = subscribedClient(at: .seconds(1))
        #expect(client.nextDeadline == .seconds(6))
    }

    @Test("each notification moves the deadline to its time plus the timeout")
    func notificationMovesDeadline() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.notification(handle: 0x0012, value: measurementValue(bpm: 70), now: seconds(2.5))
        #expect(client.nextDeadline == seconds(7.5))
    }

    @Test("no_data fires exactly at the last notification plus the timeout")
    func noDataAtDeadline() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.notification(handle: 0x0012, value: measurementValue(bpm: 70), now: seconds(2.5))
        #expect(client.timeout(now: seconds(7.5)) == [.event(.noData(silentFor: .seconds(5)))])
    }

    @Test("a timeout call one nanosecond before the deadline does nothing")
    func noDataNotBeforeDeadline() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.notification(handle: 0x0012, value: measurementValue(bpm: 70), now: seconds(2.5))
        #expect(client.timeout(now: seconds(7.5) - .nanoseconds(1)) == [])
        #expect(client.nextDeadline == seconds(7.5))
    }

    @Test("no_data fires when no notification came at all since the subscription")
    func noDataWithoutAnyNotification() {
        var client = subscribedClient(at: .seconds(1))
        #expect(client.timeout(now: .seconds(6)) == [.event(.noData(silentFor: .seconds(5)))])
    }

    @Test("no_data fires once: after it there is no deadline until data comes back")
    func noDataOnce() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.timeout(now: .seconds(6))
        #expect(client.nextDeadline == nil)
        #expect(client.timeout(now: .seconds(20)) == [])
    }

    @Test("the first notification after no_data emits data_resumed with the gap, then the measurement")
    func dataResumed() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.notification(handle: 0x0012, value: measurementValue(bpm: 70), now: .seconds(2))
        _ = client.timeout(now: .seconds(7))
        let outputs = client.notification(handle: 0x0012, value: measurementValue(bpm: 71), now: .seconds(9))
        #expect(outputs == [.event(.dataResumed(silentFor: .seconds(7))), .event(.measurement(HeartRateMeasurement(heartRate: 71)))])
        #expect(client.nextDeadline == .seconds(14))
    }

    @Test("a malformed notification counts as a sign of life for the timer")
    func malformedNotificationMovesDeadline() {
        var client = subscribedClient(at: .seconds(1))
        _ = client.notification(handle: 0x0012, value: [0x01], now: .seconds(3))
        #expect(client.nextDeadline == .seconds(8))
    }

    @Test("a configured timeout is used for the deadline")
    func configuredTimeout() throws {
        var client = HeartRateClient(configuration: try HeartRateConfiguration(noDataTimeout: .seconds(2)))
        _ = client.start(handles: handles, now: .zero)
        _ = client.writeResponse(now: .seconds(1))
        #expect(client.nextDeadline == .seconds(3))
    }

    @Test("a zero or negative timeout is refused", arguments: [Duration.zero, .seconds(-1)])
    func invalidTimeout(timeout: Duration) {
        #expect(throws: HeartRateConfigurationError.nonPositiveNoDataTimeout(timeout)) {
            try HeartRateConfiguration(noDataTimeout: timeout)
        }
    }
}

@Suite("HeartRateClient: disconnection")
struct HeartRateClientDisconnectTests {
    @Test("disconnection stops the no-data timer")
    func disconnectStopsTimer() {
        var client = subscribedClient(at: .seconds(1))
        #expect(client.disconnected(now: .seconds(2)) == [])
        #expect(client.nextDeadline == nil)
        #expect(client.timeout(now: .seconds(6)) == [])
        #expect(!client.isConnected)
    }

    @Test("disconnection drops queued requests: a new start begins with the CCCD write again")
    func disconnectDropsQueue() {
        var client = HeartRateClient()
        _ = client.start(handles: handles, now: .zero)
        _ = client.resetEnergyExpended(now: .milliseconds(1))
        _ = client.disconnected(now: .milliseconds(2))
        #expect(client.writeResponse(now: .milliseconds(3)) == [.event(.error(.unexpectedResponse(response: "write_response")))])
        #expect(client.start(handles: handles, now: .seconds(1)) == [.request(.write(handle: 0x0013, value: [0x01, 0x00]))])
    }

    @Test("notifications after disconnection are ignored")
    func notificationAfterDisconnect() {
        var client = subscribedClient()
        _ = client.disconnected(now: .seconds(2))
        #expect(client.notification(handle: 0x0012, value: [0x00, 0x48], now: .seconds(3)) == [])
    }

    @Test("contact baseline starts over on a new link")
    func contactBaselineResets() {
        var client = subscribedClient()
        _ = client.notification(handle: 0x0012, value: measurementValue(bpm: 70, contact: true), now: .seconds(2))
        _ = client.disconnected(now: .seconds(3))
        _ = client.start(handles: handles, now: .seconds(4))
        _ = client.writeResponse(now: .seconds(4))
        #expect(events(client.notification(handle: 0x0012, value: measurementValue(bpm: 70, contact: false), now: .seconds(5))).count == 1)
    }
}

@Suite("HeartRateEvent names and fields")
struct HeartRateEventRenderingTests {
    /// Renders fields as text so tuples can be compared.
    func render(_ event: HeartRateEvent) -> String {
        event.fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    @Test("every event has its documented snake_case name")
    func names() {
        let all: [(HeartRateEvent, String)] = [
            (.subscribed, "subscribed"), (.measurement(HeartRateMeasurement(heartRate: 60)), "measurement"),
            (.sensorLocation(.chest), "sensor_location"), (.energyExpendedReset, "energy_expended_reset"),
            (.noData(silentFor: .seconds(5)), "no_data"), (.dataResumed(silentFor: .seconds(5)), "data_resumed"),
            (.sensorContactChanged(detected: false), "sensor_contact_changed"), (.error(.alreadyStarted), "error"),
        ]
        for (event, name) in all { #expect(event.name == name) }
    }

    @Test("a full measurement renders every field in order")
    func measurementFields() {
        let event = HeartRateEvent.measurement(
            HeartRateMeasurement(heartRate: 300, sensorContact: .detected, energyExpended: 12, rrIntervals: [1024, 900]))
        #expect(render(event) == #"heart_rate=int(300) value_format=string("uint16") sensor_contact=string("detected") energy_expended=int(12) rr_intervals=ints([1024, 900])"#)
    }

    @Test("absent measurement fields are left out")
    func measurementFieldsOmitted() {
        #expect(render(.measurement(HeartRateMeasurement(heartRate: 60))) == #"heart_rate=int(60) value_format=string("uint8") sensor_contact=string("not_supported")"#)
    }

    @Test("timer events carry the silence in nanoseconds")
    func timerFields() {
        #expect(render(.noData(silentFor: .milliseconds(5001))) == "silent_for_ns=int(5001000000)")
    }

    @Test("sensor location renders its name and byte")
    func locationFields() {
        #expect(render(.sensorLocation(.earLobe)) == #"location=string("ear_lobe") value=int(5)"#)
    }

    @Test("an ATT error renders kind, operation, opcode, handle and code")
    func attErrorFields() {
        let event = HeartRateEvent.error(.attError(operation: .resetEnergyExpended, requestOpcode: 0x12, handle: 0x17, code: 0x80))
        #expect(render(event) == #"kind=string("att_error") operation=string("reset_energy_expended") request_opcode=int(18) handle=int(23) code=int(128)"#)
    }

    @Test("a malformed measurement renders field, offset and byte counts")
    func malformedFields() {
        let event = HeartRateEvent.error(.malformedMeasurement(HeartRateMeasurementError(field: .energyExpended, offset: 2, needed: 2, available: 1)))
        #expect(render(event) == #"kind=string("malformed_measurement") field=string("energy_expended") offset=int(2) needed=int(2) available=int(1)"#)
    }
}
