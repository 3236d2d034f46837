import Foundation
import Testing

/// `tether replay --sweep` runs its variants in worker processes, so a core that traps costs the
/// variant it trapped in (reported as the broken promise "no trap"), not the sweep
/// (docs/faults.md, "Sweeps"). Tested with `tether-trap-fixture`, a `tether` whose ingest core
/// traps when frame 101 never reaches it (Tests/Fixtures/TetherTrapFixture).
struct SweepTrapTests {
    static func fixture() throws -> URL {
        let binary = try Tools.tetherBinary().deletingLastPathComponent().appendingPathComponent("tether-trap-fixture")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw MissingTool(tool: "tether-trap-fixture (next to \(binary.deletingLastPathComponent().path))", install: "swift build --build-tests")
        }
        return binary
    }

    @Test func aVariantWhoseCoreTrapsBreaksNoTrapAndTheSweepGoesOn() throws {
        let junit = FileManager.default.temporaryDirectory.appendingPathComponent("sweep-trap-\(UUID().uuidString).xml")
        defer { try? FileManager.default.removeItem(at: junit) }
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/plugin-clean").path
        let result = try Tools.run(try Self.fixture(), ["replay", set, "--sweep", "drop", "--sweep-frames", "99-103", "--junit", junit.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stdout.contains("variants 5 (one per peer frame), passed 4, failed 1"), "\(result.stdout)")
        #expect(result.stdout.contains("first failing variant: frame 101, --fault drop:frame=101"))
        #expect(result.stdout.contains("ingest: no trap — the process replaying this variant ended on SIGILL (a Swift trap)"))
        // The trap's own message reaches the report.
        #expect(result.stdout.contains("traps when frame 101 never reached it"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == 5)
        #expect(xml.components(separatedBy: "<failure ").count - 1 == 1)
    }

    @Test func aPairSearchFindsTheTrapNoSingleLostFrameSetsOffAndShrinksItToItsTwoFaults() throws {
        let junit = FileManager.default.temporaryDirectory.appendingPathComponent("search-trap-\(UUID().uuidString).xml")
        defer { try? FileManager.default.removeItem(at: junit) }
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/plugin-clean").path
        let fixture = try Self.fixture()
        // Single lost frames: none of 198–206 traps.
        let single = try Tools.run(fixture, ["replay", set, "--sweep", "drop", "--sweep-frames", "198-206"])
        #expect(single.status == 0, "\(single.stdout)")
        let result = try Tools.run(fixture, ["replay", set, "--sweep", "drop", "--sweep-frames", "198-206", "--search", "pairs:window=4", "--junit", junit.path])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("== search pairs:window=4 of drop over plugin-clean: FAIL"), "\(result.stdout)")
        #expect(result.stdout.contains("FAIL --fault drop:frame=201 --fault drop:frame=204 (2 faults together: none of them alone breaks it)"))
        #expect(result.stdout.contains("ingest: no trap — the process replaying this variant ended on SIGILL (a Swift trap)"))
        #expect(result.stdout.contains("neither frame 201 nor frame 204 reached it"))
        #expect(result.stdout.contains("rerun it: ") && result.stdout.contains("--fault drop:frame=201 --fault drop:frame=204"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        #expect(xml.contains("<testcase name=\"drop:frame=201 drop:frame=204\""), "\(xml)")
        #expect(xml.components(separatedBy: "<failure ").count - 1 == 1)
    }

    @Test func aSweepEndedAsRecordedReportsTheLossesTheProtocolHadNoTimeToRepair() throws {
        // With --sweep-settle 0s the links end as recorded, 1.5 s after the last exchange: a lost
        // WELCOME (65), the watch's context (83) and the user info's ACK (102) are judged before
        // the 3 s HELLO and 2 s retransmission timers could repair them. The same three the
        // in-process sweep finds (FaultReplayTests).
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/session-clean").path
        let result = try Tools.tether(["replay", set, "--sweep", "drop", "--sweep-settle", "0s"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("variants 8 (one per peer frame), passed 5, failed 3"), "\(result.stdout)")
        #expect(result.stdout.contains("first failing variant: frame 65, --fault drop:frame=65"))
        #expect(result.stdout.contains("FAIL frame 83:") && result.stdout.contains("FAIL frame 102:"))
        // Held back (the default), every variant passes.
        let held = try Tools.tether(["replay", set, "--sweep", "drop"])
        #expect(held.status == 0)
        #expect(held.stdout.contains("the recorded end held back in every run: --fault delay:frame=105:kind=disconnection:by=10s"))
    }
}
