import CaptureKit

/// What an ``H4Tap`` has seen since it was opened.
public struct H4TapStatistics: Sendable, Hashable {
    /// Complete packets host→controller.
    public var sentPackets = 0
    /// Complete packets controller→host.
    public var receivedPackets = 0
    /// Bytes forwarded host→controller (framed or not).
    public var sentBytes = 0
    /// Bytes forwarded controller→host (framed or not).
    public var receivedBytes = 0
    /// Streams whose framing stopped on bytes that are not H4 (at most two per host connection).
    public var framingErrors = 0
    /// Host connections served.
    public var hostConnections = 0
    /// Host connections refused: another host was connected, the tap serves exactly one host and
    /// had served it, or (on a Unix socket) the peer belonged to another user.
    public var refusedHosts = 0

    /// Zero counts.
    public init() {}

    /// Complete packets in `direction`.
    public func packets(_ direction: H4Direction) -> Int { direction == .sent ? sentPackets : receivedPackets }
    /// Bytes forwarded in `direction`.
    public func bytes(_ direction: H4Direction) -> Int { direction == .sent ? sentBytes : receivedBytes }
}
