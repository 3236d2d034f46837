import BehaviourTrace
import Testing
@testable import TetherWatchConnectivity

/// A class the app might put in a payload by mistake: not a property-list type.
private final class WorkoutSample {}

@Suite("WatchConnectivity payloads and errors")
struct PayloadAndErrorTests {
    @Test func aCustomClassInstanceIsPayloadUnsupportedTypes() {
        let payload: [String: Any] = ["hr": 72, "samples": [1, WorkoutSample()]]
        let problem = #expect(throws: PayloadError.self) { try Payload.monkeyC(payload) }
        #expect(problem?.wcError.code == .payloadUnsupportedTypes)
        #expect(problem?.description.contains("payload[\"samples\"][1]") == true, "\(problem.map(String.init(describing:)) ?? "")")
    }

    @Test func propertyListValuesComeBackAsTheAppsTypes() throws {
        let sent: [String: Any] = ["flag": true, "count": 3, "big": Int64(1) << 40, "ratio": 0.5, "name": "run",
                                   "bytes": Data([1, 2]), "list": ["a", 2], "nested": ["zone": 3]]
        let json = try Payload.traceValue(sent)
        let (back, problems) = Payload.dictionary(json)
        #expect(problems.isEmpty)
        #expect(back["flag"] as? Bool == true)
        #expect(back["count"] as? Int == 3)
        #expect(back["big"] as? Int == 1 << 40)
        #expect(back["ratio"] as? Double == 0.5)
        #expect(back["name"] as? String == "run")
        #expect(back["bytes"] as? Data == Data([1, 2]))
        #expect((back["list"] as? [Any])?.first as? String == "a")
        #expect((back["nested"] as? [String: Any])?["zone"] as? Int == 3)
    }

    @Test func aBoolIsNotSentAsANumber() throws {
        #expect(try Payload.traceValue(["on": true]) == .object(["on": .bool(true)]))
    }

    @Test func anNSNumberIsSentAsWhatItStores() throws {
        let json = try Payload.traceValue(["one": NSNumber(value: 1), "yes": NSNumber(value: true), "half": NSNumber(value: 0.5)])
        #expect(json == .object(["one": .int(1), "yes": .bool(true), "half": .double(0.5)]))
    }

    @Test func wcErrorBridgesToNSErrorWithItsDomainAndNumber() {
        let error: any Error = WCError(.notReachable)
        let bridged = error as NSError
        #expect(bridged.domain == "WCErrorDomain")
        #expect(bridged.code == 7007)
        #expect(WCError.errorDomain == "WCErrorDomain")
    }

    @Test func wcErrorCodesMatchInCatchClauses() {
        func fail() throws { throw WCError(.messageReplyTimedOut, detail: "no reply in 10 s") }
        var matched = false
        do {
            try fail()
        } catch WCError.messageReplyTimedOut {
            matched = true
        } catch {
            Issue.record("not matched: \(error)")
        }
        #expect(matched)
        #expect(WCError(.notReachable) == WCError(.notReachable, detail: "other words"))
    }

    @Test func aDetachedSessionFailsSendsWithSessionNotSupportedAtOnce() {
        let session = WCSession(host: nil)
        var errors: [any Error] = []
        session.sendMessage(["hr": 72], replyHandler: nil, errorHandler: { errors.append($0) })
        #expect((errors.first as? WCError)?.code == .sessionNotSupported)
        #expect(throws: WCError(.sessionNotSupported)) { try session.updateApplicationContext(["a": 1]) }
        #expect(!session.transferUserInfo(["a": 1]).isTransferring)
    }
}
