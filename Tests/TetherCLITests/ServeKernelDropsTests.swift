import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import TetherTestSupport

@testable import TetherCLI

/// `serve ingest` reports the datagrams the kernel dropped before the server read them.
@Suite struct ServeKernelDropsTests {
    /// The number after `label` in `text` (`kernel drops 1480`).
    static func number(after label: String, in text: String) -> Int? {
        guard let range = text.range(of: label) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test func datagramsFloodedWhileTheServerIsStoppedAreReportedAsKernelDrops() throws {
        let folder = try TemporaryFolder("cli-tests")
        let serve = try BackgroundProcess(
            try Tools.tetherBinary(),
            ["serve", "ingest", "--port", "0", "--ipv4-only", "--receive-buffer", "1024", "--db", folder.path("ingest.sqlite").path],
            in: folder, name: "serve")
        let port: Int = try serve.waitFor("the bound port") {
            guard let range = serve.stdout.range(of: "Serving ingest on 127.0.0.1:") else { return nil }
            return Int(serve.stdout[range.upperBound...].prefix { $0.isNumber })
        }
        // A stopped process reads nothing: its smallest receive buffer holds a few datagrams and
        // the kernel drops the rest of the flood.
        kill(serve.process.processIdentifier, SIGSTOP)
        let sender = try LoopbackUDPSocket(listening: false)
        var sent = 0
        for _ in 0..<400 where sender.send(Array(#"{"t":"1","d":[]}"#.utf8), to: UInt16(port)) { sent += 1 }
        kill(serve.process.processIdentifier, SIGCONT)
        #expect(serve.interruptAndWait() == 0, "\(serve.stderr)")

        let stopped = try #require(serve.stdoutLines.first { $0.hasPrefix("Stopped. ") }, "\(serve.stdout)")
        let drops = try #require(Self.number(after: " · kernel drops ", in: String(stopped)), "\(stopped)")
        let datagrams = try #require(Self.number(after: "datagrams ", in: String(stopped)))
        #expect(drops > 0)
        // Every datagram was read or dropped; a few still queued when the sockets closed are neither.
        #expect(datagrams + drops <= sent)
        #expect(datagrams + drops >= sent - 16, "read \(datagrams), dropped \(drops), sent \(sent)")
        #expect(serve.stdout.contains("Kernel drops: \(drops) datagrams dropped by the kernel before the server read them"), "\(serve.stdout)")
    }

    @Test func aServerThatKeptUpReportsNoKernelDrops() throws {
        let folder = try TemporaryFolder("cli-tests")
        let serve = try ServeHardeningTests.startServe(folder, database: folder.path("ingest.sqlite").path, name: "serve")
        #expect(serve.interruptAndWait() == 0, "\(serve.stderr)")
        #expect(serve.stdout.contains(" · kernel drops 0 · "), "\(serve.stdout)")
        #expect(serve.stdout.contains("Kernel drops: 0 datagrams dropped before the server read them"), "\(serve.stdout)")
    }

    @Test func theFinalLineSaysWhatToDoAboutDropsAndWhenTheyAreNotCounted() {
        #expect(ServeIngestCommand.kernelDropsLine(12).hasSuffix("Give a larger --receive-buffer, raise net.core.rmem_max, or slow the sender."))
        #expect(ServeIngestCommand.kernelDropsLine(nil).hasPrefix("Kernel drops: not counted"))
    }

    @Test func aReceiveBufferOutsideItsRangeIsRefusedNamingTheRange() throws {
        let result = try Tools.tether(["serve", "ingest", "--receive-buffer", "12", "--db", "/tmp/never-made.sqlite"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--receive-buffer 12 is not accepted; give a whole number from 1024 to 1073741824"), "\(result.stderr)")
    }
}
