// Phone → watch transfers (docs/connectiq-link.md, "Order of a phone transfer"):
//
//   F·c 05 key 00           → ack type 5         (only when encrypting)
//   F·c 00 flags len        → ack type 0         (`transfer not started`: resend, `firstRetries` times)
//   data seq 0…14           → ack type 1 after each seq-14 packet, then the next window
//   F·c 01 seq crc          → ack type 2
//
// Each ack is awaited `stepTimeout` (the step timer) and `first` is retried on "transfer not
// started" (both in Timers.swift). Progress (acked bytes, total) at the start, after each window
// ack and after the final ack; one completion.

extension MessagingCore {
    /// Starts the next queued send of a channel when nothing is under way, opening the app's
    /// connection first when needed.
    mutating func pumpChannel(deviceAt index: Int, channelAt channel: Int, now: Duration) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        while !devices[index].channels[channel].outbox.isEmpty {
            switch devices[index].channels[channel].state {
            case .closed:
                // One connect per app at a time: a send queued behind one waits for its answer.
                let app = devices[index].channels[channel].app
                if !devices[index].isConnecting(app) {
                    actions += enqueueCommand(PendingCommand(kind: .connect, app: app), deviceAt: index, now: now)
                }
                return actions
            case .open(var open):
                guard open.outbound == nil else { return actions }
                let send = devices[index].channels[channel].outbox.removeFirst()
                actions += startTransfer(send, on: &open, deviceAt: index, channelAt: channel, now: now)
                devices[index].channels[channel].state = .open(open)
            }
        }
        return actions
    }

    /// Writes the key packet (or `first`) of a send on `open`, arming the step timer; `open.outbound`
    /// is the new transfer, unless the send failed at once.
    private mutating func startTransfer(
        _ send: QueuedSend, on open: inout OpenConnection, deviceAt index: Int, channelAt channel: Int, now: Duration
    ) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
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
        let large = open.largePackets && maxWrite >= configuration.largePayload + 1
        let payloadSize = max(1, large ? configuration.largePayload : min(configuration.smallPayload, maxWrite - 1))
        var transfer = OutboundTransfer(
            id: send.id, wire: wire, flags: flags, payloadSize: payloadSize, stage: .awaitingFirstAck(writes: 1),
            deadline: armStepTimer(now: now))
        var actions: [MessagingAction] = [.event(.progress(send.id, app, sent: 0, total: wire.count))]
        if let key {
            transfer.stage = .awaitingKeyAck
            actions.append(.write(device, LinkPacket.control(connection: open.id, .encryptionKey(key: key, isResponse: false)).encode()))
        } else {
            actions.append(.write(device, firstPacket(transfer, connection: open.id)))
        }
        open.outbound = transfer
        return actions
    }

    private func firstPacket(_ transfer: OutboundTransfer, connection: UInt8) -> [UInt8] {
        LinkPacket.control(connection: connection, .first(flags: transfer.flags, length: UInt32(transfer.wire.count))).encode()
    }

    /// An ack from the watch on `open`, the connection of the channel at `channel`.
    mutating func handleAck(
        type: AckType, status: AckStatus, sequence: UInt8, on open: OpenConnection, deviceAt index: Int, channelAt channel: Int, now: Duration
    ) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        let summary = LinkPacket.control(connection: open.id, .ack(type: type, status: status, sequence: sequence)).summary
        guard var transfer = open.outbound else {
            return [.event(.violation(device, .unexpectedAck, detail: "\(summary), but no transfer to \(app) is under way"))]
        }
        let expectedType: AckType, expectedSequence: UInt8
        switch transfer.stage {
        case .awaitingKeyAck: (expectedType, expectedSequence) = (.encryptionKey, 0)
        case .awaitingFirstAck: (expectedType, expectedSequence) = (.first, 0)
        case .awaitingWindowAck(let sequence, _): (expectedType, expectedSequence) = (.data, sequence)
        case .awaitingLastAck(let sequence): (expectedType, expectedSequence) = (.last, sequence)
        }
        guard type == expectedType else {
            return [.event(.violation(device, .unexpectedAck, detail: "\(summary) while waiting for an ack of type \(expectedType)"))]
        }
        var actions: [MessagingAction] = []
        if sequence != expectedSequence {
            actions.append(.event(.violation(device, .sequenceMismatch, detail: "\(summary); expected seq \(expectedSequence)")))
        }
        // What the channel holds after this ack: `open` with the transfer as it now stands.
        var open = open

        if status == .transferNotStarted, case .awaitingFirstAck(let writes) = transfer.stage, mayRetryFirst(afterWrites: writes) {
            transfer.stage = .awaitingFirstAck(writes: writes + 1)
            transfer.deadline = armStepTimer(now: now)
            open.outbound = transfer
            devices[index].channels[channel].state = .open(open)
            return actions + [.write(device, firstPacket(transfer, connection: open.id))]
        }
        guard status == .success else {
            let awaitingFirst = if case .awaitingFirstAck = transfer.stage { true } else { false }
            let result: IQSendMessageResult
            switch status {
            case .transferNotStarted where awaitingFirst: result = .failureMaxRetries
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
                open.outbound = nil
                devices[index].channels[channel].state = .open(open)
                actions.append(.event(.completion(transfer.id, app, result)))
            }
            return actions + pumpChannel(deviceAt: index, channelAt: channel, now: now)
        }

        switch transfer.stage {
        case .awaitingKeyAck:
            transfer.stage = .awaitingFirstAck(writes: 1)
            transfer.deadline = armStepTimer(now: now)
            actions.append(.write(device, firstPacket(transfer, connection: open.id)))
        case .awaitingFirstAck:
            actions += writeWindow(&transfer, from: 0, connection: open.id, device: device, now: now)
        case .awaitingWindowAck(_, let nextPacket):
            let acknowledged = min(nextPacket * transfer.payloadSize, transfer.wire.count)
            actions.append(.event(.progress(transfer.id, app, sent: acknowledged, total: transfer.wire.count)))
            actions += writeWindow(&transfer, from: nextPacket, connection: open.id, device: device, now: now)
        case .awaitingLastAck:
            open.outbound = nil
            devices[index].channels[channel].state = .open(open)
            actions.append(.event(.progress(transfer.id, app, sent: transfer.wire.count, total: transfer.wire.count)))
            actions.append(.event(.completion(transfer.id, app, .success)))
            return actions + pumpChannel(deviceAt: index, channelAt: channel, now: now)
        }
        open.outbound = transfer
        devices[index].channels[channel].state = .open(open)
        return actions
    }

    /// Writes data packets from index `first` up to the end of the window (then waits for ack type
    /// 1), or to the end of the data followed by `last` (then waits for ack type 2); re-arms the
    /// step timer.
    private func writeWindow(
        _ transfer: inout OutboundTransfer, from first: Int, connection: UInt8, device: DeviceID, now: Duration
    ) -> [MessagingAction] {
        let window = min(max(configuration.windowSize, 1), LinkPacket.sequenceModulus)
        let layout = TransferLayout(bytes: transfer.wire, payloadSize: transfer.payloadSize, connection: connection)
        var actions: [MessagingAction] = []
        transfer.deadline = armStepTimer(now: now)
        var next = first
        while next < layout.packetCount {
            let packet = next
            actions.append(.write(device, layout.dataPacket(packet).encode()))
            next += 1
            if next % window == 0 {
                transfer.stage = .awaitingWindowAck(sequence: TransferLayout.sequence(ofPacket: packet), nextPacket: next)
                return actions
            }
        }
        actions.append(.write(device, layout.lastPacket.encode()))
        transfer.stage = .awaitingLastAck(sequence: layout.lastSequence)
        return actions
    }
}
