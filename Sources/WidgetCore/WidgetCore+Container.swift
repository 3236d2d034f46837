// The App Group container: rebuilding a side's view at launch, and the other process's writes.

extension WidgetCore {
    /// A container file changed (the host read it after inotify said so): `bytes` is its content,
    /// `nil` when it was deleted. Each side acts on the other side's files only (its own writes
    /// come back as changes too, and are ignored), and on names of the layout only
    /// (``WidgetContainerLayout``). A file that does not parse is a `malformed-file` violation and
    /// the value shown stays; a settings or has-content version older than the one shown is ignored
    /// (``WidgetEvent/staleFileIgnored(name:version:shownVersion:)``), so the widget never goes back.
    public mutating func containerChanged(name: String, bytes: [UInt8]?, now: Duration) -> [WidgetAction] {
        begin(now)
        guard let file = ContainerFile(name: name) else { return finish() }
        switch (role, file) {
        case (_, .badName(let name)):
            if role == .host ? name.hasPrefix(WidgetContainerLayout.openURLRequestPrefix) : name.hasPrefix(WidgetContainerLayout.openURLResultPrefix) {
                violation(.malformedFile, "\(name): an open-URL file name is \(name.hasPrefix(WidgetContainerLayout.openURLRequestPrefix) ? WidgetContainerLayout.openURLRequestPrefix : WidgetContainerLayout.openURLResultPrefix)<id>.json with an id of 1–64 letters, digits, '-' or '_'")
            }
        case (.widget, .settings):
            widgetReadSettings(bytes)
        case (.widget, .hasContent):
            widgetReadHasContent(bytes)
        case (.widget, .openURLResult(let id)):
            if let bytes { widgetReadOpenURLResult(id, bytes) }
        case (.host, .openURLRequest(let id)):
            if let bytes { hostReadOpenURLRequest(id, bytes) }
        case (.widget, .openURLRequest), (.host, .settings), (.host, .hasContent), (.host, .openURLResult):
            break // this side's own file
        }
        return finish()
    }

    // MARK: - Launch

    /// Rebuilds this side's view from the container's files (see `init`). What it owes (violations,
    /// re-delivered requests, removals) goes out with the first call.
    mutating func restoreContainer(_ files: [String: [UInt8]]) {
        for name in files.keys.sorted() {
            guard let file = ContainerFile(name: name), let bytes = files[name] else { continue }
            switch file {
            case .settings:
                switch ContainerCodec.decodeSettings(bytes) {
                case .success(let (version, settings)):
                    settingsVersionShown = version
                    settingsShown = settings
                case .failure(let problem):
                    deferredEvents.append(.violation(.malformedFile, detail: problem.detail + " (found at launch; nothing is shown until the host writes it again)"))
                }
            case .hasContent:
                switch ContainerCodec.decodeHasContent(bytes) {
                case .success(let (version, flag)):
                    hasContentVersion = version
                    hasContentShown = flag
                case .failure(let problem):
                    deferredEvents.append(.violation(.malformedFile, detail: problem.detail + " (found at launch)"))
                }
            case .openURLRequest(let id) where role == .host:
                if files[WidgetContainerLayout.openURLResultFile(id)] != nil {
                    // Answered before the restart, but the request was not removed yet.
                    host.answeredOpenURLs.insert(id)
                    deferredFiles.append(.removeFile(name: name))
                    continue
                }
                switch ContainerCodec.decodeOpenURLRequest(bytes, id: id) {
                case .success(let request):
                    host.deliveredOpenURLs.append(request)
                    deferredEvents.append(.openURLRequested(request))
                case .failure(let problem):
                    deferredEvents.append(.violation(.malformedFile, detail: problem.detail + " (found at launch)"))
                }
            case .openURLResult(let id) where role == .widget:
                // The widget process that asked is gone: nobody waits for this answer.
                switch ContainerCodec.decodeOpenURLResult(bytes, id: id) {
                case .success(let opened):
                    deferredEvents.append(.openURLResultDiscarded(id, opened: opened))
                    deferredFiles.append(.removeFile(name: name))
                case .failure(let problem):
                    deferredEvents.append(.violation(.malformedFile, detail: problem.detail + " (found at launch)"))
                }
            case .badName(let name):
                if role == .host ? name.hasPrefix(WidgetContainerLayout.openURLRequestPrefix) : name.hasPrefix(WidgetContainerLayout.openURLResultPrefix) {
                    deferredEvents.append(.violation(.malformedFile, detail: "\(name): not a valid open-URL file name (found at launch)"))
                }
            case .openURLRequest, .openURLResult:
                break // the other side's business (a widget's own requests wait for the host)
            }
        }
        // The host's next write must outnumber both files; the widget writes neither.
        if case .host = roleState { host.generation = max(settingsVersionShown, hasContentVersion) }
    }

    // MARK: - The widget reads the host's files

    mutating func widgetReadSettings(_ bytes: [UInt8]?) {
        let name = WidgetContainerLayout.settingsFile
        guard let bytes else {
            violation(.fileRemoved, "\(name) was deleted; the settings of version \(settingsVersionShown) stay shown (only the host writes it, and it never deletes it)")
            return
        }
        switch ContainerCodec.decodeSettings(bytes) {
        case .failure(let problem):
            violation(.malformedFile, problem.detail + "; version \(settingsVersionShown) stays shown")
        case .success(let (version, settings)):
            if version > settingsVersionShown {
                settingsVersionShown = version
                settingsShown = settings
                output.events.append(.settingsChanged(version: version, settings: settings))
            } else if version == settingsVersionShown {
                if settings != settingsShown {
                    violation(.conflictingFile, "\(name) version \(version) holds other settings than the version \(version) shown; the shown ones stay")
                }
            } else {
                output.events.append(.staleFileIgnored(name: name, version: version, shownVersion: settingsVersionShown))
            }
        }
    }

    mutating func widgetReadHasContent(_ bytes: [UInt8]?) {
        let name = WidgetContainerLayout.hasContentFile
        guard let bytes else {
            violation(.fileRemoved, "\(name) was deleted; has-content stays \(hasContentShown)")
            return
        }
        switch ContainerCodec.decodeHasContent(bytes) {
        case .failure(let problem):
            violation(.malformedFile, problem.detail + "; has-content stays \(hasContentShown)")
        case .success(let (version, flag)):
            if version > hasContentVersion {
                hasContentVersion = version
                if flag != hasContentShown {
                    hasContentShown = flag
                    output.events.append(.hasContentChanged(flag))
                }
            } else if version == hasContentVersion {
                if flag != hasContentShown {
                    violation(.conflictingFile, "\(name) version \(version) says \(flag), the version \(version) shown says \(hasContentShown); the shown one stays")
                }
            } else {
                output.events.append(.staleFileIgnored(name: name, version: version, shownVersion: hasContentVersion))
            }
        }
    }

    mutating func widgetReadOpenURLResult(_ id: WidgetOpenURLID, _ bytes: [UInt8]) {
        switch ContainerCodec.decodeOpenURLResult(bytes, id: id) {
        case .failure(let problem):
            violation(.malformedFile, problem.detail)
        case .success(let opened):
            output.files.append(.removeFile(name: WidgetContainerLayout.openURLResultFile(id)))
            if let index = widget.openURLs.firstIndex(where: { $0.id == id }) {
                widget.openURLs.remove(at: index)
                output.events.append(.openURLCompleted(id, opened: opened))
            } else {
                output.events.append(.openURLResultDiscarded(id, opened: opened))
            }
        }
    }

    // MARK: - The host reads the widget's requests

    mutating func hostReadOpenURLRequest(_ id: WidgetOpenURLID, _ bytes: [UInt8]) {
        guard !host.answeredOpenURLs.contains(id), !host.deliveredOpenURLs.contains(where: { $0.id == id }) else { return }
        switch ContainerCodec.decodeOpenURLRequest(bytes, id: id) {
        case .failure(let problem):
            violation(.malformedFile, problem.detail)
        case .success(let request):
            host.deliveredOpenURLs.append(request)
            output.events.append(.openURLRequested(request))
        }
    }

    mutating func violation(_ kind: WidgetViolationKind, _ detail: String) {
        output.events.append(.violation(kind, detail: detail))
    }
}
