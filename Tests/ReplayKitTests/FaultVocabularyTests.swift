import BehaviourTrace
import CaptureKit
import Dissectors
import Testing
@testable import ReplayKit

/// The fault vocabulary: what `--fault` and a scenario's `faults:` accept, and what they refuse.
struct FaultVocabularyTests {
    @Test func theIssuesExamplesReadAsTheirFaults() throws {
        #expect(try Fault(parsing: "drop:frame=412") == .drop(FrameSelector(frames: 412...412)))
        #expect(try Fault(parsing: "delay:frame=412:by=6s") == .delay(FrameSelector(frames: 412...412), by: .seconds(6)))
        #expect(try Fault(parsing: "duplicate:frame=412") == .duplicate(FrameSelector(frames: 412...412)))
        #expect(try Fault(parsing: "disconnect:at=1.5s") == .disconnect(at: .milliseconds(1500), reconnectAfter: nil))
        #expect(try Fault(parsing: "drop:p=0.05:seed=7") == .randomDrop(.all, probability: 0.05, seed: 7))
        #expect(try Fault(parsing: "reorder:window=3:seed=7") == .reorder(.all, window: 3, hold: .milliseconds(100), seed: 7))
        #expect(try Fault(parsing: "jitter:max=40ms:seed=7") == .jitter(.all, max: .milliseconds(40), seed: 7))
    }

    @Test func aFaultsDurationTakesEveryUnitOfTheOneGrammarHoursIncluded() throws {
        #expect(try Fault(parsing: "delay:frame=3:by=2h") == .delay(FrameSelector(frames: 3...3), by: .seconds(7200)))
        #expect(try Fault(parsing: "jitter:max=250us:seed=1") == .jitter(.all, max: .microseconds(250), seed: 1))
        #expect(throws: FaultSpecError.self) { try Fault(parsing: "delay:frame=3:by=25h") }
        // A bare number is a frame number in this language, never a duration.
        #expect(throws: FaultSpecError.self) { try Fault(parsing: "delay:frame=3:by=6") }
    }

    @Test func aSweepsSettleIsZeroBareOrADurationWithItsUnit() {
        #expect(FaultSweep.settleDuration("0") == .zero)
        #expect(FaultSweep.settleDuration("0s") == .zero)
        #expect(FaultSweep.settleDuration("2500ms") == .milliseconds(2500))
        #expect(FaultSweep.settleDuration("1h") == .seconds(3600))
        #expect(FaultSweep.settleDuration("0abc") == nil)
        #expect(FaultSweep.settleDuration("10") == nil)
        #expect(FaultSweep.settleDuration("25h") == nil)
    }

    @Test func selectorsCombineFramesTimeAndKind() throws {
        let fault = try Fault(parsing: "drop:frames=10-20:from=1s:to=2s:kind=notification")
        guard case .drop(let selector) = fault else { Issue.record("not a drop: \(fault)"); return }
        #expect(selector.matches(number: 15, at: .milliseconds(1500), kind: .notification))
        #expect(!selector.matches(number: 15, at: .milliseconds(2500), kind: .notification))
        #expect(!selector.matches(number: 21, at: .milliseconds(1500), kind: .notification))
        #expect(!selector.matches(number: 15, at: .milliseconds(1500), kind: .writeResponse))
    }

    @Test func aFaultsTextReadsBackAsTheSameFault() throws {
        for text in ["drop:frame=412", "delay:frame=412:by=6s", "disconnect:at=1500ms:reconnect=2s", "drop:p=0.05:seed=7",
                     "reorder:window=3:hold=100ms:seed=7", "jitter:max=40ms:seed=7", "truncate:kind=datagram:bytes=20",
                     "att-error:frame=88:code=0x0E", "drop:kind=puback", "mtu:size=23", "delay:frame=105:kind=disconnection:by=10s"] {
            let fault = try Fault(parsing: text)
            #expect(try Fault(parsing: fault.description) == fault, "\(text) → \(fault.description)")
        }
    }

    @Test(arguments: [
        ("explode:frame=1", "is not a fault kind"),
        ("drop:frame=zero", "is not a frame number"),
        ("drop", "needs a selector"),
        ("delay:frame=4", "needs by=DURATION"),
        ("delay:frame=4:by=6", "is not a duration"),
        ("drop:p=1.5:seed=1", "is not a probability"),
        ("drop:p=0.1", "needs seed=N"),
        ("drop:frame=4:by=1s", "does not go with this fault"),
        ("drop:kind=packet", "is not a peer frame kind"),
        ("drop:frames=9-3", "is not a range"),
        ("reorder:window=1:seed=2", "is not a whole number from 2"),
        ("mtu:size=22", "is not a whole number from 23"),
        ("mtu:kind=mtu", "needs size="),
    ])
    func aBadFaultIsRefusedSayingWhatToWrite(text: String, problem: String) {
        #expect(throws: FaultSpecError.self) { try Fault(parsing: text) }
        do {
            _ = try Fault(parsing: text)
        } catch {
            #expect(error.description.contains(problem), "\(error.description)")
            #expect(error.description.contains("docs/faults.md"))
        }
    }

    @Test func theEndOfALinkIsSelectedOnlyByASelectorThatNamesItsKind() {
        #expect(FrameSelector(frames: 105...105, kind: .disconnection).matches(number: 105, at: .zero, kind: .disconnection))
        #expect(!FrameSelector(frames: 100...110).matches(number: 105, at: .zero, kind: .disconnection))
        #expect(!FrameSelector(kind: .ble).matches(number: 105, at: .zero, kind: .disconnection))
        #expect(!FrameSelector.all.matches(number: 105, at: .zero, kind: .disconnection))
    }

    @Test func aRandomFaultDecidesEachFrameAloneAndTheSameOnEveryRun() {
        let faults = PeerFrameFaults([.randomDrop(.all, probability: 0.3, seed: 7)])
        let once = (1...2000).map { faults.deliveries(ofFrame: $0, kind: .datagram, capturedAt: .zero).isEmpty }
        let again = (1...2000).map { faults.deliveries(ofFrame: $0, kind: .datagram, capturedAt: .zero).isEmpty }
        #expect(once == again)
        let lost = once.filter { $0 }.count
        // 600 expected; a seeded draw far from it would mean the decision is not uniform.
        #expect((500...700).contains(lost), "\(lost) of 2000 lost at p = 0.3")
        let otherSeed = PeerFrameFaults([.randomDrop(.all, probability: 0.3, seed: 8)])
        #expect((1...2000).map { otherSeed.deliveries(ofFrame: $0, kind: .datagram, capturedAt: .zero).isEmpty } != once)
    }

    @Test func delaysAddUpAndADuplicateRepeatsEveryDelivery() {
        let faults = PeerFrameFaults([.delay(FrameSelector(frames: 5...5), by: .seconds(6)), .duplicate(FrameSelector(frames: 5...5))])
        #expect(faults.deliveries(ofFrame: 5, kind: .notification, capturedAt: .zero) == [.seconds(6), .seconds(6)])
        #expect(faults.deliveries(ofFrame: 6, kind: .notification, capturedAt: .zero) == [.zero])
        #expect(PeerFrameFaults([.drop(FrameSelector(frames: 5...5))]).deliveries(ofFrame: 5, kind: .notification, capturedAt: .zero).isEmpty)
    }

    @Test func aTruncatedUDPDatagramKeepsItsHeadersConsistent() throws {
        // Ethernet + IPv4 + UDP carrying 10 bytes.
        var frame: [UInt8] = Array(repeating: 0, count: 12) + [0x08, 0x00]
        frame += [0x45, 0, 0, 38, 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]
        frame += [0xC3, 0x50, 0x30, 0x39, 0, 18, 0, 0] + Array("0123456789".utf8)
        let cut = try #require(LinkFaultFrames.truncatedUDP(frame, keep: 4, linkType: .ethernet))
        #expect(cut.count == 14 + 20 + 8 + 4)
        #expect(cut[16] == 0 && cut[17] == 32)            // IPv4 total length
        #expect(cut[38] == 0 && cut[39] == 12)            // UDP length
        #expect(LinkFaultFrames.internetChecksum(cut[14..<34]) == 0) // the IPv4 header checksum verifies
        #expect(Array(cut.suffix(4)) == Array("0123".utf8))
    }

    @Test func anInjectedDisconnectionIsTheEventTheDissectorKnows() throws {
        let frame = try #require(LinkFaultFrames.disconnectionComplete(handle: 0x0041, linkType: .bluetoothHCIH4WithPHDR))
        var dissector = FrameDissector(namedHandles: [:])
        let dissected = frame.bytes.withUnsafeBytes { dissector.dissect(bytes: $0, flags: frame.flags, linkType: .bluetoothHCIH4WithPHDR) }
        #expect(dissected.linkChange == .disconnected(connectionHandle: 0x0041, reason: 0x08))
    }
}
