import CaptureKit
import Foundation
import Testing

@testable import LiveCapture

/// Who may be the tap's host: a Unix socket in a private folder for the host Tether starts itself,
/// exactly one host when asked or when listening beyond loopback, and a warning for the latter.
@Suite struct H4TapHostChannelTests {
    static let resetComplete = FakeController.commandComplete(opcode: 0x0C03)

    /// A tap in front of a fake controller, recording into a fresh set; `endpoint` nil means a
    /// Unix socket in a new private folder.
    struct Rig {
        let controllerListener: TestListener
        let tap: H4Tap
        let recorder: Recorder
        let log = TapLog()
        let setPath: String
        let folder: PrivateSocketDirectory?

        init(endpoint: H4HostEndpoint? = nil, exactlyOneHost: Bool = false) throws {
            controllerListener = try TestListener()
            let folder = endpoint == nil ? try PrivateSocketDirectory() : nil
            self.folder = folder
            tap = H4Tap(
                endpoint: endpoint ?? .unixSocket(path: folder!.socketPath("hci.sock")),
                controller: .tcp(host: "127.0.0.1", port: controllerListener.port),
                options: H4Tap.Options(exactlyOneHost: exactlyOneHost))
            setPath = temporarySetPath()
            recorder = Recorder(setPath: setPath, title: "host channel test", inputs: [tap.recorderInput])
            log.attach(to: tap)
            try recorder.start()
            tap.record(into: recorder, input: 0)
        }

        /// Starts the tap and returns the fake controller behind it.
        func start() throws -> FakeController {
            try tap.start()
            return FakeController(try controllerListener.accept())
        }

        /// A new connection to the tap, as a host would make it.
        func connect() throws -> TestConnection {
            switch tap.endpoint {
            case .unixSocket(let path): return try TestConnection.connect(unixPath: path)
            case .tcp: return try TestConnection.connect(port: tap.port)
            }
        }

        /// Stops the tap, seals the set, removes the private folder; returns the recorded frames.
        func finish() throws -> [[UInt8]] {
            tap.stop()
            let summary = try recorder.finish()
            try folder?.remove()
            return try readAll(summary.capturePath).frames.map(\.data)
        }
    }

    /// An intruder's Reset: the tap may already have closed the connection, which refuses it just as well.
    func intrude(_ intruder: TestConnection) {
        do {
            try intruder.send(H4Vectors.reset)
        } catch {
            // Closed before the send: refused before it could say anything.
        }
    }

    /// The host sends a Reset and gets its Command Complete back through the tap.
    func resetRoundTrip(_ host: TestConnection) throws -> [UInt8] {
        try host.send(H4Vectors.reset)
        return host.receive(Self.resetComplete.count)
    }

    @Test func aTapOnAUnixSocketServesItsHostAndRecordsItsPackets() throws {
        let rig = try Rig()
        _ = try rig.start()
        let host = try rig.connect()
        #expect(try resetRoundTrip(host) == Self.resetComplete)
        host.close()
        #expect(try rig.finish() == [phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete)])
    }

    @Test func aTapOnAUnixSocketNamesItsHostByProcess() throws {
        let rig = try Rig()
        _ = try rig.start()
        let host = try rig.connect()
        _ = try resetRoundTrip(host)
        #expect(rig.tap.hostPeer == "process \(getpid()) (uid \(geteuid()))")
        _ = try rig.finish()
    }

    @Test func aTapOnAUnixSocketRemovesItsSocketFileWhenStopped() throws {
        let rig = try Rig()
        _ = try rig.start()
        guard case .unixSocket(let path) = rig.tap.endpoint else { Issue.record("not a Unix endpoint"); return }
        #expect(FileManager.default.fileExists(atPath: path))
        rig.tap.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        _ = try rig.finish()
    }

    @Test func aTapOnAUnixSocketOffersItToItsUserOnly() throws {
        let rig = try Rig()
        _ = try rig.start()
        guard case .unixSocket(let path) = rig.tap.endpoint else { Issue.record("not a Unix endpoint"); return }
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        _ = try rig.finish()
    }

    @Test func aPrivateSocketDirectoryCanBeEnteredByItsUserOnly() throws {
        let folder = try PrivateSocketDirectory()
        var status = stat()
        #expect(stat(folder.path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
        #expect(status.st_uid == geteuid())
        try folder.remove()
        #expect(!FileManager.default.fileExists(atPath: folder.path))
    }

    @Test func aSecondConnectionToATapServingExactlyOneHostIsRefusedAndNothingItSendsIsRecorded() throws {
        let rig = try Rig(exactlyOneHost: true)
        let controller = try rig.start()
        let host = try rig.connect()
        _ = try resetRoundTrip(host)
        let intruder = try rig.connect()
        intrude(intruder)
        #expect(intruder.peerClosed())
        // The host's next round trip comes after the tap handled (refused) the intruder.
        #expect(try resetRoundTrip(host) == Self.resetComplete)
        #expect(controller.received == H4Vectors.reset + H4Vectors.reset)
        #expect(rig.tap.statistics.refusedHosts == 1)
        #expect(rig.log.notices.contains { $0.contains("refused host") && $0.contains("exactly one host") && $0.contains("nothing it sent was forwarded or recorded") })
        host.close()
        #expect(try rig.finish() == [phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete)]
            + [phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete)])
    }

    @Test func aTapServingExactlyOneHostRefusesAHostAfterTheFirstHasGone() throws {
        let rig = try Rig(exactlyOneHost: true)
        _ = try rig.start()
        let host = try rig.connect()
        _ = try resetRoundTrip(host)
        host.close()
        let next = try rig.connect()
        intrude(next)
        #expect(next.peerClosed())
        #expect(rig.tap.statistics.hostConnections == 1)
        #expect(try rig.finish() == [phdrFrame(.sent, H4Vectors.reset), phdrFrame(.received, Self.resetComplete)])
    }

    @Test func aTapListeningBeyondLoopbackServesExactlyOneHost() throws {
        let rig = try Rig(endpoint: .tcp(H4ListenAddress(host: "0.0.0.0", port: 0)))
        _ = try rig.start()
        #expect(rig.tap.listensBeyondLoopback)
        let host = try rig.connect()
        _ = try resetRoundTrip(host)
        let intruder = try rig.connect()
        intrude(intruder)
        #expect(intruder.peerClosed())
        #expect(try resetRoundTrip(host) == Self.resetComplete)
        #expect(rig.tap.statistics.refusedHosts == 1)
        host.close()
        #expect(try rig.finish().count == 4)
    }

    @Test func aTapListeningBeyondLoopbackWarnsNamingItsAddress() throws {
        let rig = try Rig(endpoint: .tcp(H4ListenAddress(host: "0.0.0.0", port: 0)))
        let port = try rig.tap.open()
        let warning = try #require(rig.tap.exposureWarning)
        #expect(warning.contains("listens on 0.0.0.0:\(port)"))
        #expect(warning.contains("any host on the network"))
        #expect(warning.contains("exactly one host"))
        _ = try rig.finish()
    }

    @Test func aLoopbackTapGivesNoExposureWarning() throws {
        let rig = try Rig(endpoint: .tcp(H4ListenAddress(host: "127.0.0.1", port: 0)))
        _ = try rig.start()
        #expect(!rig.tap.listensBeyondLoopback)
        #expect(rig.tap.exposureWarning == nil)
        _ = try rig.finish()
    }

    @Test(arguments: [
        ([2, 0, 0, 0, 127, 0, 0, 1] as [UInt8], true), ([2, 0, 0, 0, 127, 9, 9, 9], true), ([2, 0, 0, 0, 0, 0, 0, 0], false),
        ([2, 0, 0, 0, 192, 168, 1, 2], false),
    ])
    func anIPv4AddressIsLoopbackWhenIn127Slash8(prefix: [UInt8], loopback: Bool) {
        var address = sockaddr_in()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.copyBytes(from: prefix)
            raw.storeBytes(of: sa_family_t(AF_INET), toByteOffset: 0, as: sa_family_t.self)
        }
        #expect(withUnsafeBytes(of: &address) { TapIO.isLoopback($0) } == loopback)
    }

    @Test(arguments: [("::1", true), ("::ffff:127.0.0.1", true), ("::", false), ("fe80::1", false)])
    func anIPv6AddressIsLoopbackWhenItIsOneOrMapsLoopback(text: String, loopback: Bool) {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        #expect(inet_pton(AF_INET6, text, &address.sin6_addr) == 1)
        #expect(withUnsafeBytes(of: &address) { TapIO.isLoopback($0) } == loopback)
    }
}
