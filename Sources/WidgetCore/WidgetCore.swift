/// The host-app ↔ widget channel, sans-I/O, for either process (docs/widget-core.md): the App Group
/// container both processes share, the widget's refresh requests, open-host-app requests, and the
/// IoT cloud over MQTT (docs/widget-mqtt.md). Trace core name `widget`.
///
/// A value-type state machine: give it one input — an app API call, a host event (a container file
/// changed, the MQTT connection's news, a message) or "time is now T" — carry out every returned
/// ``WidgetAction`` in order, then ask ``nextDeadline`` and call ``handleTimeout(now:)`` when it
/// comes. `now` is the time since any fixed origin and never decreases (a smaller one is taken as
/// the latest seen). The core owns no socket, file, timer, clock or thread; its one random draw
/// (the incarnation in request ids) comes from the injected ``WidgetRandomSource``.
///
/// In each call's actions the container writes and removals come first, then the events in the
/// order they happened, then the MQTT actions.
///
/// Two kinds of error: the app or host misusing the API gets a typed ``WidgetError`` with the
/// state unchanged; the other process, the cloud or the host misbehaving gets a
/// ``WidgetEvent/violation(_:detail:)`` event, and the core carries on.
public struct WidgetCore: Sendable {
    /// Which process this core plays.
    public var role: WidgetRole { roleState.role }
    /// The account, timers and settings in force.
    public let configuration: WidgetConfiguration
    /// The account's topics.
    public let topics: WidgetTopics
    /// `host-{account}` or `widget-{account}`.
    public let clientID: String
    /// This process's incarnation: the first part of every id it makes (non-zero).
    public let incarnation: UInt32

    var random: any WidgetRandomSource
    // The container as this side sees it.
    var settingsVersionShown: UInt64 = 0
    var settingsShown: WidgetJSON?
    var hasContentShown = false
    var hasContentVersion: UInt64 = 0
    /// The role and what only that role keeps (the host's versions and answers, the widget's
    /// refreshes and open-host-app requests); read and change it through ``host`` and ``widget``.
    var roleState: RoleState
    // The connection and the requests.
    var phase: ConnectionPhase = .stopped(.neverConnected)
    /// Shared by request and open-URL ids.
    var nextSequence: UInt64 = 1
    var requests: [PendingRequest] = []
    var finished: [UInt64: FinishedRequest] = [:]
    // What is shown.
    var widgetDevices: [WidgetDevice] = []
    var widgetScenes: [WidgetScene] = []
    var deviceStates: [String: DeviceState] = [:]
    var held: [HeldUpdate] = []
    // The call.
    var clock: Duration = .zero
    var deferredFiles: [WidgetAction] = []
    var deferredEvents: [WidgetEvent] = []
    var output = CallOutput()

    /// Finished requests whose ids are remembered (the newest, by sequence) to tell a duplicate or
    /// late response from an unknown id; an older one's response counts as unknown.
    static let rememberedResults: UInt64 = 4096

    /// A core for `role`, its view of the container rebuilt from `files` (the container outlives
    /// either process: pass what is in it at launch, name → bytes; an empty container for a first
    /// launch). Files that do not parse are reported as violations by the first call; the host
    /// re-delivers the open-host-app requests it had not answered, and removes those it had.
    /// - Parameters:
    ///   - role: host or widget.
    ///   - configuration: the account, timers and settings.
    ///   - randomSource: ``SeededWidgetRandom`` in tests and replay, ``SystemWidgetRandom`` live.
    ///   - files: the container's files by name.
    /// - Throws: `invalidParameter` when the account cannot be an MQTT topic level.
    public init(
        role: WidgetRole,
        configuration: WidgetConfiguration,
        randomSource: some WidgetRandomSource,
        restoring files: [String: [UInt8]] = [:]
    ) throws(WidgetError) {
        guard WidgetTopics.isValidLevel(configuration.account) else {
            throw WidgetError(.invalidParameter,
                "account \"\(configuration.account)\" cannot be an MQTT topic level: use 1 to 64 bytes without '/', '+', '#' or control characters")
        }
        var random: any WidgetRandomSource = randomSource
        var draw: UInt32 = 0
        while draw == 0 { draw = UInt32(truncatingIfNeeded: random.next()) }
        self.roleState = switch role {
        case .host: .host(HostSide())
        case .widget: .widget(WidgetSide())
        }
        self.configuration = configuration
        self.topics = WidgetTopics(account: configuration.account)
        self.clientID = WidgetTopics.clientID(role: role, account: configuration.account)
        self.incarnation = draw
        self.random = random
        restoreContainer(files)
    }

    // MARK: - Read-only state

    /// The settings shown: the host's last written, the widget's last read whole (`nil` before any).
    public var settings: WidgetJSON? { settingsShown }

    /// The version of ``settings`` (0 before any).
    public var settingsVersion: UInt64 { settingsVersionShown }

    /// The has-content flag as last written (host) or read (widget).
    public var hasContent: Bool { hasContentShown }

    /// Where the MQTT connection stands.
    public var connectionState: WidgetConnectionState { phase.state }

    /// What the widget shows (on the host: the same view of its own data).
    public var display: WidgetDisplay {
        WidgetDisplay(
            settingsVersion: settingsVersionShown, settings: settingsShown, hasContent: hasContentShown,
            devices: widgetDevices.map { device in
                let state = deviceStates[device.iotId]
                return WidgetDeviceView(device: device, status: state?.status, properties: state?.properties ?? [:])
            },
            scenes: widgetScenes)
    }

    /// The newest state known of any device (on the widget or not), by iotId.
    public func deviceView(_ iotId: String) -> (status: WidgetDeviceStatus?, properties: [String: WidgetPropertyValue]) {
        let state = deviceStates[iotId]
        return (state?.status, state?.properties ?? [:])
    }

    /// Cloud requests without a result yet, oldest first.
    public var pendingRequests: [WidgetRequestID] { requests.map(\.id) }

    /// Refreshes without a result yet (widget; empty on the host), oldest first.
    public var pendingRefreshes: [WidgetRefreshID] {
        guard case .widget(let side) = roleState else { return [] }
        return side.refreshes.map(\.id)
    }

    /// Open-host-app requests waiting for the host's answer (widget; empty on the host), oldest first.
    public var pendingOpenURLs: [WidgetOpenURLID] {
        guard case .widget(let side) = roleState else { return [] }
        return side.openURLs.map(\.id)
    }

    /// Open-host-app requests delivered to the host app and not answered yet (host; empty on the
    /// widget), oldest first.
    public var openURLsAwaitingAnswer: [WidgetOpenURLRequest] {
        guard case .host(let side) = roleState else { return [] }
        return side.deliveredOpenURLs
    }

    /// Whether anything is under way: a request, a refresh, an open-host-app request, a held
    /// notification, or output a restore still owes. Tests end by checking it is false.
    public var hasPendingWork: Bool {
        let roleBusy = switch roleState {
        case .host(let side): !side.deliveredOpenURLs.isEmpty
        case .widget(let side): !side.refreshes.isEmpty || side.round != nil || !side.openURLs.isEmpty
        }
        return !requests.isEmpty || roleBusy || !held.isEmpty || !deferredFiles.isEmpty || !deferredEvents.isEmpty
    }

    /// When ``handleTimeout(now:)`` should be called next; `nil` when nothing waits. After a
    /// restore that owes output (violations, re-delivered requests) it is the latest time seen
    /// (0 at first): call at once.
    public var nextDeadline: Duration? {
        if !deferredFiles.isEmpty || !deferredEvents.isEmpty { return clock }
        return dueTimers().map(\.deadline).min()
    }

    // MARK: - Host: the container

    /// Host: writes the settings for the widget (`settings.json`, atomically, with the next
    /// version). Settings equal to those last written are not written again
    /// (``WidgetEvent/settingsUnchanged``).
    /// - Throws: `wrongRole` on the widget; `invalidParameter` when `settings` is not an object.
    public mutating func updateSettings(_ settings: WidgetJSON, now: Duration) throws(WidgetError) -> [WidgetAction] {
        try requireRole(.host, "updateSettings")
        guard settings.objectValue != nil else {
            throw WidgetError(.invalidParameter, "updateSettings takes a JSON object; got a \(settings.typeName) — wrap it, e.g. {\"value\": …}")
        }
        begin(now)
        if settings == settingsShown {
            output.events.append(.settingsUnchanged)
            return finish()
        }
        host.generation += 1
        let version = host.generation
        settingsVersionShown = version
        settingsShown = settings
        output.files.append(.writeFile(name: WidgetContainerLayout.settingsFile, bytes: ContainerCodec.settings(version: version, settings: settings)))
        return finish()
    }

    /// Host: `NCWidgetController.setHasContent(_:forWidgetWithBundleIdentifier:)`: writes
    /// `has-content.json` with the next version when the flag changes; nothing otherwise.
    /// - Throws: `wrongRole` on the widget.
    public mutating func setHasContent(_ hasContent: Bool, now: Duration) throws(WidgetError) -> [WidgetAction] {
        try requireRole(.host, "setHasContent")
        begin(now)
        guard hasContent != hasContentShown else { return finish() }
        host.generation += 1
        let version = host.generation
        hasContentVersion = version
        hasContentShown = hasContent
        output.files.append(.writeFile(name: WidgetContainerLayout.hasContentFile, bytes: ContainerCodec.hasContent(version: version, hasContent: hasContent)))
        return finish()
    }

    /// Host: the app handled an open-host-app request (``WidgetEvent/openURLRequested(_:)``):
    /// writes the answer for the widget, then removes the request.
    /// - Throws: `wrongRole` on the widget; `invalidParameter` when `id` was not delivered or was
    ///   answered already.
    public mutating func didOpenURL(_ id: WidgetOpenURLID, opened: Bool, now: Duration) throws(WidgetError) -> [WidgetAction] {
        try requireRole(.host, "didOpenURL")
        guard let index = host.deliveredOpenURLs.firstIndex(where: { $0.id == id }) else {
            throw WidgetError(.invalidParameter, "\(id) waits for no answer: it was never delivered as openURLRequested, or was answered already")
        }
        begin(now)
        host.deliveredOpenURLs.remove(at: index)
        host.answeredOpenURLs.insert(id)
        output.files.append(.writeFile(name: WidgetContainerLayout.openURLResultFile(id), bytes: ContainerCodec.openURLResult(id: id, opened: opened)))
        output.files.append(.removeFile(name: WidgetContainerLayout.openURLRequestFile(id)))
        return finish()
    }

    // MARK: - Widget: the system and the container

    /// Widget: `extensionContext.openURL(_:completionHandler:)`. Writes the request into the
    /// container for the host; ``WidgetEvent/openURLCompleted(_:opened:)`` follows exactly once:
    /// with the host's answer, or `opened: false` after ``WidgetConfiguration/openURLTimeout``
    /// (the request is then withdrawn).
    /// - Throws: `wrongRole` on the host; `invalidParameter` for a URL without a scheme.
    public mutating func openHostApp(url: String, now: Duration) throws(WidgetError) -> (WidgetOpenURLID, [WidgetAction]) {
        try requireRole(.widget, "openHostApp")
        guard WidgetURL.isValid(url) else {
            throw WidgetError(.invalidParameter, "\"\(url)\" is not a URL with a scheme (e.g. traffic://region); register the host app's scheme and pass a whole URL")
        }
        begin(now)
        let id = WidgetOpenURLID(rawValue: takeID())
        widget.openURLs.append(PendingOpenURL(id: id, url: url, deadline: clock + configuration.openURLTimeout))
        output.files.append(.writeFile(name: WidgetContainerLayout.openURLRequestFile(id),
                                       bytes: ContainerCodec.openURLRequest(WidgetOpenURLRequest(id: id, url: url))))
        return (id, finish())
    }

    /// Widget: the system asks for an update (`widgetPerformUpdate(completionHandler:)`) and allows
    /// `budget` for it. Exactly one ``WidgetEvent/refreshCompleted(_:_:)`` follows: `overrun` when
    /// the budget runs out first (the work goes on, its result is not reported again); otherwise
    /// `failed` when a request of the work failed, `newData` when what the widget shows differs from
    /// the last `newData`, else `noData`. The work: with the connection started, list the devices
    /// and scenes on the widget, then read every listed device's properties; without it, none (the
    /// result follows at once from the container's state). A refresh asked for while one's work
    /// runs joins that work and gets its result.
    /// - Throws: `wrongRole` on the host; `invalidParameter` for a budget under 1 ns.
    public mutating func refreshRequested(budget: Duration, now: Duration) throws(WidgetError) -> (WidgetRefreshID, [WidgetAction]) {
        try requireRole(.widget, "refreshRequested")
        guard budget > .zero else {
            throw WidgetError(.invalidParameter, "a refresh budget must be positive; got \(budget)")
        }
        begin(now)
        let id = WidgetRefreshID(rawValue: widget.nextRefreshID)
        widget.nextRefreshID = id.rawValue == .max ? 1 : id.rawValue + 1
        widget.refreshes.append(PendingRefresh(id: id, deadline: clock + budget))
        output.events.append(.refreshStarted(id, budget: budget))
        startOrJoinRound(id)
        return (id, finish())
    }

    // MARK: - Both: the cloud

    /// Opens the long-lived MQTT connection (``WidgetAction/mqttConnect(clientID:)``), subscribes
    /// when connected, and keeps it: after a drop it reconnects and subscribes again. Starting a
    /// started connection does nothing.
    public mutating func startConnection(now: Duration) -> [WidgetAction] {
        begin(now)
        guard case .stopped(let history) = phase else { return finish() }
        connect(ConnectionAttempt(failures: 0, history: history))
        return finish()
    }

    /// Closes the connection for good (until ``startConnection(now:)``): every request without a
    /// result fails with `connectionStopped`. Stopping a stopped connection does nothing.
    public mutating func stopConnection(now: Duration) -> [WidgetAction] {
        begin(now)
        guard phase.state != .stopped else { return finish() }
        if phase.isOpen { output.mqtt.append(.mqttDisconnect) }
        setPhase(.stopped(phase.history))
        while let request = requests.first {
            completeRequest(request.sequence, .failure(.connectionStopped))
        }
        return finish()
    }

    /// `/iotx/ilop/queryComponentProduct`: the devices on the widget. On success the shown list is
    /// replaced (``WidgetEvent/widgetDevicesChanged(_:)`` when it differs).
    /// - Throws: `notStarted` before ``startConnection(now:)``.
    public mutating func listWidgetDevices(now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireStarted("listWidgetDevices")
        begin(now)
        let id = issue(.queryComponentProduct, params: .object([:]), origin: .app)
        return (id, finish())
    }

    /// Host: `/iotx/ilop/updateComponentProduct`: the devices on the widget become `iotIds`, in order.
    /// - Throws: `wrongRole` on the widget; `invalidParameter` for an empty or repeated id; `notStarted`.
    public mutating func updateWidgetDevices(_ iotIds: [String], now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireRole(.host, "updateWidgetDevices")
        try requireIDs(iotIds, what: "device id")
        try requireStarted("updateWidgetDevices")
        begin(now)
        let id = issue(.updateComponentProduct, params: .object(["iotIds": .array(iotIds.map(WidgetJSON.string))]), origin: .app)
        return (id, finish())
    }

    /// `/iotx/ilop/queryComponentProperty`: a device's properties. Newer values are shown
    /// (``WidgetEvent/devicePropertiesChanged(iotId:_:)``); a value older than one already shown is
    /// not.
    /// - Throws: `invalidParameter` for an empty id or product key; `notStarted`.
    public mutating func queryProperties(iotId: String, productKey: String, now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        guard !iotId.isEmpty, !productKey.isEmpty else {
            throw WidgetError(.invalidParameter, "queryProperties needs a device id and its product key (both from listWidgetDevices)")
        }
        try requireStarted("queryProperties")
        begin(now)
        let id = issueRead(iotId: iotId, productKey: productKey, origin: .app)
        return (id, finish())
    }

    /// Widget: `/thing/properties/set`. The app hears the response (success or failure), then —
    /// when the cloud sends it — the change as ``WidgetEvent/devicePropertiesChanged(iotId:_:)``,
    /// in that order even when the notification arrives first.
    /// - Throws: `wrongRole` on the host; `invalidParameter` for an empty id, no items or an empty
    ///   property name; `notStarted`.
    public mutating func setProperties(iotId: String, _ items: [String: WidgetJSON], now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireRole(.widget, "setProperties")
        guard !iotId.isEmpty, !items.isEmpty, !items.keys.contains("") else {
            throw WidgetError(.invalidParameter, "setProperties needs a device id and at least one named property, e.g. [\"powerstate\": 1]")
        }
        try requireStarted("setProperties")
        begin(now)
        let id = issue(.setProperties, params: .object(["iotId": .string(iotId), "items": .object(items)]), origin: .app,
                       iotId: iotId, setProperties: Set(items.keys))
        return (id, finish())
    }

    /// `/living/appwidget/list`: the scenes on the widget. On success the shown list is replaced
    /// (``WidgetEvent/widgetScenesChanged(_:)`` when it differs).
    /// - Throws: `notStarted`.
    public mutating func listWidgetScenes(now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireStarted("listWidgetScenes")
        begin(now)
        let id = issue(.appWidgetList, params: .object([:]), origin: .app)
        return (id, finish())
    }

    /// Host: `/living/scene/query` with catalog `"0"`: one page of the account's scenes.
    /// - Throws: `wrongRole` on the widget; `invalidParameter` for a page number or size under 1; `notStarted`.
    public mutating func queryScenes(pageNo: Int = 1, pageSize: Int = 20, now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireRole(.host, "queryScenes")
        guard pageNo >= 1, pageSize >= 1 else {
            throw WidgetError(.invalidParameter, "queryScenes pages count from 1 and hold at least 1 scene; got pageNo \(pageNo), pageSize \(pageSize)")
        }
        try requireStarted("queryScenes")
        begin(now)
        let id = issue(.sceneQuery, params: .object(["catalogId": "0", "pageNo": .int(Int64(pageNo)), "pageSize": .int(Int64(pageSize))]), origin: .app)
        return (id, finish())
    }

    /// Host: `/living/appwidget/create`: the scenes on the widget become `sceneIds`, in order.
    /// - Throws: `wrongRole` on the widget; `invalidParameter` for an empty or repeated id; `notStarted`.
    public mutating func updateWidgetScenes(_ sceneIds: [String], now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireRole(.host, "updateWidgetScenes")
        try requireIDs(sceneIds, what: "scene id")
        try requireStarted("updateWidgetScenes")
        begin(now)
        let id = issue(.appWidgetCreate, params: .object(["sceneIds": .array(sceneIds.map(WidgetJSON.string))]), origin: .app)
        return (id, finish())
    }

    /// Widget: `/scene/fire`: runs a scene; the response may list devices it skipped; the changes
    /// come as notifications.
    /// - Throws: `wrongRole` on the host; `invalidParameter` for an empty id; `notStarted`.
    public mutating func fireScene(_ sceneId: String, now: Duration) throws(WidgetError) -> (WidgetRequestID, [WidgetAction]) {
        try requireRole(.widget, "fireScene")
        guard !sceneId.isEmpty else {
            throw WidgetError(.invalidParameter, "fireScene needs a scene id (from listWidgetScenes)")
        }
        try requireStarted("fireScene")
        begin(now)
        let id = issue(.sceneFire, params: .object(["sceneId": .string(sceneId)]), origin: .app)
        return (id, finish())
    }

    /// Fires every wait whose deadline is at or before `now`, earliest first (ties: refresh budgets,
    /// then requests in call order, open-host-app requests, reconnection). A call before
    /// ``nextDeadline`` does nothing, except hand out what a restore owed.
    public mutating func handleTimeout(now: Duration) -> [WidgetAction] {
        begin(now)
        return finish()
    }

    // MARK: - Role state

    /// The host's own state. Only host paths use it, each behind ``requireRole(_:_:)`` or a role
    /// check, so reaching it on the widget is a broken invariant.
    var host: HostSide {
        get {
            guard case .host(let side) = roleState else { preconditionFailure("WidgetCore: host state used by the widget") }
            return side
        }
        _modify {
            guard case .host(var side) = roleState else { preconditionFailure("WidgetCore: host state used by the widget") }
            // While `side` is lent out, the enum holds an empty placeholder (empty arrays and sets
            // allocate nothing), so `side` is the only reference to its storage and changes in
            // place instead of copying it on every call. Nothing sees the placeholder: the
            // caller holds exclusive access to the core until the put-back, which `defer` makes
            // happen even if the caller's access ends by an error.
            roleState = .widget(WidgetSide())
            defer { roleState = .host(side) }
            yield &side
        }
    }

    /// The widget's own state. Only widget paths use it, each behind ``requireRole(_:_:)`` or a
    /// role check, so reaching it on the host is a broken invariant.
    var widget: WidgetSide {
        get {
            guard case .widget(let side) = roleState else { preconditionFailure("WidgetCore: widget state used by the host") }
            return side
        }
        _modify {
            guard case .widget(var side) = roleState else { preconditionFailure("WidgetCore: widget state used by the host") }
            // An empty placeholder while `side` is lent out, so it changes in place (see `host`).
            roleState = .host(HostSide())
            defer { roleState = .widget(side) }
            yield &side
        }
    }

    // MARK: - Checks

    func requireRole(_ needed: WidgetRole, _ api: String) throws(WidgetError) {
        guard role == needed else {
            throw WidgetError(.wrongRole, needed == .host
                ? "\(api) is a host-app call; the widget only reads what the host writes"
                : "\(api) is a widget call; the host app does not make it")
        }
    }

    func requireStarted(_ api: String) throws(WidgetError) {
        guard phase.state != .stopped else {
            throw WidgetError(.notStarted, "\(api) before startConnection: nothing would send it; call startConnection first")
        }
    }

    func requireIDs(_ ids: [String], what: String) throws(WidgetError) {
        guard !ids.contains(""), Set(ids).count == ids.count else {
            throw WidgetError(.invalidParameter, "every \(what) must be non-empty and listed once; got \(ids)")
        }
    }

    // MARK: - Call framing

    /// The next id text: incarnation and sequence.
    mutating func takeID() -> String {
        let sequence = nextSequence
        nextSequence += 1
        return Self.idText(incarnation: incarnation, sequence: sequence)
    }

    static func idText(incarnation: UInt32, sequence: UInt64) -> String {
        let hex = String(incarnation, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex + "-" + String(sequence)
    }

    /// Whose id a response carries: this incarnation's (with its sequence, `nil` when the part
    /// after the incarnation is not a number) or another's.
    func classifyResponseID(_ id: String) -> ResponseIDOwner {
        let prefix = Self.idText(incarnation: incarnation, sequence: 0).dropLast(1)
        guard id.hasPrefix(prefix) else { return .otherIncarnation }
        return .thisIncarnation(UInt64(id.dropFirst(prefix.count)))
    }

    /// Notes how a request ended, forgetting the oldest once there are too many to keep.
    mutating func rememberFinished(_ sequence: UInt64, _ outcome: FinishedRequest) {
        finished[sequence] = outcome
        if UInt64(finished.count) > 2 * Self.rememberedResults {
            let horizon = nextSequence > Self.rememberedResults ? nextSequence - Self.rememberedResults : 0
            finished = finished.filter { $0.key >= horizon }
        }
    }

    mutating func setPhase(_ newPhase: ConnectionPhase) {
        let before = phase.state
        phase = newPhase
        if newPhase.state != before { output.events.append(.connectionStateChanged(newPhase.state)) }
    }

    /// Starts a call: takes `now`, hands out what a restore owed, fires every due timer.
    mutating func begin(_ now: Duration) {
        output = CallOutput()
        clock = max(clock, now)
        if !deferredFiles.isEmpty {
            output.files += deferredFiles
            deferredFiles = []
        }
        if !deferredEvents.isEmpty {
            output.events += deferredEvents
            deferredEvents = []
        }
        fireDueTimers()
    }

    /// Ends a call: container actions, events, MQTT actions.
    mutating func finish() -> [WidgetAction] {
        let actions = output.files + output.events.map(WidgetAction.event) + output.mqtt
        output = CallOutput()
        return actions
    }

    // MARK: - Timers

    func dueTimers() -> [(deadline: Duration, timer: DueTimer)] {
        var timers: [(deadline: Duration, timer: DueTimer)] = []
        // Only the widget has refresh budgets and open-host-app waits.
        let side: WidgetSide? = if case .widget(let side) = roleState { side } else { nil }
        for refresh in side?.refreshes ?? [] { timers.append((refresh.deadline, .refreshBudget(refresh.id))) }
        for request in requests { timers.append((request.deadline, .request(request.sequence))) }
        for pending in side?.openURLs ?? [] { timers.append((pending.deadline, .openURL(pending.id))) }
        if case .waitingToReconnect(_, let deadline) = phase { timers.append((deadline, .reconnect)) }
        return timers
    }

    mutating func fireDueTimers() {
        while true {
            var earliest: (deadline: Duration, timer: DueTimer)?
            for candidate in dueTimers() where candidate.deadline <= clock {
                if let best = earliest, (best.deadline, best.timer.rank) <= (candidate.deadline, candidate.timer.rank) { continue }
                earliest = candidate
            }
            guard let (deadline, timer) = earliest else { return }
            fire(timer, deadline: deadline)
        }
    }

    mutating func fire(_ timer: DueTimer, deadline: Duration) {
        switch timer {
        case .refreshBudget(let id):
            guard let index = widget.refreshes.firstIndex(where: { $0.id == id }) else { return }
            widget.refreshes.remove(at: index)
            output.events.append(.timeout(.refreshBudget(id), deadline: deadline))
            output.events.append(.refreshCompleted(id, .overrun))
        case .request(let sequence):
            guard let request = requests.first(where: { $0.sequence == sequence }) else { return }
            output.events.append(.timeout(.request(request.id), deadline: deadline))
            completeRequest(sequence, .failure(.timedOut))
        case .openURL(let id):
            guard let index = widget.openURLs.firstIndex(where: { $0.id == id }) else { return }
            widget.openURLs.remove(at: index)
            output.events.append(.timeout(.openURL(id), deadline: deadline))
            output.files.append(.removeFile(name: WidgetContainerLayout.openURLRequestFile(id)))
            output.events.append(.openURLCompleted(id, opened: false))
        case .reconnect:
            guard case .waitingToReconnect(let attempt, _) = phase else { return }
            output.events.append(.timeout(.reconnect(attempt: attempt.failures), deadline: deadline))
            connect(attempt)
        }
    }
}
