import Dissectors

// The ATT requests of the central's GATT procedures (Core v6.0 Vol 3 Part G §4): one request in
// flight at a time, each matched with the recorded central's, answered as the recording (or the
// database) says, and the procedure's end reported as a link event. The link's state and its
// clock are in VirtualPeripheralLink.swift; this file is the request/response engine.
extension VirtualPeripheralLink {
    /// Sends the queued requests while none is in flight (ATT allows one at a time), each matched
    /// with the recorded central's and given the answer the recording or the database holds, due
    /// at the recorded delay.
    mutating func sendNext(now: Int64) -> [VirtualLinkEvent] {
        guard case .connected(var connection) = phase, connection.inFlight == nil, !connection.queue.isEmpty else { return [] }
        var events: [VirtualLinkEvent] = []
        while connection.inFlight == nil, !connection.queue.isEmpty {
            var procedure = connection.queue.removeFirst()
            guard let (pdu, answer) = request(for: &procedure, mtu: connection.mtu) else {
                // Nothing to ask (a characteristic with no room for descriptors): done at once,
                // and the loop goes on to the next (no recursion: a queue may be long).
                events += finish(procedure, error: nil, frame: nil)
                continue
            }
            let matchEvent = match(pdu, in: &connection)
            events.append(matchEvent)
            var recordedAnswer: RecordedRequest?
            if case .requestSent(_, let matched?, _) = matchEvent { recordedAnswer = matched }
            var finalAnswer = answer
            var frame: Int?
            var at = after(now, exchanges.roundTripNs)
            if let recorded = recordedAnswer, let responseFrame = recorded.responseFrame, let responseTime = recorded.responseTimeNs {
                frame = responseFrame
                at = max(after(now, elapsedNs(from: recorded.timeNs, to: responseTime)), responseTime)
                let opcode = recorded.responseOpcode ?? 0
                if let code = faults.attError(ofFrame: responseFrame, opcode: opcode, capturedAtNs: responseTime) { finalAnswer = .error(code) }
                let delays = faults.deliveries(ofFrame: responseFrame, opcode: opcode, capturedAtNs: responseTime)
                if delays.isEmpty {
                    counts.lostToFaults += 1
                    connection.inFlight = InFlight(procedure: procedure, answer: finalAnswer, frame: frame, sentAt: now)
                    phase = .connected(connection)
                    schedule(at: after(now, Self.attTransactionTimeoutNs), .attTimeout)
                    return events
                }
                at = after(at, delays.min() ?? 0)
            } else {
                counts.unanswered += 1
                if case .requestSent(_, nil, _) = matchEvent, !Self.isDiscovery(procedure.operation) {
                    events += unansweredOnce(Self.describe(procedure.operation) + ": the recording holds no such request; answered from the database")
                }
            }
            connection.inFlight = InFlight(procedure: procedure, answer: finalAnswer, frame: frame, sentAt: now)
            schedule(at: at, .response)
        }
        phase = .connected(connection)
        return events
    }

    /// The request a procedure sends next and the answer the database and recording give it;
    /// `nil` when the procedure has nothing (more) to ask.
    private mutating func request(for procedure: inout Procedure, mtu: Int) -> (pdu: [UInt8], answer: Answer)? {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        switch procedure.operation {
        case .exchangeMTU(let client):
            let server = emulator.script.serverMTU ?? 23
            return ([0x02] + le(UInt16(clamping: client)), .mtu(max(23, min(client, server))))
        case .discoverServices(let uuids):
            if let uuids, !uuids.isEmpty {
                guard procedure.uuidIndex < uuids.count else { return nil }
                let uuid = uuids[procedure.uuidIndex]
                let found = database.primaryServices(uuid, from: procedure.next, through: 0xFFFF, mtu: mtu)
                return ([0x06] + le(procedure.next) + le(0xFFFF) + le(0x2800) + uuid.littleEndianAttributeBytes,
                        found.isEmpty ? .error(0x0A) : .services(found))
            }
            let found = database.primaryServices(from: procedure.next, through: 0xFFFF, mtu: mtu)
            return ([0x10] + le(procedure.next) + le(0xFFFF) + le(0x2800), found.isEmpty ? .error(0x0A) : .services(found))
        case .discoverIncludedServices(let start):
            guard let service = database.service(startingAt: start) else { return nil }
            // The emulated database holds no «Include» declarations: the peripheral answers none.
            return ([0x08] + le(max(procedure.next, service.startHandle)) + le(service.endHandle) + le(0x2802), .error(0x0A))
        case .discoverCharacteristics(let start, _):
            guard let service = database.service(startingAt: start) else { return nil }
            let from = max(procedure.next, service.startHandle)
            guard from <= service.endHandle else { return nil }
            let found = database.characteristicDeclarations(from: from, through: service.endHandle, mtu: mtu)
            return ([0x08] + le(from) + le(service.endHandle) + le(0x2803), found.isEmpty ? .error(0x0A) : .characteristics(found))
        case .discoverDescriptors(let valueHandle):
            guard let characteristic = database.characteristic(valueHandle: valueHandle) else { return nil }
            // A value at the last handle has no room for descriptors.
            guard valueHandle < 0xFFFF else { return nil }
            let end = database.descriptorRangeEnd(of: characteristic)
            let from = max(procedure.next, valueHandle + 1)
            guard from <= end else { return nil }
            let found = database.descriptors(from: from, through: end, mtu: mtu)
            return ([0x04] + le(from) + le(end), found.isEmpty ? .error(0x0A) : .descriptors(found))
        case .read(let handle) where procedure.offset > 0:
            // The rest of a long value, by Read Blob Requests (Vol 3 Part G §4.8.3), as
            // CoreBluetooth reads a value that filled a Read Response.
            return ([0x0C] + le(handle) + le(UInt16(clamping: procedure.offset)), .value(procedure.value ?? []))
        case .read(let handle):
            let outcome = emulator.read(handle: handle)
            switch outcome.reply {
            case .value(let value):
                if outcome.source == .unanswered {
                    // Never read in the capture: a handle of the database reads as empty; any other is not there.
                    let known = database.characteristic(holding: handle) != nil
                    return ([0x0A] + le(handle), known ? .value([]) : .error(0x01))
                }
                return ([0x0A] + le(handle), .value(value))
            case .error(let code): return ([0x0A] + le(handle), .error(code))
            case .accept: return ([0x0A] + le(handle), .value([]))
            }
        case .setNotify(let valueHandle, true) where !procedure.anchored:
            procedure.anchored = true
            procedure.anchor = subscriptionAnchor(valueHandle: valueHandle)
            return request(for: &procedure, mtu: mtu)
        case .write(let handle, let value, _) where value.count > mtu - 3 && procedure.offset < value.count:
            // A long write (Vol 3 Part G §4.9.4): Prepare Write Requests of MTU − 5 bytes each,
            // echoed back, then one Execute Write Request.
            let end = min(value.count, procedure.offset + max(1, mtu - 5))
            return ([0x16] + le(handle) + le(UInt16(clamping: procedure.offset)) + value[procedure.offset..<end], .accepted)
        case .write(let handle, let value, _) where value.count > mtu - 3:
            let outcome = emulator.write(handle: handle, value: value)
            procedure.anchor = writeAnchor(outcome)
            if case .error(let code) = outcome.reply { return ([0x18, 0x01], .error(code)) }
            return ([0x18, 0x01], .accepted)
        case .write(let handle, let value, _):
            let outcome = emulator.write(handle: handle, value: value)
            procedure.anchor = writeAnchor(outcome)
            if case .error(let code) = outcome.reply { return ([0x12] + le(handle) + value, .error(code)) }
            if outcome.source == .unanswered, database.characteristic(holding: handle) == nil { return ([0x12] + le(handle) + value, .error(0x01)) }
            return ([0x12] + le(handle) + value, .accepted)
        case .setNotify(let valueHandle, let enabled):
            guard let characteristic = database.characteristic(valueHandle: valueHandle),
                  let cccd = characteristic.descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration })?.handle else { return nil }
            let bits: UInt8 = enabled ? (characteristic.properties & 0x10 != 0 ? 0x01 : 0x02) : 0x00
            let outcome = emulator.write(handle: cccd, value: [bits, 0x00])
            if case .error(let code) = outcome.reply { return ([0x12] + le(cccd) + [bits, 0x00], .error(code)) }
            return ([0x12] + le(cccd) + [bits, 0x00], .accepted)
        }
    }

    /// The answer of the request in flight has arrived: the procedure goes on, or ends with its event.
    mutating func completeInFlight(now: Int64) -> [VirtualLinkEvent] {
        guard case .connected(var connection) = phase, let inFlight = connection.inFlight else { return [] }
        connection.inFlight = nil
        var procedure = inFlight.procedure
        phase = .connected(connection)
        var events: [VirtualLinkEvent] = []
        switch (procedure.operation, inFlight.answer) {
        case (.exchangeMTU, .mtu(let mtu)):
            connection.mtu = mtu
            phase = .connected(connection)
            events.append(.mtuChanged(mtu))
            events += finish(procedure, error: nil, frame: inFlight.frame) + sendNext(now: now)
        case (.discoverServices(let uuids), .services(let found)):
            procedure.services += found
            // Past every handle the answer named: a recorded group that ends before it starts
            // must not send the procedure round again.
            let last = found.map { max($0.startHandle, $0.endHandle) }.max() ?? 0xFFFF
            if last < 0xFFFF {
                procedure.next = last + 1
            } else if let uuids, procedure.uuidIndex + 1 < uuids.count {
                // The database's end for this UUID: look for the next one from the start.
                procedure.uuidIndex += 1
                procedure.next = 1
            } else {
                return events + finish(procedure, error: nil, frame: inFlight.frame) + sendNext(now: now)
            }
            events += continueProcedure(procedure, now: now)
        case (.discoverServices(let uuids), .error(let code)):
            if code == 0x0A, let uuids, !uuids.isEmpty, procedure.uuidIndex + 1 < uuids.count {
                procedure.uuidIndex += 1
                procedure.next = 1
                events += continueProcedure(procedure, now: now)
            } else {
                events += finish(procedure, error: code == 0x0A ? nil : code, frame: inFlight.frame) + sendNext(now: now)
            }
        case (.discoverCharacteristics, .characteristics(let found)):
            procedure.characteristics += found
            // Vol 3 Part G §4.6.1: the next request starts after the last declaration found.
            let last = found.map(\.declarationHandle).max() ?? 0xFFFF
            guard last < 0xFFFF else { return events + finish(procedure, error: nil, frame: inFlight.frame) + sendNext(now: now) }
            procedure.next = last + 1
            events += continueProcedure(procedure, now: now)
        case (.discoverDescriptors, .descriptors(let found)):
            procedure.descriptors += found
            let last = found.map(\.handle).max() ?? 0xFFFF
            guard last < 0xFFFF else { return events + finish(procedure, error: nil, frame: inFlight.frame) + sendNext(now: now) }
            procedure.next = last + 1
            events += continueProcedure(procedure, now: now)
        case (.discoverCharacteristics, .error(let code)), (.discoverDescriptors, .error(let code)), (.discoverIncludedServices, .error(let code)):
            events += finish(procedure, error: code == 0x0A ? nil : code, frame: inFlight.frame) + sendNext(now: now)
        case (.read(let handle), .value(let value)):
            // A part that filled the response (ATT_MTU − 1 bytes) says there may be more.
            let part = connection.mtu - 1
            let end = min(value.count, procedure.offset + part)
            if end - procedure.offset == part, end <= 0xFFFF, value.count <= 0xFFFF {
                procedure.offset = end
                procedure.value = value
                events += continueProcedure(procedure, now: now)
            } else {
                events.append(.read(handle: handle, value: value, error: nil, frame: inFlight.frame))
                events += sendNext(now: now)
            }
        case (.read(let handle), .error(let code)):
            events.append(.read(handle: handle, value: nil, error: code, frame: inFlight.frame))
            events += sendNext(now: now)
        case (.write(_, let value, _), .accepted) where value.count > connection.mtu - 3 && procedure.offset < value.count:
            // A Prepare Write echoed: the next part, or the Execute Write.
            procedure.offset = min(value.count, procedure.offset + max(1, connection.mtu - 5))
            events += continueProcedure(procedure, now: now)
        case (.write(let handle, _, _), .accepted):
            events.append(.written(handle: handle, error: nil, frame: inFlight.frame))
            if let anchor = procedure.anchor { start(anchor, now: inFlight.sentAt) }
            events += sendNext(now: now)
        case (.write(let handle, _, _), .error(let code)):
            events.append(.written(handle: handle, error: code, frame: inFlight.frame))
            events += sendNext(now: now)
        case (.setNotify(let handle, let enabled), .accepted):
            if enabled { connection.notifying.insert(handle) } else { connection.notifying.remove(handle) }
            phase = .connected(connection)
            if enabled, let anchor = procedure.anchor { start(anchor, now: inFlight.sentAt) }
            events.append(.notificationState(handle: handle, enabled: enabled, error: nil))
            events += sendNext(now: now)
        case (.setNotify(let handle, let enabled), .error(let code)):
            events.append(.notificationState(handle: handle, enabled: enabled, error: code))
            events += sendNext(now: now)
        default:
            events += finish(procedure, error: 0x0E, frame: inFlight.frame) + sendNext(now: now)
        }
        return events
    }

    private mutating func continueProcedure(_ procedure: Procedure, now: Int64) -> [VirtualLinkEvent] {
        guard case .connected(var connection) = phase else { return [] }
        connection.queue.insert(procedure, at: 0)
        phase = .connected(connection)
        return sendNext(now: now)
    }

    /// Reports a procedure's end; the caller sends the next queued request.
    private func finish(_ procedure: Procedure, error: UInt8?, frame: Int?) -> [VirtualLinkEvent] {
        var events: [VirtualLinkEvent] = []
        switch procedure.operation {
        case .exchangeMTU: break
        case .discoverServices(let uuids):
            var found = procedure.services
            if let uuids, !uuids.isEmpty { found = found.filter { uuids.contains($0.uuid) } }
            events.append(.servicesDiscovered(found, error: error))
        case .discoverIncludedServices(let service):
            events.append(.includedServicesDiscovered(service: service, [], error: error))
        case .discoverCharacteristics(let service, let uuids):
            var found = procedure.characteristics
            if let uuids, !uuids.isEmpty { found = found.filter { uuids.contains($0.uuid) } }
            events.append(.characteristicsDiscovered(service: service, found, error: error))
        case .discoverDescriptors(let characteristic):
            events.append(.descriptorsDiscovered(characteristic: characteristic, procedure.descriptors, error: error))
        case .read(let handle):
            events.append(.read(handle: handle, value: nil, error: error ?? 0x01, frame: frame))
        case .write(let handle, _, _):
            events.append(.written(handle: handle, error: error ?? 0x01, frame: frame))
        case .setNotify(let handle, let enabled):
            // No CCCD to write: the characteristic neither notifies nor indicates.
            events.append(.notificationState(handle: handle, enabled: enabled, error: error ?? 0x06))
        }
        return events
    }

    /// Matches a request the central sends with the recorded central's next ones on its connection.
    mutating func match(_ pdu: [UInt8], in connection: inout Connection) -> VirtualLinkEvent {
        let recorded = exchanges.requests[connection.recorded] ?? []
        let isCommand = pdu.first == 0x52
        if isCommand { return .requestSent(pdu: pdu, matched: nil, expected: nil) }
        while connection.cursor < recorded.count, connection.matched.contains(connection.cursor) { connection.cursor += 1 }
        // A bounded look-ahead: a request made in another order still finds its recorded twin.
        let start = max(connection.cursor, connection.lastMatched - 64)
        let window = min(start, recorded.count)..<min(recorded.count, max(connection.cursor, connection.lastMatched) + 65)
        for index in window where !connection.matched.contains(index) && recorded[index].pdu == pdu {
            connection.matched.insert(index)
            connection.lastMatched = max(connection.lastMatched, index)
            counts.matched += 1
            return .requestSent(pdu: pdu, matched: recorded[index], expected: nil)
        }
        counts.diverged += 1
        let expected = (connection.lastMatched + 1..<recorded.count).first { !connection.matched.contains($0) } ?? connection.cursor
        return .requestSent(pdu: pdu, matched: nil, expected: expected < recorded.count ? recorded[expected] : nil)
    }
}
