/// One ATT request the core asks its host to send. The core speaks GATT, not ATT bytes: the host
/// (a live BLE stack, or Tether's replay adapter) turns this into the PDU and reports the answer
/// back through `readResponse`, `writeResponse` or `errorResponse`.
public enum GATTRequest: Equatable, Hashable, Sendable {
    /// ATT Write Request (opcode 0x12): a write the server must acknowledge. Never a Write
    /// Command, because every write this core makes needs to know whether it took effect.
    case write(handle: UInt16, value: [UInt8])
    /// ATT Read Request (opcode 0x0A).
    case read(handle: UInt16)

    /// The attribute handle the request targets.
    public var handle: UInt16 {
        switch self {
        case .write(let handle, _), .read(let handle): handle
        }
    }

    /// The ATT opcode of the request, so that a host can match an Error Response's "request
    /// opcode in error" against it without its own table.
    public var attOpcode: UInt8 {
        switch self {
        case .write: 0x12
        case .read: 0x0A
        }
    }
}

/// What a call into the core produces, in the order the host must act on it.
public enum HeartRateOutput: Equatable, Sendable {
    /// Send this request now. The core emits at most one at a time: ATT allows one outstanding
    /// request per bearer, so the next comes only after the previous one's response.
    case request(GATTRequest)
    /// Tell the app this happened.
    case event(HeartRateEvent)
}

/// The GATT procedures the core runs, named in events so an error says what failed.
public enum HeartRateOperation: String, Equatable, Hashable, Sendable {
    /// Writing 01 00 to the Heart Rate Measurement CCCD.
    case enableNotifications = "enable_notifications"
    /// Reading Body Sensor Location.
    case readSensorLocation = "read_sensor_location"
    /// Writing 0x01 (Reset Energy Expended) to the Heart Rate Control Point.
    case resetEnergyExpended = "reset_energy_expended"
}

/// Everything that can go wrong, as data: the core reports problems as events and never traps,
/// so a replay of a bad capture shows what happened instead of crashing the run.
public enum HeartRateError: Equatable, Hashable, Sendable {
    /// The server answered a request with an ATT Error Response. `requestOpcode` and `handle`
    /// are what the response named (normally those of `operation`'s request); `code` is the ATT
    /// error code, e.g. 0x80 "Control Point value not supported" from a Heart Rate sensor.
    case attError(operation: HeartRateOperation, requestOpcode: UInt8, handle: UInt16, code: UInt8)
    /// A Heart Rate Measurement notification that could not be decoded.
    case malformedMeasurement(HeartRateMeasurementError)
    /// A Body Sensor Location read gave a value that is not exactly one byte.
    case malformedSensorLocation(length: Int)
    /// The sensor has no characteristic for this operation (no handle was given to `start`).
    case notSupported(operation: HeartRateOperation)
    /// The operation was asked for while no link is up.
    case notConnected(operation: HeartRateOperation)
    /// `start` was called while a link is already up; the call changed nothing.
    case alreadyStarted
    /// A response arrived that no outstanding request can explain (`response` names which kind:
    /// `read_response`, `write_response`, `error_response`). It is ignored.
    case unexpectedResponse(response: String)

    /// A stable snake_case name, the `kind` field of the `error` event.
    public var kind: String {
        switch self {
        case .attError: "att_error"
        case .malformedMeasurement: "malformed_measurement"
        case .malformedSensorLocation: "malformed_sensor_location"
        case .notSupported: "not_supported"
        case .notConnected: "not_connected"
        case .alreadyStarted: "already_started"
        case .unexpectedResponse: "unexpected_response"
        }
    }
}

/// A plain value in an event's fields: what a JSON trace line can hold without a schema, so that
/// mapping events onto Tether's trace format is mechanical.
public enum HeartRateFieldValue: Equatable, Hashable, Sendable {
    /// An integer.
    case int(Int)
    /// A floating-point number.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// A string.
    case string(String)
    /// A list of integers (RR intervals).
    case ints([Int])
}

/// What the core tells the app. Each event has a stable `name` and ordered `fields`, documented
/// in docs/heart-rate-core.md; traces and tests rely on both, so they only ever grow.
public enum HeartRateEvent: Equatable, Sendable {
    /// The CCCD write was acknowledged: the sensor will notify measurements from now on.
    case subscribed
    /// A Heart Rate Measurement notification, decoded.
    case measurement(HeartRateMeasurement)
    /// The Body Sensor Location read answered.
    case sensorLocation(BodySensorLocation)
    /// The Control Point accepted Reset Energy Expended.
    case energyExpendedReset
    /// No measurement arrived for the configured timeout: the strap is connected but silent
    /// (loose, out of battery, firmware stuck). `silentFor` is the time since the last
    /// notification, or since notifications were enabled when none came yet.
    case noData(silentFor: Duration)
    /// A measurement arrived after `noData`; `silentFor` is how long the gap was.
    case dataResumed(silentFor: Duration)
    /// The sensor's skin contact changed. Only for sensors that support contact detection, and
    /// only on a change: the first measurement sets the baseline, and carries the status itself.
    case sensorContactChanged(detected: Bool)
    /// Something failed; see `HeartRateError`.
    case error(HeartRateError)

    /// The event's stable snake_case name.
    public var name: String {
        switch self {
        case .subscribed: "subscribed"
        case .measurement: "measurement"
        case .sensorLocation: "sensor_location"
        case .energyExpendedReset: "energy_expended_reset"
        case .noData: "no_data"
        case .dataResumed: "data_resumed"
        case .sensorContactChanged: "sensor_contact_changed"
        case .error: "error"
        }
    }

    /// The event's data as ordered key/value pairs of plain values. Optional parts of a
    /// measurement are left out when absent rather than written as null, so every value has one
    /// type per key.
    public var fields: [(key: String, value: HeartRateFieldValue)] {
        switch self {
        case .subscribed, .energyExpendedReset:
            return []
        case .measurement(let measurement):
            var fields: [(key: String, value: HeartRateFieldValue)] = [
                ("heart_rate", .int(Int(measurement.heartRate))),
                ("value_format", .string(measurement.valueFormat.rawValue)),
                ("sensor_contact", .string(measurement.sensorContact.rawValue)),
            ]
            if let energy = measurement.energyExpended {
                fields.append(("energy_expended", .int(Int(energy))))
            }
            if !measurement.rrIntervals.isEmpty {
                fields.append(("rr_intervals", .ints(measurement.rrIntervals.map(Int.init))))
            }
            return fields
        case .sensorLocation(let location):
            return [("location", .string(location.name)), ("value", .int(Int(location.rawValue)))]
        case .noData(let silentFor), .dataResumed(let silentFor):
            return [("silent_for_ns", .int(silentFor.nanoseconds))]
        case .sensorContactChanged(let detected):
            return [("detected", .bool(detected))]
        case .error(let error):
            var fields: [(key: String, value: HeartRateFieldValue)] = [("kind", .string(error.kind))]
            switch error {
            case .attError(let operation, let opcode, let handle, let code):
                fields += [
                    ("operation", .string(operation.rawValue)), ("request_opcode", .int(Int(opcode))),
                    ("handle", .int(Int(handle))), ("code", .int(Int(code))),
                ]
            case .malformedMeasurement(let error):
                fields += [
                    ("field", .string(error.field.rawValue)), ("offset", .int(error.offset)),
                    ("needed", .int(error.needed)), ("available", .int(error.available)),
                ]
            case .malformedSensorLocation(let length):
                fields.append(("length", .int(length)))
            case .notSupported(let operation), .notConnected(let operation):
                fields.append(("operation", .string(operation.rawValue)))
            case .alreadyStarted:
                break
            case .unexpectedResponse(let response):
                fields.append(("response", .string(response)))
            }
            return fields
        }
    }
}

extension Duration {
    /// Whole nanoseconds, the unit of Tether's trace timestamps (`t_ns`). Durations the core
    /// handles are differences of virtual times, far below the ~292 years an Int64 of ns holds.
    var nanoseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }
}
