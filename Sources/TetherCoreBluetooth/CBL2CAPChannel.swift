/// A Protocol/Service Multiplexer value, the number that names an L2CAP channel (`CBL2CAPPSM`).
public typealias CBL2CAPPSM = UInt16

/// An L2CAP channel to a peer (`CBL2CAPChannel`).
///
/// L2CAP channels are not modelled: Tether never opens one and never makes this class, so
/// `peripheral(_:didOpen:error:)` only ever receives `nil` and an error. The class and its
/// properties exist so an app's delegate, which names them, compiles unchanged.
open class CBL2CAPChannel: NSObject {
    /// Not made outside Tether, as the SDK's channels are made only by CoreBluetooth.
    init(peer: CBPeer?, psm: CBL2CAPPSM) {
        self.peer = peer
        self.psm = psm
        super.init()
    }

    /// The peer the channel connects to.
    public let peer: CBPeer!

    /// The stream the peer's data arrives on. Always nil: channels are not modelled.
    open var inputStream: InputStream! { nil }

    /// The stream that carries data to the peer. Always nil: channels are not modelled.
    open var outputStream: OutputStream! { nil }

    /// The channel's PSM.
    public let psm: CBL2CAPPSM
}
