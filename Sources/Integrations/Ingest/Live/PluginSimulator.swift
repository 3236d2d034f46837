import IngestIntegration
import LiveHosts
/// A simulated Motion plugin: a ``PluginTrafficGenerator`` schedule sent by a ``PluginSender``.
/// What `tether simulate plugin` runs.
public struct PluginSimulator: Sendable {
    /// The traffic.
    public var configuration: PluginTrafficConfiguration
    /// Where it goes (`localhost`, `127.0.0.1`, `::1`).
    public var host: String
    /// The ingest port (12345 for Motion).
    public var port: UInt16

    /// A simulator sending `configuration`'s traffic to `host`:`port`.
    public init(configuration: PluginTrafficConfiguration, host: String = "127.0.0.1", port: UInt16 = 12345) {
        self.configuration = configuration
        self.host = host
        self.port = port
    }

    /// The datagrams it will send, in order, with their offsets.
    public var schedule: [ScheduledDatagram] { PluginTrafficGenerator(configuration: configuration).schedule() }

    /// Sends the whole schedule, paced on `clock` (a `ContinuousClock` in live use). Cancelling the
    /// task stops sending; the report then counts what was sent and what was not
    /// (``PluginSendReport/unsent``).
    /// - Throws: ``LiveHostError`` when the host does not resolve or no socket can be made.
    public func run<C: Clock>(clock: C) async throws -> PluginSendReport where C.Duration == Duration {
        let sender = try PluginSender(host: host, port: port)
        return try await sender.send(schedule, clock: clock)
    }
}
