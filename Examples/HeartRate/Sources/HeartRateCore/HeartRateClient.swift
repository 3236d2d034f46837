/// The attribute handles of the sensor's Heart Rate Service, as found by the host's GATT
/// discovery. The core takes them as given rather than discovering them itself, because discovery
/// is the host stack's job and a replay can read them from the capture.
public struct HeartRateHandles: Equatable, Hashable, Sendable {
    /// Value handle of Heart Rate Measurement (0x2A37), the handle notifications carry.
    public var measurement: UInt16
    /// Handle of that characteristic's Client Characteristic Configuration descriptor (0x2902).
    public var measurementCCCD: UInt16
    /// Value handle of Body Sensor Location (0x2A38); nil when the sensor has none (it is optional).
    public var bodySensorLocation: UInt16?
    /// Value handle of Heart Rate Control Point (0x2A39); nil when the sensor has none (it is only
    /// there when the sensor reports Energy Expended).
    public var controlPoint: UInt16?

    /// The handles; the optional characteristics default to absent.
    public init(measurement: UInt16, measurementCCCD: UInt16, bodySensorLocation: UInt16? = nil, controlPoint: UInt16? = nil) {
        self.measurement = measurement
        self.measurementCCCD = measurementCCCD
        self.bodySensorLocation = bodySensorLocation
        self.controlPoint = controlPoint
    }
}

/// Why a configuration was refused.
public enum HeartRateConfigurationError: Error, Equatable, Sendable {
    /// `noDataTimeout` must be greater than zero: a zero or negative timeout would report
    /// `no_data` at the instant notifications are enabled, before a sensor could possibly speak.
    case nonPositiveNoDataTimeout(Duration)
}

/// Settings of the client. Validated on creation so that a client never runs with a setting that
/// makes its timer meaningless.
public struct HeartRateConfiguration: Equatable, Hashable, Sendable {
    /// How long without a Heart Rate Measurement notification before `no_data` (default 5 s:
    /// sensors notify about once a second, so five missed beats is silence, not jitter).
    public let noDataTimeout: Duration

    /// A configuration; throws when `noDataTimeout` is not greater than zero.
    public init(noDataTimeout: Duration = .seconds(5)) throws(HeartRateConfigurationError) {
        guard noDataTimeout > .zero else { throw .nonPositiveNoDataTimeout(noDataTimeout) }
        self.noDataTimeout = noDataTimeout
    }

    private init(validated noDataTimeout: Duration) {
        self.noDataTimeout = noDataTimeout
    }

    /// The defaults, without `try`: they are known to be valid.
    public static let standard = HeartRateConfiguration(validated: .seconds(5))
}

/// A Bluetooth Heart Rate Service client as a pure state machine (sans-I/O).
///
/// The host feeds it what happened on the link — responses, notifications, the disconnection,
/// and the passing of time — each with the current time `now`, and carries out what it returns:
/// requests to send and events for the app. The client never reads a clock, sleeps or does I/O,
/// so the same code runs live and in a replay on a virtual clock, where each call's `now` is the
/// captured frame's time. The host arms one timer at `nextDeadline` and calls `timeout(now:)`
/// when it fires.
///
/// On `start` it enables Heart Rate Measurement notifications (Write Request 01 00 to the CCCD)
/// and, once that is acknowledged, reads Body Sensor Location. ATT allows one request at a time,
/// so requests wait in a queue and each goes out when the previous one's response, or error
/// response, arrives.
public struct HeartRateClient: Sendable {
    /// The settings this client runs with.
    public let configuration: HeartRateConfiguration
    private var state: State = .idle

    /// A client waiting for `start`.
    public init(configuration: HeartRateConfiguration = .standard) {
        self.configuration = configuration
    }

    /// Whether a link is up (between `start` and `disconnected`).
    public var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// The time at which the host must call `timeout(now:)`, or nil when no timer is needed: the
    /// no-data watch only runs while notifications are enabled and flowing. After `no_data` it is
    /// nil until the next notification, so silence is reported once, not every timeout.
    public var nextDeadline: Duration? {
        guard case .connected(let link) = state, case .receiving(let since) = link.subscription else { return nil }
        return since + configuration.noDataTimeout
    }

    // MARK: - App calls

    /// The link is up and discovery found `handles`: enable notifications, then read the sensor
    /// location when the sensor has one. Returns the first request to send.
    public mutating func start(handles: HeartRateHandles, now: Duration) -> [HeartRateOutput] {
        if case .connected = state { return [.event(.error(.alreadyStarted))] }
        var link = Link(handles: handles)
        link.queue.append(
            PendingRequest(operation: .enableNotifications, request: .write(handle: handles.measurementCCCD, value: [0x01, 0x00]))
        )
        if let location = handles.bodySensorLocation {
            link.queue.append(PendingRequest(operation: .readSensorLocation, request: .read(handle: location)))
        }
        var outputs: [HeartRateOutput] = []
        link.sendNext(into: &outputs)
        state = .connected(link)
        return outputs
    }

    /// Asks the sensor to reset its Energy Expended counter (Control Point value 0x01, Write
    /// Request). Reported as `energy_expended_reset` once acknowledged; a sensor without a
    /// Control Point, or no link, gives an `error` event at once.
    public mutating func resetEnergyExpended(now: Duration) -> [HeartRateOutput] {
        enqueue(.resetEnergyExpended) { $0.controlPoint.map { .write(handle: $0, value: [0x01]) } }
    }

    /// Reads Body Sensor Location again (start reads it once already); `sensor_location` when it
    /// answers. A sensor without the characteristic, or no link, gives an `error` event at once.
    public mutating func readSensorLocation(now: Duration) -> [HeartRateOutput] {
        enqueue(.readSensorLocation) { $0.bodySensorLocation.map { .read(handle: $0) } }
    }

    // MARK: - What happened on the link

    /// A Read Response arrived with `value`.
    public mutating func readResponse(value: [UInt8], now: Duration) -> [HeartRateOutput] {
        complete(response: "read_response", now: now) { pending in
            guard case .read = pending.request else { return nil }
            switch pending.operation {
            case .readSensorLocation:
                guard value.count == 1 else { return [.error(.malformedSensorLocation(length: value.count))] }
                return [.sensorLocation(BodySensorLocation(rawValue: value[0]))]
            case .enableNotifications, .resetEnergyExpended:
                return nil  // these are writes; a read response cannot answer them
            }
        }
    }

    /// A Write Response arrived.
    public mutating func writeResponse(now: Duration) -> [HeartRateOutput] {
        complete(response: "write_response", now: now) { pending in
            guard case .write = pending.request else { return nil }
            switch pending.operation {
            case .enableNotifications: return [.subscribed]
            case .resetEnergyExpended: return [.energyExpendedReset]
            case .readSensorLocation: return nil
            }
        }
    }

    /// An Error Response arrived for the outstanding request. ATT has one request outstanding,
    /// so the response is taken as that request's answer even if its opcode or handle disagree;
    /// the event reports what the response said.
    public mutating func errorResponse(requestOpcode: UInt8, handle: UInt16, code: UInt8, now: Duration) -> [HeartRateOutput] {
        complete(response: "error_response", now: now) { pending in
            [.error(.attError(operation: pending.operation, requestOpcode: requestOpcode, handle: handle, code: code))]
        }
    }

    /// A Handle Value Notification arrived. Notifications of other handles are not this core's
    /// business (the host may route several services through one link) and are ignored.
    public mutating func notification(handle: UInt16, value: [UInt8], now: Duration) -> [HeartRateOutput] {
        guard case .connected(var link) = state, handle == link.handles.measurement else { return [] }
        var outputs: [HeartRateOutput] = []
        // Any notification on the measurement handle is a sign of life, a malformed one too:
        // the watch is about the sensor speaking, not about what it says.
        switch link.subscription {
        case .receiving:
            link.subscription = .receiving(since: now)
        case .silent(let since):
            outputs.append(.event(.dataResumed(silentFor: now - since)))
            link.subscription = .receiving(since: now)
        case .enabling, .refused:
            break  // the timer starts when the CCCD write is acknowledged, not before
        }
        do {
            let measurement = try HeartRateMeasurement(parsing: value)
            outputs.append(.event(.measurement(measurement)))
            if let detected = measurement.sensorContact.isDetected {
                if let previous = link.contactDetected, previous != detected {
                    outputs.append(.event(.sensorContactChanged(detected: detected)))
                }
                link.contactDetected = detected
            }
        } catch {
            outputs.append(.event(.error(.malformedMeasurement(error))))
        }
        state = .connected(link)
        return outputs
    }

    /// The link went down. Outstanding and queued requests are dropped (ATT transactions do not
    /// survive the link) and the no-data timer stops; `start` may be called again on a new link.
    public mutating func disconnected(now: Duration) -> [HeartRateOutput] {
        state = .idle
        return []
    }

    /// The timer armed at `nextDeadline` fired. Emits `no_data` once when `now` has reached the
    /// deadline; a call before it (a host timer firing early, or a stale timer) does nothing.
    public mutating func timeout(now: Duration) -> [HeartRateOutput] {
        guard case .connected(var link) = state, case .receiving(let since) = link.subscription,
            now >= since + configuration.noDataTimeout
        else { return [] }
        link.subscription = .silent(since: since)
        state = .connected(link)
        return [.event(.noData(silentFor: now - since))]
    }

    // MARK: - Internals

    /// Queues the request of an app call, or reports why it cannot be made.
    private mutating func enqueue(_ operation: HeartRateOperation, request: (HeartRateHandles) -> GATTRequest?) -> [HeartRateOutput] {
        guard case .connected(var link) = state else { return [.event(.error(.notConnected(operation: operation)))] }
        guard let gattRequest = request(link.handles) else { return [.event(.error(.notSupported(operation: operation)))] }
        link.queue.append(PendingRequest(operation: operation, request: gattRequest))
        var outputs: [HeartRateOutput] = []
        link.sendNext(into: &outputs)
        state = .connected(link)
        return outputs
    }

    /// Finishes the outstanding request with a response. `outcome` gives the events, or nil when
    /// this kind of response cannot answer that request (then it is reported and the request
    /// stays outstanding, since its real answer may still come).
    private mutating func complete(
        response: String, now: Duration, outcome: (PendingRequest) -> [HeartRateEvent]?
    ) -> [HeartRateOutput] {
        guard case .connected(var link) = state, let pending = link.inFlight, let events = outcome(pending) else {
            return [.event(.error(.unexpectedResponse(response: response)))]
        }
        link.inFlight = nil
        if pending.operation == .enableNotifications {
            // The watch counts from the acknowledgement: that is when the sensor starts notifying.
            link.subscription = events == [.subscribed] ? .receiving(since: now) : .refused
        }
        var outputs = events.map(HeartRateOutput.event)
        link.sendNext(into: &outputs)
        state = .connected(link)
        return outputs
    }
}

extension HeartRateClient {
    /// The client's state: nothing, or a link with everything that link needs.
    enum State: Sendable {
        /// No link: before `start`, or after `disconnected`.
        case idle
        /// A link is up.
        case connected(Link)
    }

    /// Where the notification subscription stands; the no-data watch lives here because it only
    /// means something while notifications are enabled.
    enum Subscription: Equatable, Sendable {
        /// The CCCD write is queued or outstanding.
        case enabling
        /// Notifications are on; `since` is the last notification, or the acknowledgement when
        /// none came yet. The deadline is `since` + the timeout.
        case receiving(since: Duration)
        /// `no_data` was reported; `since` is still the last sign of life, for `data_resumed`.
        case silent(since: Duration)
        /// The CCCD write was refused: no notifications to wait for, so no timer.
        case refused
    }

    /// A request and the procedure it belongs to, so its response can be interpreted.
    struct PendingRequest: Equatable, Sendable {
        var operation: HeartRateOperation
        var request: GATTRequest
    }

    /// Everything a live link needs.
    struct Link: Sendable {
        var handles: HeartRateHandles
        /// The one request the server has not answered yet.
        var inFlight: PendingRequest?
        /// Requests waiting for `inFlight` to be answered, oldest first.
        var queue: [PendingRequest] = []
        var subscription: Subscription = .enabling
        /// The last contact status of a sensor that supports contact detection; nil before the
        /// first such measurement, so the first one sets the baseline without an event.
        var contactDetected: Bool?

        init(handles: HeartRateHandles) { self.handles = handles }

        /// Sends the next queued request if none is outstanding.
        mutating func sendNext(into outputs: inout [HeartRateOutput]) {
            guard inFlight == nil, !queue.isEmpty else { return }
            let next = queue.removeFirst()
            inFlight = next
            outputs.append(.request(next.request))
        }
    }
}
