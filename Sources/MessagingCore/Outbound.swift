// Phone → watch transfers (connectiq-link.md, "Order of a phone transfer"):
//
//   F·c 05 key 00           → ack type 5         (only when encrypting)
//   F·c 00 flags len        → ack type 0         (`transfer not started`: resend, `firstRetries` times)
//   data seq 0…14           → ack type 1 after each seq-14 packet, then the next window
//   F·c 01 seq crc          → ack type 2
//
// Each ack is awaited `stepTimeout`. Progress (acked bytes, total) at the start, after each window
// ack and after the final ack; one completion.

extension MessagingCore {
    /// Starts the next queued send of a channel when nothing is under way, opening the app's
    /// connection first when needed.
    mutating func pumpChannel(deviceAt index: Int, channelAt channel: Int, now: Duration) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        while devices[index].channels[channel].active == nil, !devices[index].channels[channel].outbox.isEmpty {
            guard devices[index].channels[channel].connection != nil else {
                if !devices[index].channels[channel].connecting {
                    devices[index].channels[channel].connecting = true
                    devices[index].commands.append(PendingCommand(kind: .connect, app: devices[index].channels[channel].app))
                    actions += pumpCommands(deviceAt: index, now: now)
                }
                return actions
            }
            let send = devices[index].channels[channel].outbox.removeFirst()
            actions += startTransfer(send, deviceAt: index, channelAt: channel, now: now)
        }
        return actions
    }

    private mutating func startTransfer(_ send: QueuedSend, deviceAt index: Int, channelAt channel: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        guard let connection = devices[index].channels[channel].connection else {
            preconditionFailure("MessagingCore.startTransfer: no connection")
        }
        var wire = send.serialized
        var flags: TransferFlags = []
        var key: [UInt8]?
        if configuration.encryptOutgoing {
            let fresh = keySource.nextKey()
            guard let ciphertext = try? XXTEA.encrypt(send.serialized, key: fresh) else {
                // Only a custom key source handing out a key that is not 16 bytes gets here.
                return [.event(.completion(send.id, app, .failureInternalError))]
            }
            wire = ciphertext
            flags = .encrypted
            key = fresh
        }
        let maxWrite = devices[index].maxWriteLength
        let large = devices[index].channels[channel].largePackets && maxWrite >= configuration.largePayload + 1
        let payloadSize = max(1, large ? configuration.largePayload : min(configuration.smallPayload, maxWrite - 1))
        var transfer = OutboundTransfer(
            id: send.id, wire: wire, flags: flags, payloadSize: payloadSize, stage: .awaitingFirstAck,
            deadline: now + configuration.stepTimeout)
        var actions: [MessagingAction] = [.event(.progress(send.id, app, sent: 0, total: wire.count))]
        if let key {
            transfer.stage = .awaitingKeyAck
            actions.append(.write(device, LinkPacket.control(connection: connection, .encryptionKey(key: key, isResponse: false)).encode()))
        } else {
            transfer.firstWrites = 1
            actions.append(.write(device, firstPacket(transfer, connection: connection)))
        }
        devices[index].channels[channel].active = transfer
        return actions
    }

    private func firstPacket(_ transfer: OutboundTransfer, connection: UInt8) -> [UInt8] {
        LinkPacket.control(connection: connection, .first(flags: transfer.flags, length: UInt32(transfer.wire.count))).encode()
    }

    /// An ack from the watch on a channel's connection.
    mutating func handleAck(
        type: AckType, status: AckStatus, sequence: UInt8, deviceAt index: Int, channelAt channel: Int, now: Duration
    ) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        let summary = LinkPacket.control(connection: devices[index].channels[channel].connection ?? 0, .ack(type: type, status: status, sequence: sequence)).summary
        guard var transfer = devices[index].channels[channel].active else {
            return [.event(.violation(device, .unexpectedAck, detail: "\(summary), but no transfer to \(app) is under way"))]
        }
        let expectedType: AckType, expectedSequence: UInt8
        switch transfer.stage {
        case .awaitingKeyAck: (expectedType, expectedSequence) = (.encryptionKey, 0)
        case .awaitingFirstAck: (expectedType, expectedSequence) = (.first, 0)
        case .awaitingWindowAck(let sequence): (expectedType, expectedSequence) = (.data, sequence)
        case .awaitingLastAck(let sequence): (expectedType, expectedSequence) = (.last, sequence)
        }
        guard type == expectedType else {
            return [.event(.violation(device, .unexpectedAck, detail: "\(summary) while waiting for an ack of type \(expectedType)"))]
        }
        var actions: [MessagingAction] = []
        if sequence != expectedSequence {
            actions.append(.event(.violation(device, .sequenceMismatch, detail: "\(summary); expected seq \(expectedSequence)")))
        }
        guard let connection = devices[index].channels[channel].connection else {
            preconditionFailure("MessagingCore.handleAck: active transfer without a connection")
        }

        if status == .transferNotStarted, transfer.stage == .awaitingFirstAck, transfer.firstWrites <= configuration.firstRetries {
            transfer.firstWrites += 1
            transfer.deadline = now + configuration.stepTimeout
            devices[index].channels[channel].active = transfer
            return actions + [.write(device, firstPacket(transfer, connection: connection))]
        }
        guard status == .success else {
            let result: IQSendMessageResult
            switch status {
            case .transferNotStarted where transfer.stage == .awaitingFirstAck: result = .failureMaxRetries
            case .resend, .crcFailure, .transferNotStarted: result = .failureUnknown
            case .outOfMemory: result = .failureInsufficientMemory
            case .invalidConnection, .noEncryptionKey: result = .failureInternalError
            default:
                result = .failureUnknown
                actions.append(.event(.violation(device, .invalidStatus, detail: "\(summary): status not 0–6")))
            }
            if status == .invalidConnection {
                // The watch no longer knows the connection: the next send opens a new one.
                actions += dropConnection(deviceAt: index, channelAt: channel, result: result)
            } else {
                devices[index].channels[channel].active = nil
                actions.append(.event(.completion(transfer.id, app, result)))
            }
            return actions + pumpChannel(deviceAt: index, channelAt: channel, now: now)
        }

        switch transfer.stage {
        case .awaitingKeyAck:
            transfer.stage = .awaitingFirstAck
            transfer.firstWrites = 1
            transfer.deadline = now + configuration.stepTimeout
            devices[index].channels[channel].active = transfer
            actions.append(.write(device, firstPacket(transfer, connection: connection)))
        case .awaitingFirstAck:
            devices[index].channels[channel].active = transfer
            actions += writeWindow(deviceAt: index, channelAt: channel, now: now)
        case .awaitingWindowAck:
            let acknowledged = min(transfer.nextPacket * transfer.payloadSize, transfer.wire.count)
            actions.append(.event(.progress(transfer.id, app, sent: acknowledged, total: transfer.wire.count)))
            devices[index].channels[channel].active = transfer
            actions += writeWindow(deviceAt: index, channelAt: channel, now: now)
        case .awaitingLastAck:
            devices[index].channels[channel].active = nil
            actions.append(.event(.progress(transfer.id, app, sent: transfer.wire.count, total: transfer.wire.count)))
            actions.append(.event(.completion(transfer.id, app, .success)))
            actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
        }
        return actions
    }

    /// Writes data packets up to the end of the window (then waits for ack type 1), or to the end
    /// of the data followed by `last` (then waits for ack type 2).
    private mutating func writeWindow(deviceAt index: Int, channelAt channel: Int, now: Duration) -> [MessagingAction] {
        guard var transfer = devices[index].channels[channel].active, let connection = devices[index].channels[channel].connection else {
            preconditionFailure("MessagingCore.writeWindow: no transfer or connection")
        }
        let device = devices[index].device.uuid
        let window = min(max(configuration.windowSize, 1), LinkPacket.sequenceModulus)
        let layout = TransferLayout(bytes: transfer.wire, payloadSize: transfer.payloadSize, connection: connection)
        var actions: [MessagingAction] = []
        transfer.deadline = now + configuration.stepTimeout
        while transfer.nextPacket < layout.packetCount {
            let packet = transfer.nextPacket
            actions.append(.write(device, layout.dataPacket(packet).encode()))
            transfer.nextPacket += 1
            if transfer.nextPacket % window == 0 {
                transfer.stage = .awaitingWindowAck(sequence: TransferLayout.sequence(ofPacket: packet))
                devices[index].channels[channel].active = transfer
                return actions
            }
        }
        actions.append(.write(device, layout.lastPacket.encode()))
        transfer.stage = .awaitingLastAck(sequence: layout.lastSequence)
        devices[index].channels[channel].active = transfer
        return actions
    }
}
