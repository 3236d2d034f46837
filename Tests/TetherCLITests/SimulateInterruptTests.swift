import IngestLive
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveHosts
import IngestIntegration
import Testing
import TetherTestSupport

@testable import TetherCLI

/// `tether simulate plugin` stopped by a signal: it says what it sent and exits 128 + the signal.
@Suite struct SimulateInterruptTests {
    /// The numbers in `Sent N datagrams (B bytes) …; interrupted by SIG…: U of S scheduled …`.
    struct Summary: Equatable {
        var sent: Int
        var bytes: Int
        var unsent: Int
        var scheduled: Int
    }

    static func parse(_ line: Substring) -> Summary? {
        let words = line.split(separator: " ")
        guard words.count > 12, words[0] == "Sent", let sent = Int(words[1]),
              let bytes = Int(words[3].dropFirst()),
              let at = words.firstIndex(where: { $0 == "scheduled" }), at >= 3,
              let unsent = Int(words[at - 3]), let scheduled = Int(words[at - 1])
        else { return nil }
        return Summary(sent: sent, bytes: bytes, unsent: unsent, scheduled: scheduled)
    }

    @Test(arguments: [(SIGINT, "SIGINT", Int32(130)), (SIGTERM, "SIGTERM", Int32(143)), (SIGHUP, "SIGHUP", Int32(129))])
    func aSignalPrintsWhatWasSentAndExitsWithItsConventionalStatus(_ signal: Int32, _ name: String, _ status: Int32) throws {
        let folder = try TemporaryFolder("cli-tests")
        let receiver = try LoopbackUDPSocket()
        let simulate = try BackgroundProcess(
            try Tools.tetherBinary(),
            ["simulate", "plugin", "--to", "127.0.0.1:\(receiver.port)", "--rate", "50", "--duration", "60", "--seed", "2"],
            in: folder, name: "simulate")
        // The handlers are in before the first line; a few datagrams show sending is under way.
        var received = (datagrams: 0, bytes: 0)
        _ = try simulate.waitFor("the first datagrams") { () -> Bool? in
            let more = receiver.drain()
            received.datagrams += more.datagrams
            received.bytes += more.bytes
            return simulate.stdout.hasPrefix("Sending ") && received.datagrams >= 3 ? true : nil
        }
        kill(simulate.process.processIdentifier, signal)
        simulate.process.waitUntilExit()
        let more = receiver.drain()
        received.datagrams += more.datagrams
        received.bytes += more.bytes

        #expect(simulate.process.terminationReason == .exit, "killed by the signal instead of handling it")
        #expect(simulate.process.terminationStatus == status, "\(simulate.stderr)")
        let line = try #require(simulate.stdoutLines.first { $0.hasPrefix("Sent ") }, "no summary in \(simulate.stdout)")
        #expect(line.contains("; interrupted by \(name): "), "\(line)")
        let summary = try #require(Self.parse(line), "unreadable summary: \(line)")
        // What it says it sent is what arrived, datagram for datagram and byte for byte.
        #expect(summary.sent == received.datagrams)
        #expect(summary.bytes == received.bytes)
        #expect(summary.sent + summary.unsent == summary.scheduled)
        #expect(simulate.stdout.hasPrefix("Sending \(summary.scheduled) datagrams"))
        #expect(summary.unsent > 0)
        #expect(simulate.stderr.contains("interrupted by \(name); the plugin stopped without its end message"), "\(simulate.stderr)")
    }

    @Test func aRunThatEndsNormallyPrintsTheSameSummaryWithoutTheInterruption() throws {
        let receiver = try LoopbackUDPSocket()
        let result = try Tools.tether(["simulate", "plugin", "--to", "127.0.0.1:\(receiver.port)", "--rate", "20", "--duration", "0.2", "--seed", "2"])
        let received = receiver.drain()
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("Sent ") })
        #expect(!line.contains("interrupted"))
        #expect(line.hasPrefix("Sent \(received.datagrams) datagrams (\(received.bytes) bytes) in "), "\(line)")
    }

    @Test func theSummaryNamesTheSignalAndWhatWasLeftUnsent() {
        let report = PluginSendReport(sent: 3, failed: 0, firstFailure: nil, maxLateness: .microseconds(250),
                                      bytesSent: 1500, elapsed: .milliseconds(1250), unsent: 7)
        #expect(SimulatePluginCommand.summary(report, scheduled: 10, interruptedBy: SIGTERM)
                == "Sent 3 datagrams (1500 bytes) in 1.250 s; interrupted by SIGTERM: 7 of 10 scheduled datagrams not sent; latest send 250.0 µs behind schedule")
        #expect(SimulatePluginCommand.summary(report, scheduled: 10, interruptedBy: nil)
                == "Sent 3 datagrams (1500 bytes) in 1.250 s; latest send 250.0 µs behind schedule")
    }
}
