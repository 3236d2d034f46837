import MonkeyC

// Watch → phone transfers (docs/connectiq-link.md, "What the watch sends"), plain (flags 0x00) or
// encrypted (flag 0x02, key from a preceding `F·c 05 key isResponse`):
//
//   watch: [F·c 05 key r]   phone: F·c 02 05 00 00
//   watch: F·c 00 flags len phone: F·c 02 00 status 00      (status 0, 5 out of memory, 6 no key)
//   watch: data seq 0…14    phone: F·c 02 01 00 0E after each seq-14 packet
//   watch: F·c 01 seq crc   phone: F·c 02 02 status seq     (status 0, 2 CRC failure, 3 not started)
//
// Plus: an ack request is answered with ack type 3, capabilities with ack type 4, a key request
// with a fresh key packet `F·c 05 key 01`. A transfer stalled for `stepTimeout` is dropped (the
// inbound timer, Timers.swift).

extension MessagingCore {
    mutating func handleControl(_ control: LinkControl, connection: UInt8, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        // Only a violation's detail names the packet: written out then, not for every packet.
        var summary: String { LinkPacket.control(connection: connection, control).summary }
        guard let (channel, held) = devices[index].openChannel(connection: connection) else {
            return [.event(.violation(device, .unknownConnection, detail: "\(summary): no app holds connection \(connection)"))]
        }
        func answer(_ reply: LinkControl) -> MessagingAction {
            .write(device, LinkPacket.control(connection: connection, reply).encode())
        }
        // The cases below change `open` and store it back before they return; the ack case leaves
        // the storing to handleAck, which may close the channel instead.
        var open = held
        switch control {
        case let .ack(type, status, sequence):
            return handleAck(type: type, status: status, sequence: sequence, on: held, deviceAt: index, channelAt: channel, now: now)

        case .ackRequest(let sequence):
            return [answer(.ack(type: .ackRequest, status: .success, sequence: sequence))]

        case .capabilities:
            return [answer(.ack(type: .capabilities, status: .success, sequence: 0))]

        case .encryptionKey(let key, _):
            open.inboundKey = key
            devices[index].channels[channel].state = .open(open)
            return [answer(.ack(type: .encryptionKey, status: .success, sequence: 0))]

        case .keyRequest:
            let key = keySource.nextKey()
            open.inboundKey = key
            devices[index].channels[channel].state = .open(open)
            return [answer(.encryptionKey(key: key, isResponse: true))]

        case let .first(flags, length):
            // Every way out of this case keeps what it did to `open`: a refused `first` still ends
            // the transfer it interrupted.
            defer { devices[index].channels[channel].state = .open(open) }
            var actions: [MessagingAction] = []
            if let under = open.inbound {
                actions.append(.event(.violation(device, .unexpectedTransferPacket,
                    detail: "\(summary) while a transfer of \(under.length) bytes is under way (\(under.received.count) received); starting over")))
                open.inbound = nil
            }
            var key: [UInt8]?
            if flags.contains(.encrypted) {
                guard let stored = open.inboundKey else {
                    actions.append(answer(.ack(type: .first, status: .noEncryptionKey, sequence: 0)))
                    actions.append(.event(.violation(device, .missingEncryptionKey, detail: "\(summary) without a preceding key packet")))
                    return actions
                }
                key = stored
            }
            let limit = max(8, (configuration.maximumMessageBytes + 3) / 4 * 4)
            guard Int(length) <= limit else {
                actions.append(answer(.ack(type: .first, status: .outOfMemory, sequence: 0)))
                actions.append(.event(.violation(device, .messageTooLarge, detail: "\(summary); the phone accepts at most \(limit) bytes")))
                return actions
            }
            if key != nil { open.inboundKey = nil }
            open.inbound = InboundTransfer(flags: flags, length: Int(length), key: key, deadline: armInboundTimer(now: now))
            actions.append(answer(.ack(type: .first, status: .success, sequence: 0)))
            return actions

        case let .last(sequence, crc):
            guard let transfer = open.inbound else {
                return [
                    answer(.ack(type: .last, status: .transferNotStarted, sequence: sequence)),
                    .event(.violation(device, .unexpectedTransferPacket, detail: "\(summary) without a first")),
                ]
            }
            // The transfer ends here whatever the checks below find; so does its inbound timer.
            open.inbound = nil
            devices[index].channels[channel].state = .open(open)
            var actions: [MessagingAction] = []
            let expectedSequence = transfer.packets == 0 ? 0 : UInt8((transfer.packets - 1) % LinkPacket.sequenceModulus)
            if sequence != expectedSequence {
                actions.append(.event(.violation(device, .sequenceMismatch, detail: "\(summary); the final data packet had seq \(expectedSequence)")))
            }
            guard transfer.received.count == transfer.length else {
                actions.append(answer(.ack(type: .last, status: .crcFailure, sequence: sequence)))
                actions.append(.event(.violation(device, .lengthMismatch,
                    detail: "\(summary) after \(transfer.received.count) of the \(transfer.length) bytes first announced")))
                return actions
            }
            let actual = CRC16ARC.checksum(transfer.received)
            guard actual == crc else {
                actions.append(answer(.ack(type: .last, status: .crcFailure, sequence: sequence)))
                actions.append(.event(.violation(device, .badCRC,
                    detail: "\(summary); the \(transfer.length) bytes received have CRC 0x\(String(actual, radix: 16))")))
                return actions
            }
            actions.append(answer(.ack(type: .last, status: .success, sequence: sequence)))
            actions += deliver(transfer, deviceAt: index, channelAt: channel)
            return actions
        }
    }

    mutating func handleData(sequence: UInt8, connection: UInt8, payload: [UInt8], deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        // Only a violation's detail names the packet: written out then, not for every packet.
        var summary: String { LinkPacket.data(sequence: sequence, connection: connection, payload: payload).summary }
        guard let (channel, held) = devices[index].openChannel(connection: connection) else {
            return [.event(.violation(device, .unknownConnection, detail: "\(summary): no app holds connection \(connection)"))]
        }
        guard var transfer = held.inbound else {
            return [.event(.violation(device, .unexpectedTransferPacket, detail: "\(summary) without a first"))]
        }
        let expected = UInt8(transfer.packets % LinkPacket.sequenceModulus)
        guard sequence == expected else {
            return [.event(.violation(device, .sequenceOutsideWindow, detail: "\(summary); expected seq \(expected); packet ignored"))]
        }
        guard transfer.received.count + payload.count <= transfer.length else {
            return [.event(.violation(device, .lengthMismatch,
                detail: "\(summary) would exceed the \(transfer.length) bytes first announced (\(transfer.received.count) received); packet ignored"))]
        }
        transfer.received += payload
        transfer.packets += 1
        transfer.deadline = armInboundTimer(now: now)
        var open = held
        open.inbound = transfer
        devices[index].channels[channel].state = .open(open)
        let window = min(max(configuration.windowSize, 1), LinkPacket.sequenceModulus)
        guard transfer.packets % window == 0 else { return [] }
        return [.write(device, LinkPacket.control(connection: connection, .ack(type: .data, status: .success, sequence: sequence)).encode())]
    }

    /// Decrypts and decodes a complete transfer and hands the value to the app's listener.
    private func deliver(_ transfer: InboundTransfer, deviceAt index: Int, channelAt channel: Int) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        var plaintext = transfer.received
        if let key = transfer.key {
            do {
                plaintext = try XXTEA.decrypt(transfer.received, key: key)
            } catch {
                return [.event(.violation(device, .undecodableMessage, detail: "message from \(app) cannot be decrypted: \(error)"))]
            }
        }
        let value: MonkeyCValue
        do {
            value = try MonkeyCSerialization.decode(plaintext)
        } catch {
            return [.event(.violation(device, .undecodableMessage, detail: "message from \(app) is not a Monkey C value: \(error)"))]
        }
        if let listener = listeners[app]?.first {
            return [.event(.messageReceived(app, listener, value))]
        }
        return [.event(.messageUnclaimed(app, value))]
    }
}
