import Testing
@testable import MessagingCore
import MonkeyC

@Suite struct AppStatusTests {
    @Test func installedAppReportsItsVersion() throws {
        var rig = Rig()
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        #expect(rig.events == [.appStatus(request, echoOnA, IQAppStatus(isInstalled: true, version: 7))])
        #expect(rig.writes.map(\.bytes) == [hex("0005 0180e5205f7e11e498030800200c9a66")])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func versionFFFFMeansNotInstalled() throws {
        var rig = Rig { $0.installed = [:] }
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        #expect(rig.events == [.appStatus(request, echoOnA, IQAppStatus(isInstalled: false, version: 0))])
    }

    @Test func appStatusTimesOutAtExactlyThreeSeconds() throws {
        var rig = Rig { $0.silences = [.appInfo] }
        rig.now = .seconds(10)
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: rig.now)
        rig.run(actions)
        #expect(rig.core.nextDeadline == .seconds(13))
        rig.advance(to: .seconds(13) - .nanoseconds(1))
        #expect(rig.events == [])
        rig.advance(to: .seconds(13))
        #expect(rig.events == [.timeout(.appInfo, watchA, echoOnA, deadline: .seconds(13)), .appStatus(request, echoOnA, nil)])
        #expect(!rig.core.hasPendingWork)
        #expect(rig.core.nextDeadline == nil)
    }

    @Test func appStatusOfADisconnectedDeviceIsNilAtOnce() throws {
        var rig = Rig()
        _ = rig.core.linkDisconnected(watchA, now: .zero)
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        #expect(actions == [.event(.appStatus(request, echoOnA, nil))])
    }

    @Test func commandsToOneDeviceGoOneAtATime() throws {
        var rig = Rig { $0.silences = [.appInfo] }
        let (first, firstActions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        let (second, secondActions) = try rig.core.getAppStatus(otherOnA, now: .zero)
        rig.run(firstActions + secondActions)
        #expect(rig.writes.count == 1)
        rig.advance(to: .seconds(3))
        #expect(rig.writes.count == 2)
        rig.advance(to: .seconds(6))
        #expect(rig.events == [
            .timeout(.appInfo, watchA, echoOnA, deadline: .seconds(3)), .appStatus(first, echoOnA, nil),
            .timeout(.appInfo, watchA, otherOnA, deadline: .seconds(6)), .appStatus(second, otherOnA, nil),
        ])
    }

    @Test func disconnectWhileWaitingGivesNilStatus() throws {
        var rig = Rig { $0.silences = [.appInfo] }
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        rig.clearLogs()
        rig.run(rig.core.linkDisconnected(watchA, now: .seconds(1)))
        #expect(rig.events == [.deviceStatus(watchA, .notConnected), .appStatus(request, echoOnA, nil)])
        #expect(rig.core.nextDeadline == nil)
    }
}

/// An open-app answer code and the result the app sees.
struct OpenAppCase: Sendable, CustomTestStringConvertible {
    let code: UInt8
    let result: IQSendMessageResult
    var testDescription: String { "code \(code) → \(result.name)" }
}

@Suite struct OpenAppTests {
    @Test(arguments: [
        OpenAppCase(code: 0, result: .success),
        OpenAppCase(code: 1, result: .failurePromptNotDisplayed),
        OpenAppCase(code: 2, result: .failureAppNotFound),
        OpenAppCase(code: 3, result: .failureAppAlreadyRunning),
    ])
    func answerCodeMapsToResult(_ sample: OpenAppCase) throws {
        var rig = Rig { $0.openAppCodes[echoApp] = OpenAppCode(rawValue: sample.code) }
        let (request, actions) = try rig.core.openApp(echoOnA, now: .zero)
        rig.run(actions)
        #expect(rig.writes.map(\.bytes) == [hex("0006 0180e5205f7e11e498030800200c9a66")])
        #expect(rig.events == [.openAppResult(request, echoOnA, sample.result)])
    }

    @Test func unknownCodeIsAViolationAndFailureUnknown() throws {
        var rig = Rig { $0.openAppCodes[echoApp] = OpenAppCode(rawValue: 9) }
        let (request, actions) = try rig.core.openApp(echoOnA, now: .zero)
        rig.run(actions)
        #expect(rig.violations == [.invalidStatus])
        #expect(rig.events.last == .openAppResult(request, echoOnA, .failureUnknown))
    }

    @Test func openAppTimesOutAtExactlyThreeSeconds() throws {
        var rig = Rig { $0.silences = [.openApp] }
        let (request, actions) = try rig.core.openApp(echoOnA, now: .zero)
        rig.run(actions)
        rig.advance(to: .seconds(3) - .nanoseconds(1))
        #expect(rig.events == [])
        rig.advance(to: .seconds(3))
        #expect(rig.events == [.timeout(.openApp, watchA, echoOnA, deadline: .seconds(3)), .openAppResult(request, echoOnA, .failureTimeout)])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func openAppOnADisconnectedDeviceFailsAtOnce() throws {
        var rig = Rig()
        _ = rig.core.linkDisconnected(watchA, now: .zero)
        let (request, actions) = try rig.core.openApp(echoOnA, now: .zero)
        #expect(actions == [.event(.openAppResult(request, echoOnA, .failureDeviceNotAvailable))])
    }
}
