// Commands (byte 0 = 0x00): the phone's connect / app info / open app requests, one in flight per
// device, each waiting `commandTimeout` for its answer (the command timer, Timers.swift); and the
// watch opening (command 3) or closing (command 4) connections, answered at once.

extension MessagingCore {
    /// Queues a command for the device and writes it at once when none is in flight.
    mutating func enqueueCommand(_ command: PendingCommand, deviceAt index: Int, now: Duration) -> [MessagingAction] {
        devices[index].queuedCommands.append(command)
        return pumpCommands(deviceAt: index, now: now)
    }

    /// Writes the device's next command, arming its command timer, when none is in flight.
    private mutating func pumpCommands(deviceAt index: Int, now: Duration) -> [MessagingAction] {
        guard devices[index].inFlight == nil, let command = devices[index].queuedCommands.popFirst() else { return [] }
        devices[index].inFlight = InFlightCommand(command: command, deadline: armCommandTimer(now: now))
        return [.write(devices[index].device.uuid, command.packet.encode())]
    }

    /// Ends the in-flight command (answered or timed out; its timer goes with it) and writes the next one.
    mutating func completeCommand(deviceAt index: Int, now: Duration) -> [MessagingAction] {
        devices[index].inFlight = nil
        return pumpCommands(deviceAt: index, now: now)
    }

    /// The in-flight command, when one was written.
    func inFlightCommand(deviceAt index: Int) -> PendingCommand? {
        devices[index].inFlight?.command
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
        // Ending the command ends the channel's connecting: no other connect for the app can be
        // queued behind it (``pumpChannel(deviceAt:channelAt:now:)`` queues one only when none is).
        var actions = completeCommand(deviceAt: index, now: now)
        let channel = devices[index].channelIndex(for: app)
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
                devices[index].channels[channel].state = .open(OpenConnection(id: connection, largePackets: largePackets))
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
        let largePackets: Bool
        switch devices[index].channels[channel].state {
        case .open(let open) where open.id == connection:
            // The watch repeats the connection the app has: keep it and what runs on it.
            largePackets = open.largePackets
        case .open:
            // The watch moves the app to another connection: what ran on the old one ends.
            actions += dropConnection(deviceAt: index, channelAt: channel, result: .failureUnknown)
            largePackets = false
            devices[index].channels[channel].state = .open(OpenConnection(id: connection, largePackets: false))
        case .closed:
            largePackets = false
            devices[index].channels[channel].state = .open(OpenConnection(id: connection, largePackets: false))
        }
        actions.append(.event(.connectionOpened(IQApp(uuid: app, device: device), connection: connection, largePackets: largePackets, byWatch: true)))
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

    /// Forgets a channel's connection: its active send ends with `result`, a transfer from the watch
    /// and a stored key are dropped, and their timers with them (they live in the open state).
    mutating func dropConnection(deviceAt index: Int, channelAt channel: Int, result: IQSendMessageResult) -> [MessagingAction] {
        var actions: [MessagingAction] = []
        let app = IQApp(uuid: devices[index].channels[channel].app, device: devices[index].device.uuid)
        if case .open(let open) = devices[index].channels[channel].state, let active = open.outbound {
            actions.append(.event(.completion(active.id, app, result)))
        }
        devices[index].channels[channel].state = .closed
        return actions
    }
}
