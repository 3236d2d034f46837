// The widget's refresh requests: one round of work shared by the refreshes asked for while it runs,
// and exactly one result per refresh.

/// What the user sees: the display without the cloud's times (a value reported again with a newer
/// time is not new data).
struct VisibleContent: Sendable, Hashable {
    var settings: WidgetJSON?
    var hasContent: Bool
    var devices: [VisibleDevice]
    var scenes: [WidgetScene]
}

/// A device as the user sees it.
struct VisibleDevice: Sendable, Hashable {
    var device: WidgetDevice
    var statusCode: Int?
    var properties: [String: WidgetJSON]
}

extension WidgetCore {
    /// What is visible now.
    var visibleContent: VisibleContent {
        VisibleContent(
            settings: settingsShown, hasContent: hasContentShown,
            devices: widgetDevices.map { device in
                let state = deviceStates[device.iotId]
                return VisibleDevice(device: device, statusCode: state?.status?.code,
                                     properties: (state?.properties ?? [:]).mapValues(\.value))
            },
            scenes: widgetScenes)
    }

    /// A new refresh joins the round under way, or starts one: with the connection started, the
    /// lists first (the reads follow the device list); without it, the result is decided at once.
    mutating func startOrJoinRound(_ id: WidgetRefreshID) {
        if widget.round != nil {
            widget.round?.members.append(id)
            return
        }
        guard phase.state != .stopped else {
            deliverRoundResult(members: [id], failed: false)
            return
        }
        widget.round = RefreshRound(startedBy: id, members: [id])
        let devices = issue(.queryComponentProduct, params: .object([:]), origin: .refresh(id))
        let scenes = issue(.appWidgetList, params: .object([:]), origin: .refresh(id))
        let outstanding: Set<UInt64> = [sequence(of: devices), sequence(of: scenes)]
        widget.round?.outstanding = outstanding
    }

    func sequence(of id: WidgetRequestID) -> UInt64 {
        guard let request = requests.first(where: { $0.id == id }) else {
            preconditionFailure("WidgetCore: request \(id) was just issued but is not pending")
        }
        return request.sequence
    }

    /// A request ended: if it belongs to the round, note it; a device list leads to the reads of
    /// its devices; the round ends when nothing of it is outstanding. The host has no rounds: its
    /// requests end here too, and are no round's.
    mutating func roundRequestFinished(_ request: PendingRequest, _ result: Result<WidgetResponse, WidgetRequestFailure>) {
        guard case .widget(let side) = roleState, var current = side.round,
              current.outstanding.remove(request.sequence) != nil else { return }
        switch result {
        case .failure:
            current.failed = true
        case .success(.devices(let devices)):
            widget.round = current
            for device in devices {
                let read = issueRead(iotId: device.iotId, productKey: device.productKey, origin: .refresh(current.startedBy))
                current.outstanding.insert(sequence(of: read))
            }
        case .success:
            break
        }
        widget.round = current
        guard current.outstanding.isEmpty else { return }
        widget.round = nil
        deliverRoundResult(members: current.members, failed: current.failed)
    }

    /// The round's one result for each of its refreshes still waiting (an overrun one already has
    /// its result): `failed`, else `newData` when the visible content differs from the last
    /// snapshot (which it then becomes), else `noData`.
    mutating func deliverRoundResult(members: [WidgetRefreshID], failed: Bool) {
        let refreshes = widget.refreshes
        let waiting = members.filter { id in refreshes.contains { $0.id == id } }
        guard !waiting.isEmpty else { return }
        let result: WidgetRefreshResult
        if failed {
            result = .failed
        } else {
            let visible = visibleContent
            if visible != widget.snapshotVisible {
                widget.snapshotVisible = visible
                result = .newData
            } else {
                result = .noData
            }
        }
        for id in waiting.sorted() {
            widget.refreshes.removeAll { $0.id == id }
            output.events.append(.refreshCompleted(id, result))
        }
    }
}
