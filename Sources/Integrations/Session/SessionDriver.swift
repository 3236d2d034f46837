import ReplayKit
import BehaviourTrace
import MonkeyC
import SessionCore

/// Applies ``SessionAPICall``s and link inputs to one side's ``SessionCore`` and keeps what a host
/// must keep between process starts: the last stored snapshot and the bytes of the files being
/// sent. Replay and the live hosts both drive their core through it, so a call becomes the same
/// trace events in both, and a `start` with `restored: true` rebuilds the core the same way (from
/// the last `persist` the core handed out, as a host that stores every snapshot before acting on
/// the frames after it would).
public struct SessionDriver: ReplayedCore, Sendable {
    /// The core; `nil` until a `start`.
    public private(set) var core: SessionCore?
    /// The core's settings.
    public var configuration: SessionConfiguration
    /// The last snapshot the core handed out (what a crash leaves).
    public private(set) var lastSnapshot: SessionSnapshot?
    /// Files being sent, by id, until their transfer finishes or is cancelled.
    public private(set) var outgoingFiles: [FileTransferID: [UInt8]] = [:]

    /// A driver with no core yet.
    public init(configuration: SessionConfiguration = .init()) {
        self.configuration = configuration
    }

    /// What a live host read back from its durable store before a restored `start`.
    public mutating func preload(snapshot: SessionSnapshot?, outgoingFiles: [FileTransferID: [UInt8]]) {
        lastSnapshot = snapshot
        self.outgoingFiles = outgoingFiles
    }

    /// Applies one call: the core's actions and the call's own trace events (`api_call`, or
    /// `api_error` when the core refuses it; its state is then unchanged).
    public mutating func apply(_ call: SessionAPICall, now: Duration) -> (actions: [SessionAction], events: [TraceEvent]) {
        let timeNs = now.replayNanoseconds
        var fields = call.record
        func refuse(_ code: SessionErrorCode?, _ detail: String) -> (actions: [SessionAction], events: [TraceEvent]) {
            if let code {
                fields["code"] = .int(Int64(code.rawValue))
                fields["error"] = .string(code.name)
            }
            fields["detail"] = .string(detail)
            return ([], [TraceEvent(timeNs: timeNs, core: SessionTrace.core, event: .apiError, fields: fields)])
        }
        if case let .start(role, identity, seed, restored) = call {
            if restored, let snapshot = lastSnapshot {
                do throws(SessionError) {
                    core = try SessionCore(restoring: snapshot, configuration: configuration,
                                           randomSource: SeededSessionRandom(seed: seed), outgoingFiles: outgoingFiles)
                } catch {
                    return refuse(error.code, "the stored snapshot cannot be restored: \(error.detail)")
                }
                if snapshot.role != role || snapshot.identity != identity {
                    fields["note"] = .string("the stored snapshot is of \(snapshot.role) \(snapshot.identity); it was restored as it is")
                }
            } else {
                if restored { fields["note"] = .string("no stored snapshot: started as a new core") }
                core = SessionCore(role: role, identity: identity, configuration: configuration, randomSource: SeededSessionRandom(seed: seed))
                outgoingFiles = [:]
            }
            return ([], [TraceEvent(timeNs: timeNs, core: SessionTrace.core, event: .apiCall, fields: fields)])
        }
        guard var session = core else {
            return refuse(nil, "no session yet: a `start` record must come first")
        }
        var actions: [SessionAction] = []
        do throws(SessionError) {
            switch call {
            case .start:
                break
            case .setPaired(let peer):
                actions = session.setPairedDevice(peer, now: now)
            case .setAppState(let state):
                actions = try session.setWatchAppState(state, now: now)
            case .activate:
                actions = try session.activate(now: now)
            case .updateContext(let value):
                actions = try session.updateApplicationContext(value, now: now)
            case let .sendMessage(value, expectsReply):
                let (id, result) = try session.sendMessage(value, expectsReply: expectsReply, now: now)
                fields["id"] = .int(Int64(id.rawValue))
                actions = result
            case let .sendMessageData(bytes, expectsReply):
                let (id, result) = try session.sendMessageData(bytes, expectsReply: expectsReply, now: now)
                fields["id"] = .int(Int64(id.rawValue))
                actions = result
            case let .reply(id, value):
                actions = try session.replyToMessage(id, with: value, now: now)
            case let .replyData(id, bytes):
                actions = try session.replyToMessageData(id, with: bytes, now: now)
            case .transferUserInfo(let value):
                let (id, result) = try session.transferUserInfo(value, now: now)
                fields["id"] = .int(Int64(id.rawValue))
                actions = result
            case .transferComplication(let value):
                let (id, result) = try session.transferCurrentComplicationUserInfo(value, now: now)
                fields["id"] = .int(Int64(id.rawValue))
                fields["remaining"] = .int(Int64(session.remainingComplicationUserInfoTransfers))
                actions = result
            case .cancelUserInfo(let id):
                actions = try session.cancelUserInfoTransfer(id, now: now)
            case let .transferFile(content, metadata):
                let bytes = content.bytes
                let (id, result) = try session.transferFile(bytes, metadata: metadata, now: now)
                fields["file"] = .int(Int64(id.rawValue))
                outgoingFiles[id] = bytes
                actions = result
            case .cancelFile(let id):
                actions = try session.cancelFileTransfer(id, now: now)
                outgoingFiles[id] = nil
            }
        } catch {
            return refuse(error.code, error.detail)
        }
        core = session
        note(actions)
        return (actions, [TraceEvent(timeNs: timeNs, core: SessionTrace.core, event: .apiCall, fields: fields)])
    }

    /// ``SessionCore/linkUp(maxPayload:now:)``; nothing without a core.
    public mutating func linkUp(maxPayload: Int, now: Duration) -> [SessionAction] {
        run { $0.linkUp(maxPayload: maxPayload, now: now) }
    }

    /// ``SessionCore/linkDown(now:)``.
    public mutating func linkDown(now: Duration) -> [SessionAction] {
        run { $0.linkDown(now: now) }
    }

    /// ``SessionCore/receive(_:now:)``: one ATT value from the peer.
    public mutating func receive(_ bytes: [UInt8], now: Duration) -> [SessionAction] {
        run { $0.receive(bytes, now: now) }
    }

    /// ``SessionCore/handleTimeout(now:)``.
    public mutating func handleTimeout(now: Duration) -> [SessionAction] {
        run { $0.handleTimeout(now: now) }
    }

    /// The core's next deadline.
    public var nextDeadline: Duration? { core?.nextDeadline }

    private mutating func run(_ body: (inout SessionCore) -> [SessionAction]) -> [SessionAction] {
        guard var session = core else { return [] }
        core = nil // keeps the core uniquely referenced while it changes
        let actions = body(&session)
        core = session
        note(actions)
        return actions
    }

    /// Keeps the last snapshot and forgets files whose transfer ended.
    private mutating func note(_ actions: [SessionAction]) {
        for action in actions {
            switch action {
            case .persist(let snapshot):
                lastSnapshot = snapshot
            case .event(.fileTransferDidFinish(let id, _)):
                outgoingFiles[id] = nil
            default:
                break
            }
        }
    }
}
