import SessionCore

/// A session-link capture's frames with every compact frame (docs/session-link.md, "Compact
/// frames") completed into the full frame it stands for, for the responder.
///
/// The responder takes the recorded peer's frames apart out of their captured order (an answer
/// found by what it answers, a resend from an item's first copies) and hands them to the core at
/// other instants than the capture's, so a compact frame would meet a receiver whose context is no
/// longer the sender's. A full frame means the same on every link of page version 3 and is
/// accepted by a receiver in either context, so the responder works with full frames throughout.
///
/// Each direction keeps its own ``SessionFrameContext``, read in capture order (ATT's order, the
/// order both ends saw). Compact frames are read only while the binding negotiated them: after a
/// WELCOME that states the option in answer to a HELLO of the same nonce that stated it. The
/// contexts are not restarted at a binding: a sender restarts its own then and sends each channel's
/// first frame whole, which sets the channel's entry before any compact frame reads it, so a
/// context kept across bindings reads every frame a conforming sender sends exactly as a restarted
/// one would (and a WELCOME the phone ignores, a repeat for a lost first, restarts nothing wrongly).
struct CapturedCompactFrames: Sendable {
    /// The capture's frames, each compact one replaced by its full frame.
    private(set) var frames: [SessionCapturePrescan.LinkFrame] = []
    /// The full frame of each compact peer or own frame, by the capture frame that carried it and
    /// its captured bytes (an HCI frame rarely carries more than one ATT value).
    private var whole: [Int: [(captured: [UInt8], whole: [UInt8])]] = [:]
    /// How many compact frames were completed, and how many could not be (kept as captured: the
    /// core reports them as it would any malformed frame).
    private(set) var completed = 0
    private(set) var unreadable = 0

    init(_ captured: [SessionCapturePrescan.LinkFrame]) {
        var fromPhone = SessionFrameContext()
        var fromWatch = SessionFrameContext()
        var phoneControl = SessionResponder.ControlAssembler()
        var watchControl = SessionResponder.ControlAssembler()
        var helloStatedCompact: [UInt32: Bool] = [:]
        var negotiated = false
        frames.reserveCapacity(captured.count)
        for var linkFrame in captured {
            let bytes = linkFrame.bytes
            if negotiated, let first = bytes.first, first & SessionLink.compactMarker != 0 {
                let decoded = linkFrame.fromPhone
                    ? SessionResponder.decodeFrame(bytes, with: &fromPhone) : SessionResponder.decodeFrame(bytes, with: &fromWatch)
                if let decoded {
                    let full = decoded.encode()
                    whole[linkFrame.frame, default: []].append((bytes, full))
                    linkFrame.bytes = full
                    completed += 1
                } else {
                    unreadable += 1
                }
                frames.append(linkFrame)
                continue
            }
            frames.append(linkFrame)
            guard let frame = SessionResponder.decodeFrame(bytes) else { continue }
            if linkFrame.fromPhone { fromPhone.record(frame) } else { fromWatch.record(frame) }
            guard frame.channel == .control else { continue }
            if linkFrame.fromPhone {
                if case .hello(let hello)? = phoneControl.add(frame) { helloStatedCompact[hello.nonce] = hello.compactFrames }
            } else if case .welcome(let welcome)? = watchControl.add(frame) {
                negotiated = welcome.compactFrames && helloStatedCompact[welcome.nonce] == true
            }
        }
    }

    /// The full frame for `bytes`, a session-link value captured in frame `frame`: the completed
    /// frame when it was a compact one, else `bytes` unchanged.
    func wholeFrame(_ bytes: [UInt8], capturedIn frame: Int) -> [UInt8] {
        guard let first = bytes.first, first & SessionLink.compactMarker != 0, let candidates = whole[frame] else { return bytes }
        return candidates.first { $0.captured == bytes }?.whole ?? bytes
    }
}
