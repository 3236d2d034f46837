import Dissectors

/// What a run's faults do to the recorded peripheral's frames on a virtual link: implemented over
/// `tether replay --fault` (ReplayKit's `PeerFrameFaults`) by the replay integration.
public protocol VirtualLinkFaults: Sendable {
    /// The delays after its (answering) instant at which the peripheral's frame `number` arrives:
    /// `[]` lost, `[0]` untouched, `[0, 0]` twice, `[d]` late. `capturedAtNs` is its recorded instant.
    func deliveries(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> [Int64]
    /// The ATT error code the response in frame `number` is replaced with, if a fault says so.
    func attError(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> UInt8?
    /// Link losses: at each instant (since the capture's first frame) the link drops; the
    /// peripheral can be connected again after `reconnectAfterNs` (never, for `nil`).
    var linkLosses: [(atNs: Int64, reconnectAfterNs: Int64?)] { get }
}

/// No fault.
public struct NoVirtualLinkFaults: VirtualLinkFaults {
    /// No fault.
    public init() {}
    public func deliveries(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> [Int64] { [0] }
    public func attError(ofFrame number: Int, opcode: UInt8, capturedAtNs: Int64) -> UInt8? { nil }
    public var linkLosses: [(atNs: Int64, reconnectAfterNs: Int64?)] { [] }
}

/// What the virtual link tells its central, each at its instant.
public enum VirtualLinkEvent: Sendable, Hashable {
    /// An advertising report (or scan response) reached the scanning central. `synthesized`:
    /// the capture holds none of the peripheral's, and this one was made from what it knows.
    case advertisement(RecordedAdvertisement, synthesized: Bool)
    /// The connection came up (recorded connection `recorded`, its frame when known).
    case connected(recorded: Int, frame: Int?)
    /// The connection went down: the HCI reason, whether the central asked, the frame when recorded.
    case disconnected(reason: UInt8, byCentral: Bool, frame: Int?)
    /// The ATT_MTU changed after an exchange.
    case mtuChanged(Int)
    /// A request went to the peripheral: its PDU, and the recorded request it matched, or the one
    /// expected when it matched none.
    case requestSent(pdu: [UInt8], matched: RecordedRequest?, expected: RecordedRequest?)
    /// Primary service discovery ended (`error` when it failed, not when nothing was found).
    case servicesDiscovered([EmulatedDatabase.Service], error: UInt8?)
    /// Included-service discovery of the service at `service` ended.
    case includedServicesDiscovered(service: UInt16, [EmulatedDatabase.Service], error: UInt8?)
    /// Characteristic discovery of the service at `service` ended.
    case characteristicsDiscovered(service: UInt16, [EmulatedDatabase.Characteristic], error: UInt8?)
    /// Descriptor discovery of the characteristic whose value is at `characteristic` ended.
    case descriptorsDiscovered(characteristic: UInt16, [EmulatedDatabase.Descriptor], error: UInt8?)
    /// A read ended with a value or an ATT error; `frame` is the recorded answer's.
    case read(handle: UInt16, value: [UInt8]?, error: UInt8?, frame: Int?)
    /// A write with response ended.
    case written(handle: UInt16, error: UInt8?, frame: Int?)
    /// Notifications or indications of the value at `handle` were switched on or off.
    case notificationState(handle: UInt16, enabled: Bool, error: UInt8?)
    /// A notification or indication arrived.
    case notified(RecordedNotification)
    /// The RSSI was read (`nil`: the capture holds none).
    case rssi(Int?)
    /// The recording cannot answer this as recorded; what was done instead.
    case unanswered(String)
    /// A call that the link's state does not allow (CoreBluetooth's "API MISUSE"): ignored.
    case misuse(String)
}
