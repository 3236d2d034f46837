// Commands (byte 0 = 0x00): the phone's connect / app info / open app requests, one in flight per
// device, each waiting `commandTimeout` for its answer; and the watch opening (command 3) or
// closing (command 4) connections, answered at once. Timers of every kind fire from here.

extension MessagingCore {
    /// Writes the device's next command when none is in flight.
    mutating func pumpCommands(deviceAt index: Int, now: Duration) -> [MessagingAction] {
        guard devices[index].commandDeadline == nil, let command = devices[index].commands.first else { return [] }
        devices[index].commandDeadline = now + configuration.commandTimeout
        return [.write(devices[index].device.uuid, command.packet.encode())]
    }

    /// Removes the in-flight command and writes the next one.
    mutating func completeCommand(deviceAt index: Int, now: Duration) -> [MessagingAction] {
        devices[index].commands.removeFirst()
        devices[index].commandDeadline = nil
        return pumpCommands(deviceAt: index, now: now)
    }

    /// The in-flight command, when one was written.
    func inFlightCommand(deviceAt index: Int) -> PendingCommand? {
        devices[index].commandDeadline == nil ? nil : devices[index].commands.first
    }

    mutating func handleCommand(_ command: LinkCommand, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        func unexpected(_ what: String) -> [MessagingAction] {
            let waiting = inFlightCommand(deviceAt: index).map { "waiting for the answer to \($0.packet.summary)" } ?? "no command is waiting"
            return [.event(.violation(device, .unexpectedResponse, detail: "\(what); \(waiting)"))]
        }
        switch command {
        case let .connectResponse(status, app, connection, flags):
            guard let pending = inFlightCommand(deviceAt: index), pending.kind == .connect, pending.app == app else {
                return unexpected(LinkPacket.command(command).summary)
            }
            return connectAnswered(status: status, app: app, connection: connection, largePackets: (flags ?? 0) & 1 != 0, deviceAt: index, now: now)

        case let .appInfoResponse(app, version):
            guard let pending = inFlightCommand(deviceAt: index), case .appInfo(let request) = pending.kind, pending.app == app else {
                return unexpected(LinkPacket.command(command).summary)
            }
            let status = version == 0xFFFF ? IQAppStatus(isInstalled: false, version: 0) : IQAppStatus(isInstalled: true, version: version)
            return [.event(.appStatus(request, IQApp(uuid: app, device: device), status))] + completeCommand(deviceAt: index, now: now)

        case let .openAppResponse(app, code):
            guard let pending = inFlightCommand(deviceAt: index), case .openApp(let request) = pending.kind, pending.app == app else {
                return unexpected(LinkPacket.command(command).summary)
            }
            var actions: [MessagingAction] = []
            let result: IQSendMessageResult
            switch code {
            case .promptShown: result = .success
            case .promptNotShown: result = .failurePromptNotDisplayed
            case .appNotInstalled: result = .failureAppNotFound
            case .appAlreadyRunning: result = .failureAppAlreadyRunning
            default:
                result = .failureUnknown
                actions.append(.event(.violation(device, .invalidStatus, detail: "open app answer with \(code), not 0–3")))
            }
            actions.append(.event(.openAppResult(request, IQApp(uuid: app, device: device), result)))
            return actions + completeCommand(deviceAt: index, now: now)

        case .disconnectResponse:
            return unexpected(LinkPacket.command(command).summary)

        case let .watchOpened(app, connection):
            return watchOpened(app: app, connection: connection, deviceAt: index, now: now)

        case .watchClosed(let connection):
            return watchClosed(connection: connection, deviceAt: index, now: now)

        case .connectRequest, .disconnectRequest, .watchOpenedAnswer, .watchClosedAnswer, .appInfoRequest, .openAppRequest:
            // Phone-side layouts; `decode(_:from: .watch)` never yields them, but stay total.
            return [.event(.violation(device, .unknownCommand, detail: "the watch sent a phone-side command: \(LinkPacket.command(command).summary)"))]
        }
    }

    private mutating func connectAnswered(
        status: ConnectStatus, app: IQUUID, connection: UInt8, largePackets: Bool, deviceAt index: Int, now: Duration
    ) -> [MessagingAction] {
        let device = devices[index].device.uuid
        var actions = completeCommand(deviceAt: index, now: now)
        let channel = devices[index].channelIndex(for: app)
        devices[index].channels[channel].connecting = false
        if let existing = devices[index].channels[channel].connection {
            // The watch opened a connection for this app (command 3) while the connect was in
            // flight: keep that one; nothing waits on this answer any more.
            if status == .success, connection != existing {
                actions.append(.event(.violation(device, .unknownConnection,
                    detail: "connect answer for \(app) gives connection \(connection), but the watch already opened \(existing) for it; keeping \(existing)")))
            }
            return actions + pumpChannel(deviceAt: index, channelAt: channel, now: now)
        }
        let failure: IQSendMessageResult?
        switch status {
        case .success:
            if let holder = devices[index].channelIndex(connection: connection), holder != channel {
                failure = .failureInternalError
                actions.append(.event(.violation(device, .unknownConnection,
                    detail: "connect answer for \(app) gives connection \(connection), which \(devices[index].channels[holder].app) holds")))
            } else if !(1...15).contains(connection) {
                failure = .failureInternalError
                actions.append(.event(.violation(device, .unknownConnection, detail: "connect answer for \(app) gives connection id \(connection); ids are 1–15")))
            } else {
                failure = nil
                devices[index].channels[channel].connection = connection
                devices[index].channels[channel].largePackets = largePackets
                actions.append(.event(.connectionOpened(IQApp(uuid: app, device: device), connection: connection, largePackets: largePackets, byWatch: false)))
            }
        case .appNotFound: failure = .failureAppNotFound
        case .noFreeConnection: failure = .failureDeviceIsBusy
        case .alreadyOpen: failure = .failureInternalError
        default:
            failure = .failureUnknown
            actions.append(.event(.violation(device, .invalidStatus, detail: "connect answer with \(status), not 0–3")))
        }
        if let failure, !devices[index].channels[channel].outbox.isEmpty {
            let send = devices[index].channels[channel].outbox.removeFirst()
            actions.append(.event(.completion(send.id, IQApp(uuid: app, device: device), failure)))
        }
        actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
        return actions
    }

    private mutating func watchOpened(app: IQUUID, connection: UInt8, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        let holder = devices[index].channelIndex(connection: connection)
        if !(1...15).contains(connection) || (holder.map { devices[index].channels[$0].app != app } ?? false) {
            let why = (1...15).contains(connection)
                ? "connection \(connection) is held by \(devices[index].channels[holder!].app)"
                : "connection ids are 1–15"
            return [
                .write(device, LinkPacket.command(.watchOpenedAnswer(status: .invalidConnection, connection: connection)).encode()),
                .event(.violation(device, .unknownConnection, detail: "the watch opened connection \(connection) for \(app); \(why)")),
            ]
        }
        var actions: [MessagingAction] = [
            .write(device, LinkPacket.command(.watchOpenedAnswer(status: .success, connection: connection)).encode())
        ]
        let channel = devices[index].channelIndex(for: app)
        let previous = devices[index].channels[channel].connection
        if previous != connection {
            if previous != nil {
                actions += dropConnection(deviceAt: index, channelAt: channel, result: .failureUnknown)
            }
            devices[index].channels[channel].connection = connection
            devices[index].channels[channel].largePackets = false
        }
        actions.append(.event(.connectionOpened(IQApp(uuid: app, device: device), connection: connection, largePackets: devices[index].channels[channel].largePackets, byWatch: true)))
        actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
        return actions
    }

    private mutating func watchClosed(connection: UInt8, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        guard let channel = devices[index].channelIndex(connection: connection) else {
            return [
                .write(device, LinkPacket.command(.watchClosedAnswer(status: .invalidConnection, connection: connection)).encode()),
                .event(.violation(device, .unknownConnection, detail: "the watch closed connection \(connection), which no app holds")),
            ]
        }
        let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
        var actions: [MessagingAction] = [
            .write(device, LinkPacket.command(.watchClosedAnswer(status: .success, connection: connection)).encode()),
            .event(.connectionClosed(app, connection: connection)),
        ]
        actions += dropConnection(deviceAt: index, channelAt: channel, result: .failureUnknown)
        actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
        return actions
    }

    /// Forgets a channel's connection: its active send ends with `result`, a transfer from the watch is dropped.
    mutating func dropConnection(deviceAt index: Int, channelAt channel: Int, result: IQSendMessageResult) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        let app = IQApp(uuid: devices[index].channels[channel].app, device: devices[index].device.uuid)
        if let active = devices[index].channels[channel].active {
            actions.append(.event(.completion(active.id, app, result)))
        }
        devices[index].channels[channel].active = nil
        devices[index].channels[channel].inbound = nil
        devices[index].channels[channel].inboundKey = nil
        devices[index].channels[channel].connection = nil
        devices[index].channels[channel].largePackets = false
        return actions
    }

    // MARK: Timers

    /// The earliest wait due at `now`, ties broken by device order, then command, then channel order.
    func earliestDueTimer(now: Duration) -> (Int, CoreTimer)? {
        var best: (deadline: Duration, device: Int, timer: CoreTimer)?
        func consider(_ deadline: Duration?, _ device: Int, _ timer: CoreTimer) {
            guard let deadline, deadline <= now else { return }
            if best == nil || deadline < best!.deadline { best = (deadline, device, timer) }
        }
        for (deviceIndex, record) in devices.enumerated() {
            consider(record.commandDeadline, deviceIndex, .command)
            for (channelIndex, channel) in record.channels.enumerated() {
                consider(channel.active?.deadline, deviceIndex, .outbound(channel: channelIndex))
                consider(channel.inbound?.deadline, deviceIndex, .inbound(channel: channelIndex))
            }
        }
        return best.map { ($0.device, $0.timer) }
    }

    mutating func fire(_ timer: CoreTimer, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        let device = devices[index].device.uuid
        switch timer {
        case .command:
            guard let deadline = devices[index].commandDeadline, let command = devices[index].commands.first else {
                preconditionFailure("MessagingCore.fire: command timer without a command in flight")
            }
            let app = IQApp(uuid: command.app, device: device)
            var actions: [MessagingAction] = [.event(.timeout(command.timeoutKind, device, app, deadline: deadline))]
            switch command.kind {
            case .appInfo(let request):
                actions.append(.event(.appStatus(request, app, nil)))
            case .openApp(let request):
                actions.append(.event(.openAppResult(request, app, .failureTimeout)))
            case .connect:
                let channel = devices[index].channelIndex(for: command.app)
                devices[index].channels[channel].connecting = false
                // No send waits on the connect when the watch opened a connection meanwhile.
                if devices[index].channels[channel].connection == nil, !devices[index].channels[channel].outbox.isEmpty {
                    let send = devices[index].channels[channel].outbox.removeFirst()
                    actions.append(.event(.completion(send.id, app, .failureTimeout)))
                }
                actions += completeCommand(deviceAt: index, now: now)
                actions += pumpChannel(deviceAt: index, channelAt: channel, now: now)
                return actions
            }
            return actions + completeCommand(deviceAt: index, now: now)

        case .outbound(let channel):
            guard let transfer = devices[index].channels[channel].active else {
                preconditionFailure("MessagingCore.fire: transfer timer without a transfer")
            }
            let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
            let kind: MessagingTimeoutKind
            switch transfer.stage {
            case .awaitingKeyAck: kind = .keyAck
            case .awaitingFirstAck: kind = .firstAck
            case .awaitingWindowAck: kind = .windowAck
            case .awaitingLastAck: kind = .lastAck
            }
            devices[index].channels[channel].active = nil
            return [.event(.timeout(kind, device, app, deadline: transfer.deadline)), .event(.completion(transfer.id, app, .failureTimeout))]
                + pumpChannel(deviceAt: index, channelAt: channel, now: now)

        case .inbound(let channel):
            guard let transfer = devices[index].channels[channel].inbound else {
                preconditionFailure("MessagingCore.fire: inbound timer without a transfer")
            }
            devices[index].channels[channel].inbound = nil
            let app = IQApp(uuid: devices[index].channels[channel].app, device: device)
            return [.event(.timeout(.inboundTransfer, device, app, deadline: transfer.deadline))]
        }
    }
}
