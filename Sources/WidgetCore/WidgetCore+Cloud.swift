// The IoT cloud over MQTT: the connection and its news, requests and their one result,
// notifications, and what the widget shows of devices and scenes.

extension WidgetCore {
    // MARK: - Host inputs: the connection

    /// The MQTT connection asked for by ``WidgetAction/mqttConnect(clientID:)`` is up (CONNACK
    /// accepted): the core subscribes to its response topic and the properties and status topics.
    public mutating func mqttConnected(now: Duration) -> [WidgetAction] {
        begin(now)
        guard case .connecting(let attempt) = phase else {
            violation(.unexpectedConnectionEvent, "mqttConnected while \(phase.state); the core reports connections only after it asked for one (mqttConnect)")
            return finish()
        }
        setPhase(.subscribing(attempt))
        output.mqtt.append(.mqttSubscribe(topics: subscriptionTopics))
        return finish()
    }

    /// The broker granted the subscription (SUBACK): `topics` are the ones granted. With all three,
    /// the connection is `connected`: queued requests go out, and after a reconnection the core
    /// lists the devices again and re-reads the properties of the listed ones (notifications sent
    /// while it was away are lost). A topic refused is a `subscription-refused` violation: the core
    /// disconnects and tries again later.
    public mutating func mqttSubscribed(topics granted: [String], now: Duration) -> [WidgetAction] {
        begin(now)
        guard case .subscribing(let attempt) = phase else {
            violation(.unexpectedConnectionEvent, "mqttSubscribed while \(phase.state); the core subscribes only after mqttConnected")
            return finish()
        }
        let missing = subscriptionTopics.filter { !granted.contains($0) }
        guard missing.isEmpty else {
            violation(.subscriptionRefused, "the broker did not grant \(missing); the core disconnects and tries again")
            output.mqtt.append(.mqttDisconnect)
            connectionLost(after: attempt)
            return finish()
        }
        setPhase(.connected)
        for index in requests.indices where requests[index].publishedAt == nil {
            publish(at: index)
        }
        if attempt.history == .connectedBefore { catchUp() }
        return finish()
    }

    /// The connection dropped or could not be opened. Requests published on it fail with
    /// `connectionLost` (their outcome is unknown); queued ones wait. The core reconnects after
    /// ``WidgetConfiguration/reconnectDelay``, doubling the wait after each failed attempt.
    /// Ignored when the core closed or never opened the connection.
    public mutating func mqttDisconnected(now: Duration) -> [WidgetAction] {
        begin(now)
        guard let attempt = phase.openAttempt else { return finish() }
        connectionLost(after: attempt)
        return finish()
    }

    /// A message arrived on a subscribed topic: a response to this client, or a properties or status
    /// notification. What does not decode is a `malformed-message` violation.
    public mutating func mqttMessageReceived(topic: String, payload: [UInt8], now: Duration) -> [WidgetAction] {
        begin(now)
        guard phase.state == .connected || phase.state == .subscribing else {
            violation(.messageWhileDisconnected, "\(payload.count)-byte message on \(topic) while \(phase.state); report messages only between mqttConnected and mqttDisconnected")
            return finish()
        }
        if topic == topics.response(clientID: clientID) {
            receiveResponse(payload)
        } else if topic == topics.properties {
            receivePropertiesNotification(payload)
        } else if topic == topics.status {
            receiveStatusNotification(payload)
        } else {
            violation(.unexpectedTopic, "a message on \(topic); this client subscribes only to \(subscriptionTopics)")
        }
        return finish()
    }

    // MARK: - The connection

    /// The response, properties and status topics.
    var subscriptionTopics: [String] {
        [topics.response(clientID: clientID), topics.properties, topics.status]
    }

    /// Asks for a connection: the start's first try, or the next try of a reconnection.
    mutating func connect(_ attempt: ConnectionAttempt) {
        setPhase(.connecting(attempt))
        output.mqtt.append(.mqttConnect(clientID: clientID))
    }

    /// The open (or opening) connection is gone: one more failure, a back-off that doubles with
    /// each failure since the last `connected`, and the requests published on it fail.
    mutating func connectionLost(after current: ConnectionAttempt) {
        var attempt = current
        attempt.failures += 1
        var delay = configuration.reconnectDelay
        for _ in 1..<attempt.failures where delay < configuration.maximumReconnectDelay { delay = delay * 2 }
        delay = min(delay, configuration.maximumReconnectDelay)
        setPhase(.waitingToReconnect(attempt, deadline: clock + delay))
        let published = requests.filter { $0.publishedAt != nil }.map(\.sequence)
        for sequence in published { completeRequest(sequence, .failure(.connectionLost)) }
    }

    /// After a reconnection: list the devices again and re-read the listed ones' properties.
    mutating func catchUp() {
        _ = issue(.queryComponentProduct, params: .object([:]), origin: .reconnect)
        for device in widgetDevices {
            _ = issueRead(iotId: device.iotId, productKey: device.productKey, origin: .reconnect)
        }
    }

    // MARK: - Requests

    /// Makes a request, publishes it when connected (queues it otherwise), returns its id.
    mutating func issue(_ path: WidgetAPIPath, params: WidgetJSON, origin: WidgetRequestOrigin,
                        iotId: String? = nil, setProperties: Set<String> = []) -> WidgetRequestID {
        let sequence = nextSequence
        let id = WidgetRequestID(rawValue: takeID())
        requests.append(PendingRequest(id: id, sequence: sequence, path: path, params: params, origin: origin,
                                       deadline: clock + configuration.requestTimeout, iotId: iotId, setProperties: setProperties))
        output.events.append(.requestIssued(id, path: path, origin: origin))
        if phase == .connected { publish(at: requests.count - 1) }
        return id
    }

    mutating func issueRead(iotId: String, productKey: String, origin: WidgetRequestOrigin) -> WidgetRequestID {
        let params: WidgetJSON = .object([
            "iotId": .string(iotId), "productKey": .string(productKey),
            "query": .object(["dataType": .string(configuration.propertyDataType), "I18Language": .string(configuration.propertyLanguage)]),
        ])
        return issue(.queryComponentProperty, params: params, origin: origin, iotId: iotId)
    }

    mutating func publish(at index: Int) {
        let request = requests[index]
        requests[index].publishedAt = clock
        output.mqtt.append(.mqttPublish(topic: topics.request(clientID: clientID),
                                        payload: MQTTCodec.requestPayload(id: request.id, path: request.path, params: request.params),
                                        qos: configuration.requestQoS))
    }

    /// Ends a request with its one result, then what follows from it: the shown lists and
    /// properties, the refresh round, held notifications.
    mutating func completeRequest(_ sequence: UInt64, _ result: Result<WidgetResponse, WidgetRequestFailure>,
                                  followedBy followers: [WidgetEvent] = []) {
        guard let index = requests.firstIndex(where: { $0.sequence == sequence }) else { return }
        let request = requests.remove(at: index)
        rememberFinished(sequence, result.isSuccess ? .succeeded : .failed)
        switch result {
        case .success(let response):
            output.events.append(.requestSucceeded(request.id, response))
            switch response {
            case .devices(let devices): showDevices(devices, listedBy: request)
            case .scenes(let scenes): showScenes(scenes)
            default: break
            }
        case .failure(let failure):
            output.events.append(.requestFailed(request.id, failure))
        }
        output.events += followers
        roundRequestFinished(request, result)
        releaseHeldUpdates()
    }

    // MARK: - Responses

    mutating func receiveResponse(_ payload: [UInt8]) {
        let envelope: ResponseEnvelope
        switch MQTTCodec.decodeResponse(payload) {
        case .success(let decoded):
            envelope = decoded
        case .failure(let problem):
            violation(.malformedMessage, problem.detail)
            if let id = problem.responseID, let request = pendingRequest(forResponseID: id) {
                completeRequest(request.sequence, .failure(.malformedResponse(problem.detail)))
            }
            return
        }
        let id = WidgetRequestID(rawValue: envelope.id)
        let sequence: UInt64
        switch classifyResponseID(envelope.id) {
        case .otherIncarnation:
            output.events.append(.responseIgnored(id, .otherIncarnation))
            return
        case .thisIncarnation(nil):
            violation(.unknownResponseID, "a response for \(id), which has this process's incarnation but no sequence number after it")
            return
        case .thisIncarnation(let number?):
            sequence = number
        }
        guard let request = requests.first(where: { $0.sequence == sequence }), request.publishedAt != nil else {
            switch finished[sequence] {
            case .succeeded?: output.events.append(.responseIgnored(id, .duplicate))
            case .failed?: output.events.append(.responseIgnored(id, .afterFailure))
            case nil: violation(.unknownResponseID, "a response for \(id), which this process has not published (or answered too long ago)")
            }
            return
        }
        guard envelope.code == 200 else {
            completeRequest(sequence, .failure(.cloud(code: envelope.code, message: envelope.message)))
            return
        }
        let decoded: Result<WidgetResponse, PayloadProblem>
        var followers: [WidgetEvent] = []
        switch request.path {
        case .queryComponentProduct:
            decoded = MQTTCodec.decodeDevices(envelope.data).map(WidgetResponse.devices)
        case .appWidgetList:
            decoded = MQTTCodec.decodeScenes(envelope.data).map(WidgetResponse.scenes)
        case .sceneQuery:
            decoded = MQTTCodec.decodeScenePage(envelope.data).map(WidgetResponse.scenePage)
        case .queryComponentProperty:
            switch MQTTCodec.decodeProperties(envelope.data, what: "the property read of \(request.iotId ?? "?")") {
            case .success(let (iotId, items)) where iotId == request.iotId:
                // Merged first, so the result carries what is shown; the changes follow the result.
                // Values of properties a pending set is changing wait for its response, as a
                // notification would.
                let (ready, waiting) = partitionBySets(iotId: iotId, items)
                let merge = mergeProperties(iotId: iotId, ready)
                followers = merge.stale
                if !merge.changed.isEmpty { followers.append(.devicePropertiesChanged(iotId: iotId, merge.changed)) }
                if let (blocker, held) = waiting {
                    self.held.append(HeldUpdate(iotId: iotId, items: held))
                    followers.append(.updateHeld(iotId: iotId, behind: blocker))
                }
                decoded = .success(.properties(iotId: iotId, deviceStates[iotId]?.properties ?? [:]))
            case .success(let (iotId, _)):
                decoded = .failure(PayloadProblem("the property read of \(request.iotId ?? "?") answered for device \(iotId)"))
            case .failure(let problem):
                decoded = .failure(problem)
            }
        case .updateComponentProduct, .appWidgetCreate, .setProperties:
            decoded = .success(.accepted)
        case .sceneFire:
            decoded = MQTTCodec.decodeFire(envelope.data).map { WidgetResponse.sceneFired(skipped: $0) }
        }
        switch decoded {
        case .success(let response):
            completeRequest(sequence, .success(response), followedBy: followers)
        case .failure(let problem):
            failMalformed(request, problem.detail)
        }
    }

    mutating func failMalformed(_ request: PendingRequest, _ detail: String) {
        violation(.malformedMessage, "\(request.id) (\(request.path)): \(detail)")
        completeRequest(request.sequence, .failure(.malformedResponse(detail)))
    }

    func pendingRequest(forResponseID id: String) -> PendingRequest? {
        guard case .thisIncarnation(let sequence?) = classifyResponseID(id) else { return nil }
        return requests.first { $0.sequence == sequence && $0.publishedAt != nil }
    }

    // MARK: - What is shown

    mutating func showDevices(_ devices: [WidgetDevice], listedBy request: PendingRequest) {
        if devices != widgetDevices {
            widgetDevices = devices
            output.events.append(.widgetDevicesChanged(devices))
        }
        // A listed status has no time: it is taken unless a timed status arrived after the list
        // was asked for (that one may be newer than the list).
        let askedAt = request.publishedAt ?? clock
        for device in devices {
            var state = deviceStates[device.iotId] ?? DeviceState()
            if let takenAt = state.statusTakenAt, takenAt >= askedAt { continue }
            let listed = WidgetDeviceStatus(code: device.status, time: nil)
            if state.status != listed {
                state.status = listed
                deviceStates[device.iotId] = state
                output.events.append(.deviceStatusChanged(iotId: device.iotId, listed))
            } else {
                deviceStates[device.iotId] = state
            }
        }
    }

    mutating func showScenes(_ scenes: [WidgetScene]) {
        guard scenes != widgetScenes else { return }
        widgetScenes = scenes
        output.events.append(.widgetScenesChanged(scenes))
    }

    /// Takes the items newer than those shown; returns what changed and what was refused as stale
    /// (equal time and value: a repeat, dropped silently).
    mutating func mergeProperties(iotId: String, _ items: [String: WidgetPropertyValue]) -> (changed: [String: WidgetPropertyValue], stale: [WidgetEvent]) {
        var state = deviceStates[iotId] ?? DeviceState()
        var changed: [String: WidgetPropertyValue] = [:]
        var stale: [WidgetEvent] = []
        for name in items.keys.sorted() {
            let item = items[name]!
            if let shown = state.properties[name] {
                if item.time < shown.time || (item.time == shown.time && item.value != shown.value) {
                    stale.append(.staleUpdateIgnored(iotId: iotId, property: name, time: item.time, shownTime: shown.time))
                    continue
                }
                if item.time == shown.time { continue }
            }
            state.properties[name] = item
            changed[name] = item
        }
        deviceStates[iotId] = state
        return (changed, stale)
    }

    mutating func emit(_ merge: (changed: [String: WidgetPropertyValue], stale: [WidgetEvent]), iotId: String) {
        output.events += merge.stale
        if !merge.changed.isEmpty { output.events.append(.devicePropertiesChanged(iotId: iotId, merge.changed)) }
    }

    // MARK: - Notifications

    mutating func receivePropertiesNotification(_ payload: [UInt8]) {
        let decoded = MQTTCodec.parseObject(payload, what: "the properties notification").flatMap {
            MQTTCodec.decodeProperties(.object($0), what: "the properties notification")
        }
        switch decoded {
        case .failure(let problem):
            violation(.malformedMessage, problem.detail)
        case .success(let (iotId, items)):
            let (ready, waiting) = partitionBySets(iotId: iotId, items)
            if let (blocker, waitingItems) = waiting {
                held.append(HeldUpdate(iotId: iotId, items: waitingItems))
                output.events.append(.updateHeld(iotId: iotId, behind: blocker))
            }
            if !ready.isEmpty { emit(mergeProperties(iotId: iotId, ready), iotId: iotId) }
        }
    }

    /// Splits items into those that can be shown now and those a published property set on the
    /// device is changing (they wait for its response; `blocker` is the first such set).
    func partitionBySets(iotId: String, _ items: [String: WidgetPropertyValue])
        -> (ready: [String: WidgetPropertyValue], waiting: (blocker: WidgetRequestID, items: [String: WidgetPropertyValue])?) {
        var ready: [String: WidgetPropertyValue] = [:]
        var waiting: [String: WidgetPropertyValue] = [:]
        var blocker: WidgetRequestID?
        for (name, item) in items {
            if let set = blockingSet(iotId: iotId, properties: [name]) {
                waiting[name] = item
                if blocker == nil || set.sequence < sequence(ofPending: blocker!) { blocker = set.id }
            } else {
                ready[name] = item
            }
        }
        guard let blocker else { return (ready, nil) }
        return (ready, (blocker, waiting))
    }

    func sequence(ofPending id: WidgetRequestID) -> UInt64 {
        requests.first { $0.id == id }?.sequence ?? .max
    }

    /// A published property set on `iotId` touching any of `properties`, whose response is awaited.
    func blockingSet(iotId: String, properties: Set<String>) -> PendingRequest? {
        requests.first { $0.path == .setProperties && $0.publishedAt != nil && $0.iotId == iotId && !$0.setProperties.isDisjoint(with: properties) }
    }

    /// Shows held notifications no set holds back any more, in arrival order.
    mutating func releaseHeldUpdates() {
        var index = 0
        while index < held.count {
            let notification = held[index]
            if blockingSet(iotId: notification.iotId, properties: Set(notification.items.keys)) == nil {
                held.remove(at: index)
                emit(mergeProperties(iotId: notification.iotId, notification.items), iotId: notification.iotId)
            } else {
                index += 1
            }
        }
    }

    mutating func receiveStatusNotification(_ payload: [UInt8]) {
        let decoded = MQTTCodec.parseObject(payload, what: "the status notification").flatMap {
            MQTTCodec.decodeStatus(.object($0), what: "the status notification")
        }
        switch decoded {
        case .failure(let problem):
            violation(.malformedMessage, problem.detail)
        case .success(let (iotId, code, time)):
            guard code == 1 || code == 3 else {
                violation(.unknownStatusValue, "status \(code) for \(iotId); thing/status carries 1 (online) or 3 (offline)")
                return
            }
            var state = deviceStates[iotId] ?? DeviceState()
            if let watermark = state.statusWatermark, time <= watermark {
                if time < watermark || state.status?.code != Int(code) || state.status?.time != time {
                    output.events.append(.staleUpdateIgnored(iotId: iotId, property: nil, time: time, shownTime: watermark))
                }
                return
            }
            let status = WidgetDeviceStatus(code: Int(code), time: time)
            state.status = status
            state.statusWatermark = time
            state.statusTakenAt = clock
            deviceStates[iotId] = state
            output.events.append(.deviceStatusChanged(iotId: iotId, status))
        }
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
