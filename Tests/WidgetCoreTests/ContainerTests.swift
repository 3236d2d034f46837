import Testing
@testable import WidgetCore

@Suite struct ContainerTests {
    static let settingsV1: WidgetJSON = ["lat": 59.969, "lon": 30.35, "spn": 0.2]

    /// The settings file the host writes for `settings` at `version`.
    func settingsFile(_ version: UInt64, _ settings: WidgetJSON) -> [UInt8] {
        WidgetJSON.object(["settings": settings, "version": .int(Int64(version))]).encoded()
    }

    @Test func hostWritesSettingsAtomicallyWithTheNextVersion() throws {
        var host = makeCore(.host)
        let actions = try host.updateSettings(Self.settingsV1, now: .zero)
        #expect(actions == [.writeFile(name: "settings.json", bytes: Array(#"{"settings":{"lat":59.969,"lon":30.35,"spn":0.2},"version":1}"#.utf8))])
        let second = try host.updateSettings(["lat": 1.5], now: .zero)
        #expect(second == [.writeFile(name: "settings.json", bytes: Array(#"{"settings":{"lat":1.5},"version":2}"#.utf8))])
        #expect(host.settingsVersion == 2)
    }

    @Test func hostWritesNothingForSettingsEqualToTheLast() throws {
        var host = makeCore(.host)
        _ = try host.updateSettings(Self.settingsV1, now: .zero)
        #expect(try host.updateSettings(Self.settingsV1, now: .zero) == [.event(.settingsUnchanged)])
        #expect(host.settingsVersion == 1)
    }

    @Test func hostWritesHasContentOnlyWhenItChanges() throws {
        var host = makeCore(.host)
        #expect(try host.setHasContent(false, now: .zero) == [])
        #expect(try host.setHasContent(true, now: .zero) == [.writeFile(name: "has-content.json", bytes: Array(#"{"hasContent":true,"version":1}"#.utf8))])
        #expect(try host.setHasContent(true, now: .zero) == [])
        #expect(host.hasContent)
    }

    @Test func hostFilesShareOneVersionCounter() throws {
        var host = makeCore(.host)
        _ = try host.updateSettings(Self.settingsV1, now: .zero)
        let flag = try host.setHasContent(true, now: .zero)
        #expect(flag == [.writeFile(name: "has-content.json", bytes: ContainerCodec.hasContent(version: 2, hasContent: true))])
        _ = try host.updateSettings(["b": 1], now: .zero)
        #expect(host.settingsVersion == 3)
    }

    @Test func widgetShowsNewerSettingsReadWhole() {
        var widget = makeCore(.widget)
        let actions = widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero)
        #expect(actions == [.event(.settingsChanged(version: 1, settings: Self.settingsV1))])
        #expect(widget.settings == Self.settingsV1)
        #expect(widget.settingsVersion == 1)
    }

    @Test func widgetRejectsAHalfWrittenSettingsFileAndKeepsThePrevious() {
        var widget = makeCore(.widget)
        _ = widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero)
        let whole = settingsFile(2, ["lat": 10])
        for cut in 1..<whole.count {
            let actions = widget.containerChanged(name: "settings.json", bytes: Array(whole.prefix(cut)), now: .zero)
            #expect(violations(actions) == [.malformedFile], "prefix of \(cut) bytes")
            #expect(widget.settings == Self.settingsV1)
            #expect(widget.settingsVersion == 1)
        }
        #expect(events(widget.containerChanged(name: "settings.json", bytes: whole, now: .zero)) == [.settingsChanged(version: 2, settings: ["lat": 10])])
    }

    @Test(arguments: [
        #"[1,2]"#, #"{"version":1}"#, #"{"settings":{},"version":0}"#, #"{"settings":[],"version":1}"#,
        #"{"settings":{},"version":1.0}"#, #"{"settings":{},"version":1,"extra":true}"#, "",
    ])
    func widgetRejectsASettingsFileOfTheWrongShape(_ text: String) {
        var widget = makeCore(.widget)
        let actions = widget.containerChanged(name: "settings.json", bytes: Array(text.utf8), now: .zero)
        #expect(violations(actions) == [.malformedFile])
        #expect(widget.settings == nil)
    }

    @Test func widgetNeverGoesBackToAnOlderSettingsVersion() {
        var widget = makeCore(.widget)
        _ = widget.containerChanged(name: "settings.json", bytes: settingsFile(5, ["n": 5]), now: .zero)
        let actions = widget.containerChanged(name: "settings.json", bytes: settingsFile(4, ["n": 4]), now: .zero)
        #expect(actions == [.event(.staleFileIgnored(name: "settings.json", version: 4, shownVersion: 5))])
        #expect(widget.settings == ["n": 5])
    }

    @Test func aRepeatedNotificationOfTheShownSettingsIsSilent() {
        var widget = makeCore(.widget)
        _ = widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero)
        #expect(widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero) == [])
    }

    @Test func theSameVersionWithOtherSettingsIsAConflictAndTheShownOnesStay() {
        var widget = makeCore(.widget)
        _ = widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero)
        #expect(violations(widget.containerChanged(name: "settings.json", bytes: settingsFile(1, ["other": true]), now: .zero)) == [.conflictingFile])
        #expect(widget.settings == Self.settingsV1)
    }

    @Test func aDeletedSettingsFileIsAViolationAndTheSettingsStay() {
        var widget = makeCore(.widget)
        _ = widget.containerChanged(name: "settings.json", bytes: settingsFile(1, Self.settingsV1), now: .zero)
        #expect(violations(widget.containerChanged(name: "settings.json", bytes: nil, now: .zero)) == [.fileRemoved])
        #expect(widget.settings == Self.settingsV1)
    }

    @Test func widgetHearsHasContentChangesAndIgnoresOlderOnes() {
        var widget = makeCore(.widget)
        #expect(events(widget.containerChanged(name: "has-content.json", bytes: ContainerCodec.hasContent(version: 2, hasContent: true), now: .zero))
                == [.hasContentChanged(true)])
        #expect(events(widget.containerChanged(name: "has-content.json", bytes: ContainerCodec.hasContent(version: 1, hasContent: false), now: .zero))
                == [.staleFileIgnored(name: "has-content.json", version: 1, shownVersion: 2)])
        #expect(widget.hasContent)
        #expect(violations(widget.containerChanged(name: "has-content.json", bytes: Array("{\"hasContent\":1,\"version\":3}".utf8), now: .zero)) == [.malformedFile])
        #expect(widget.hasContent)
    }

    @Test func eachSideIgnoresItsOwnFilesAndNamesOutsideTheLayout() {
        var host = makeCore(.host)
        var widget = makeCore(.widget)
        #expect(host.containerChanged(name: "settings.json", bytes: Array("garbage".utf8), now: .zero) == [])
        #expect(host.containerChanged(name: "open-url-result.abc.json", bytes: Array("garbage".utf8), now: .zero) == [])
        #expect(widget.containerChanged(name: "open-url-request.abc.json", bytes: Array("garbage".utf8), now: .zero) == [])
        #expect(widget.containerChanged(name: ".settings.json.tmp-1", bytes: Array("{".utf8), now: .zero) == [])
        #expect(widget.containerChanged(name: "photos/cat.jpg", bytes: [0xFF], now: .zero) == [])
    }

    @Test func anOpenURLFileNameWithABadIDIsAViolation() {
        var host = makeCore(.host)
        #expect(violations(host.containerChanged(name: "open-url-request.a b.json", bytes: [], now: .zero)) == [.malformedFile])
    }

    @Test func theWidgetRebuildsItsViewFromTheContainerAtLaunch() {
        let files = [
            "settings.json": settingsFile(7, Self.settingsV1),
            "has-content.json": ContainerCodec.hasContent(version: 6, hasContent: true),
        ]
        var widget = makeCore(.widget, files: files)
        #expect(widget.settings == Self.settingsV1)
        #expect(widget.settingsVersion == 7)
        #expect(widget.hasContent)
        #expect(widget.nextDeadline == nil)
        #expect(widget.handleTimeout(now: .seconds(1)) == [])
        // The next write is newer than what is in the container; an older one stays ignored.
        #expect(events(widget.containerChanged(name: "settings.json", bytes: settingsFile(6, ["n": 6]), now: .seconds(1)))
                == [.staleFileIgnored(name: "settings.json", version: 6, shownVersion: 7)])
    }

    @Test func theHostCarriesOnCountingFromTheNewestVersionInTheContainer() throws {
        let files = [
            "settings.json": settingsFile(4, Self.settingsV1),
            "has-content.json": ContainerCodec.hasContent(version: 9, hasContent: true),
        ]
        var host = makeCore(.host, files: files)
        #expect(host.settings == Self.settingsV1 && host.hasContent)
        #expect(try host.updateSettings(["n": 1], now: .zero) == [.writeFile(name: "settings.json", bytes: settingsFile(10, ["n": 1]))])
    }

    @Test func aMalformedFileAtLaunchIsReportedByTheFirstCall() {
        var widget = makeCore(.widget, files: ["settings.json": Array(#"{"settings":{"#.utf8)])
        #expect(widget.settings == nil)
        #expect(widget.hasPendingWork)
        #expect(widget.nextDeadline == .zero)
        #expect(violations(widget.handleTimeout(now: .zero)) == [.malformedFile])
        #expect(!widget.hasPendingWork)
        #expect(widget.nextDeadline == nil)
    }
}
