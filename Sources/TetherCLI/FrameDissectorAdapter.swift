import CaptureKit
import Dissectors

/// One dissector per capture, fed every frame in order (it carries ACL, IP and GATT state across
/// frames), behind the CLI's `dissect(frame, interface:)` call.
struct FrameDissectorAdapter {
    private var dissector = FrameDissector()

    mutating func dissect(_ frame: CaptureFrame, interface: CaptureInterface) -> DissectedFrame {
        dissector.dissect(frame, linkType: interface.linkType)
    }
}
