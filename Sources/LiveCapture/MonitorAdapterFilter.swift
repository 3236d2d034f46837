import CaptureKit

/// A BlueZ monitor-channel source narrowed to one adapter (`hci0`): frames of other adapters are
/// left out; records that belong to no adapter (index `0xFFFF`: system notes, user logging) are kept.
///
/// The monitor channel always carries every adapter (as `btmon` shows them); the adapter index is
/// the first field of each link type 254 frame, and adapter `hciN` has index N.
public final class MonitorAdapterFilter: LiveSource, Sendable {
    // Thread-safety: immutable apart from `base`, whose own guarantees apply.

    /// Index of records that belong to no adapter.
    public static let noAdapter: UInt16 = 0xFFFF

    /// The source read.
    public let base: any LiveSource
    /// The adapter kept.
    public let adapter: UInt16
    /// The base source's interface, its description naming the adapter kept.
    public let interface: CaptureInterface
    /// The base source's.
    public var idleInterval: Duration { base.idleInterval }
    /// The base source's.
    public var notices: [String] { base.notices }

    /// Keeps adapter `adapter` of `base` (a link type 254 source).
    public init(_ base: any LiveSource, adapter: UInt16) {
        self.base = base
        self.adapter = adapter
        var interface = base.interface
        interface.description = "BlueZ HCI monitor channel, adapter hci\(adapter) only"
        self.interface = interface
    }

    /// The adapter index of `hci0`, `hci12`…; `nil` for anything else.
    public static func adapterIndex(_ name: String) -> UInt16? {
        guard name.hasPrefix("hci"), name.count > 3 else { return nil }
        let digits = name.dropFirst(3)
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt16(digits)
    }

    /// Whether a link type 254 frame belongs to the adapter kept (or to none). A frame too short to
    /// hold an index is kept, so nothing malformed is hidden from the recording.
    public func keeps(_ frame: UnsafeRawBufferPointer) -> Bool {
        guard frame.count >= 2 else { return true }
        let index = UInt16(frame[0]) << 8 | UInt16(frame[1])
        return index == adapter || index == Self.noAdapter
    }

    /// Reads the base source, passing on the frames kept; a frame left out becomes an idle
    /// call-back, so the recorder still gets its chances to flush.
    public func run(_ handler: (LiveSourceEvent) throws -> Void) throws {
        try base.run { event in
            if case .frame(let frame) = event, !keeps(frame.data) {
                try handler(.idle)
                return
            }
            try handler(event)
        }
    }

    /// Stops the base source.
    public func stop() { base.stop() }
    /// The base source's counts (of every adapter: the monitor channel counts no drops anyway).
    public func statistics() -> InterfaceStatistics? { base.statistics() }
    /// Closes the base source.
    public func close() { base.close() }
}
