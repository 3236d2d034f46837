// The Connect IQ link's timers and its one retry, all in this file (docs/messaging-core.md, "Timers
// and retries"). The core owns no clock: a timer is a deadline stored in the state it belongs to,
// `nextDeadline` is the earliest of them, and `handleTimeout(now:)` fires the ones due.
//
//   timer     how long                   armed when                            re-armed when                        fires as
//   command   commandTimeout (3 s)       a command is written                  never                                timeout(.connect / .appInfo / .openApp),
//                                                                                                                    then a nil app status, Failure_Timeout
//   step      stepTimeout (5 s)          a transfer's key packet or `first`    `first` is retried, a window or      timeout(.keyAck / .firstAck / .windowAck
//                                        is written                            `last` is written after an ack       / .lastAck), then Failure_Timeout
//   inbound   stepTimeout (5 s)          the watch's `first` is accepted       a data packet is accepted            timeout(.inboundTransfer); the
//                                                                                                                    half-received message is dropped
//
//   `first` retry: an ack "transfer not started" on `first` writes `first` again, up to
//   `firstRetries` (2) times, re-arming the step timer; after that the send ends Failure_MaxRetries.
//
// Cancelling a timer is leaving its state: the answer ends the in-flight command
// (`completeCommand`), the final or a failing ack ends the outbound transfer, `last` or a new
// `first` ends the inbound one, and a closed connection or a lost link forgets every transfer of
// it. So a timer exists exactly while the command or transfer it guards does, and firing one always
// finds what it fires for: `DueTimer` carries it.

extension MessagingCore {
    // MARK: Arming

    /// The deadline of a command just written: its answer must come within `commandTimeout`.
    func armCommandTimer(now: Duration) -> Duration {
        now + configuration.commandTimeout
    }

    /// The deadline of an outbound transfer's step just written (key packet, `first`, a window,
    /// `last`): its ack must come within `stepTimeout`.
    func armStepTimer(now: Duration) -> Duration {
        now + configuration.stepTimeout
    }

    /// The deadline of an inbound transfer after its `first` or a data packet: the next packet must
    /// come within `stepTimeout`.
    func armInboundTimer(now: Duration) -> Duration {
        now + configuration.stepTimeout
    }

    /// Whether a `first` the watch answered "transfer not started" is written again, after it was
    /// written `writes` times: the SDK writes it at most `1 + firstRetries` times.
    func mayRetryFirst(afterWrites writes: Int) -> Bool {
        writes <= configuration.firstRetries
    }

    // MARK: Firing

    /// The earliest timer due at `now`, with what it fires for; ties broken by device order, then
    /// the command, then channel order, outbound before inbound.
    func earliestDueTimer(now: Duration) -> (device: Int, timer: DueTimer)? {
        // By index, and the timer made only when due: every frame of a replay asks, and looping
        // over `devices.enumerated()` copied every device record and channel (and made a timer
        // value for every running transfer) to find that, nearly always, nothing is due.
        var best: (deadline: Duration, device: Int, timer: DueTimer)?
        func consider(_ deadline: Duration, _ device: Int, _ timer: () -> DueTimer) {
            guard deadline <= now else { return }
            // Strictly earlier only, so the first found wins a tie.
            if best.map({ deadline < $0.deadline }) ?? true { best = (deadline, device, timer()) }
        }
        for deviceIndex in devices.indices {
            if let inFlight = devices[deviceIndex].inFlight {
                consider(inFlight.deadline, deviceIndex) { .command(inFlight) }
            }
            for channelIndex in devices[deviceIndex].channels.indices {
                guard case .open(let open) = devices[deviceIndex].channels[channelIndex].state else { continue }
                if let deadline = open.outbound?.deadline {
                    consider(deadline, deviceIndex) { .outbound(channel: channelIndex, open.outbound!) }
                }
                if let deadline = open.inbound?.deadline {
                    consider(deadline, deviceIndex) { .inbound(channel: channelIndex, open.inbound!) }
                }
            }
        }
        return best.map { ($0.device, $0.timer) }
    }

    /// Fires one due timer of the device at `index`.
    mutating func fire(_ timer: DueTimer, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        switch timer {
        case .command(let inFlight): commandTimedOut(inFlight, deviceAt: index, now: now)
        case let .outbound(channel, transfer): outboundTimedOut(transfer, deviceAt: index, channelAt: channel, now: now)
        case let .inbound(channel, transfer): inboundTimedOut(transfer, deviceAt: index, channelAt: channel)
        }
    }

    /// The command timer ran out: the command ends as unanswered and the next one is written. A
    /// late answer to it is then an `unexpectedResponse`.
    private mutating func commandTimedOut(_ inFlight: InFlightCommand, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let command = inFlight.command
        let app = IQApp(uuid: command.app, device: device)
        var actions: [MessagingAction] = [.event(.timeout(command.timeoutKind, device, app, deadline: inFlight.deadline))]
        switch command.kind {
        case .appInfo(let request):
            actions.append(.event(.appStatus(request, app, nil)))
            return actions + completeCommand(deviceAt: index, now: now)
        case .openApp(let request):
            actions.append(.event(.openAppResult(request, app, .failureTimeout)))
            return actions + completeCommand(deviceAt: index, now: now)
        case .connect:
            let channel = devices[index].channelIndex(for: command.app)
            // The send at the head waited for this connect; none does when the watch opened a
            // connection for the app meanwhile (command 3), and that send is under way on it.
            if case .closed = devices[index].channels[channel].state, !devices[index].channels[channel].outbox.isEmpty {
                let send = devices[index].channels[channel].outbox.removeFirst()
                actions.append(.event(.completion(send.id, app, .failureTimeout)))
            }
            actions += completeCommand(deviceAt: index, now: now)
            // The next queued send tries again with a connect of its own.
            actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
            return actions
        }
    }

    /// A step timer ran out: the send ends `Failure_Timeout`, the connection is kept, and the next
    /// queued send starts.
    private mutating func outboundTimedOut(
        _ transfer: OutboundTransfer, deviceAt index: Int, channelAt channel: Int, now: Duration
    ) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        let kind: MessagingTimeoutKind
        switch transfer.stage {
        case .awaitingKeyAck: kind = .keyAck
        case .awaitingFirstAck: kind = .firstAck
        case .awaitingWindowAck: kind = .windowAck
        case .awaitingLastAck: kind = .lastAck
        }
        devices[index].channels[channel].endOutbound()
        return [.event(.timeout(kind, device, app, deadline: transfer.deadline)), .event(.completion(transfer.id, app, .failureTimeout))]
            + pumpChannel(deviceAt: index, channelAt: channel, now: now)
    }

    /// The inbound timer ran out: the half-received message is dropped; a key stored for the watch's
    /// next encrypted transfer stays, as it does after a complete one.
    private mutating func inboundTimedOut(_ transfer: InboundTransfer, deviceAt index: Int, channelAt channel: Int) -> [MessagingAction] {
        devices[index].channels[channel].endInbound()
        let app = IQApp(uuid: devices[index].channels[channel].app, device: devices[index].device.uuid)
        return [.event(.timeout(.inboundTransfer, devices[index].device.uuid, app, deadline: transfer.deadline))]
    }
}

/// A timer that is due, carrying the command or transfer it fires for (taken from the state it
/// lives in), so firing never has to look for it again.
enum DueTimer: Sendable, Equatable {
    /// The command timer of the in-flight command.
    case command(InFlightCommand)
    /// The step timer of the phone → watch transfer on channel `channel`.
    case outbound(channel: Int, OutboundTransfer)
    /// The inbound timer of the watch → phone transfer on channel `channel`.
    case inbound(channel: Int, InboundTransfer)
}
