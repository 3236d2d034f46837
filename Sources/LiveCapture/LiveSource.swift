import CaptureKit

/// One frame as a live source hands it over: bytes borrowed from the source's buffer, valid only
/// during the callback that receives it (libpcap reuses its ring slot as soon as we return).
public struct LiveFrameView {
    /// Capture time, nanoseconds since the Unix epoch.
    public var timestampNs: Int64
    /// Length on the wire; `data.count` is the captured length.
    public var originalLength: Int
    /// The frame's bytes under the source's ``LiveSource/interface`` link type.
    public var data: UnsafeRawBufferPointer

    /// Wraps borrowed bytes; see the properties.
    public init(timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer) {
        self.timestampNs = timestampNs
        self.originalLength = originalLength
        self.data = data
    }
}

/// What a source's read loop says each time it calls back.
public enum LiveSourceEvent {
    /// A frame arrived.
    case frame(LiveFrameView)
    /// Nothing arrived for a short while (at most ``LiveSource/idleInterval``); a chance to flush.
    case idle
}

/// A live capture source (libpcap, the BlueZ monitor channel): an opened, activated handle that a
/// thread reads with ``run(_:)`` until another thread calls ``stop()``.
///
/// Lifecycle: open (the initializer) → `run` on one thread → `stop` from any thread → `run`
/// returns → ``statistics()`` → ``close()``.
public protocol LiveSource: AnyObject, Sendable {
    /// The interface block this source's frames belong under (link type, name, snap length,
    /// timestamp resolution).
    var interface: CaptureInterface { get }
    /// Longest time the read loop blocks without calling back; a recorder relies on it to flush.
    var idleInterval: Duration { get }
    /// Things the user should know that did not stop the capture (for example a refused
    /// nanosecond timestamp precision).
    var notices: [String] { get }
    /// Reads frames until ``stop()`` is called, calling `handler` for each frame and at least every
    /// ``idleInterval`` when idle. An error thrown by `handler` ends the loop and is rethrown.
    func run(_ handler: (LiveSourceEvent) throws -> Void) throws
    /// Asks a running ``run(_:)`` to return soon. Safe from any thread, also before `run`.
    func stop()
    /// Received and dropped counts so far (libpcap's `pcap_stats`); `nil` where the source has none.
    func statistics() -> InterfaceStatistics?
    /// Releases the handle. Call after ``run(_:)`` returned; later calls do nothing.
    func close()
}
