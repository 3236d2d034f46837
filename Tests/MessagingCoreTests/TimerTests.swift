import Testing
@testable import MessagingCore
import MonkeyC

/// One wait of the core: how to arm it and what firing it reports.
struct TimerCase: Sendable, CustomTestStringConvertible {
    let kind: MessagingTimeoutKind
    var testDescription: String { kind.rawValue }

    static let all = MessagingTimeoutKind.allCases.map(TimerCase.init)
}

@Suite struct TimerTests {
    static let start: Duration = .seconds(100)

    /// Arms the wait of `kind` at `start`; returns the rig and the events firing must add (after the timeout event).
    func armed(_ kind: MessagingTimeoutKind) throws -> (rig: Rig, consequence: [MessagingEvent]) {
        let silence: FakeWatch.Silence? = switch kind {
        case .connect: .connect
        case .appInfo: .appInfo
        case .openApp: .openApp
        case .keyAck: .keyAck
        case .firstAck: .firstAck
        case .windowAck: .windowAck
        case .lastAck: .lastAck
        case .inboundTransfer: nil
        }
        var rig = Rig { watch in if let silence { watch.silences = [silence] } }
        rig.now = Self.start
        switch kind {
        case .appInfo:
            let (request, actions) = try rig.core.getAppStatus(echoOnA, now: rig.now)
            rig.run(actions)
            return (rig, [.appStatus(request, echoOnA, nil)])
        case .openApp:
            let (request, actions) = try rig.core.openApp(echoOnA, now: rig.now)
            rig.run(actions)
            return (rig, [.openAppResult(request, echoOnA, .failureTimeout)])
        case .inboundTransfer:
            rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
            let packets = rig.watches[watchA]!.transferPackets(twoKilobytes, app: echoApp)
            rig.deliver(Array(packets.prefix(5)))
            return (rig, [])
        default:
            let send = rig.send(twoKilobytes)
            return (rig, [.completion(send, echoOnA, .failureTimeout)])
        }
    }

    @Test(arguments: TimerCase.all)
    func waitFiresAtItsDeadlineAndNotBefore(_ sample: TimerCase) throws {
        var (rig, consequence) = try armed(sample.kind)
        let limit: Duration = [.connect, .appInfo, .openApp].contains(sample.kind) ? .seconds(3) : .seconds(5)
        let deadline = Self.start + limit
        #expect(rig.core.nextDeadline == deadline)
        rig.clearLogs()
        rig.advance(to: deadline - .nanoseconds(1))
        #expect(rig.events == [])
        #expect(rig.writes.isEmpty)
        rig.advance(to: deadline)
        let app: IQApp? = echoOnA
        #expect(rig.events == [.timeout(sample.kind, watchA, app, deadline: deadline)] + consequence)
        #expect(!rig.core.hasPendingWork)
        #expect(rig.core.nextDeadline == nil)
    }

    @Test func packetsFromTheWatchPushTheInboundDeadlineBack() throws {
        var (rig, _) = try armed(.inboundTransfer)
        let packets = rig.watches[watchA]!.transferPackets(twoKilobytes, app: echoApp)
        rig.now = Self.start + .seconds(4)
        rig.deliver([packets[5]])
        #expect(rig.core.nextDeadline == Self.start + .seconds(9))
    }

    @Test func lateTimeoutCallFiresEverythingDueInDeadlineOrder() throws {
        var rig = Rig { $0.silences = [.appInfo, .keyAck] }
        let (request, actions) = try rig.core.getAppStatus(otherOnA, now: .zero)
        rig.run(actions)
        rig.now = .seconds(1)
        let send = rig.send(1)
        // The connect for the send waits behind the app-info command; it goes out when that times out at 3 s.
        rig.clearLogs()
        rig.advance(to: .seconds(60))
        #expect(rig.events == [
            .timeout(.appInfo, watchA, otherOnA, deadline: .seconds(3)), .appStatus(request, otherOnA, nil),
            .connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: false),
            .progress(send, echoOnA, sent: 0, total: 16),
        ])
        // Waits armed by a late call run from the time of the call.
        #expect(rig.core.nextDeadline == .seconds(65))
    }

    @Test func inputAfterADeadlineFiresTheTimerFirst() throws {
        var rig = Rig { $0.silences = [.appInfo] }
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        rig.clearLogs()
        rig.now = .seconds(3)
        rig.deliver([hex("0005 0180e5205f7e11e498030800200c9a66 0700")])
        #expect(rig.events.prefix(2) == [.timeout(.appInfo, watchA, echoOnA, deadline: .seconds(3)), .appStatus(request, echoOnA, nil)])
        #expect(rig.violations == [.unexpectedResponse])
    }
}
