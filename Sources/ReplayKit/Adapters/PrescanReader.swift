import CaptureKit
import CaptureSet
import Dissectors

/// Reads a capture once before replay, frame by frame, as replay will see it: each frame at its
/// virtual time, with its interface as the manifest describes it, dissected on request by one
/// stateful dissector per interface (the one replay uses, ``ReplayEngine/replayDissector(namedHandles:)``).
///
/// What a responder or a key script learns ahead of replay (every captured answer, every key
/// packet) comes from this walk, so its frame numbers, times and ATT records are the ones the
/// adapter will be handed.
///
/// ```swift
/// var walk = try PrescanReader(capturePath: path, interfaces: manifest.interfaces)
/// while let frame = try walk.next() {
///     guard frame.isBLE() else { continue }
///     for record in walk.dissect(frame).att { … }
/// }
/// ```
public struct PrescanReader {
    /// One frame of the walk.
    public struct Frame {
        /// The frame as the file holds it.
        public let capture: CaptureFrame
        /// Virtual nanoseconds since the capture's first frame (as replay counts them, never below zero).
        public let timeNs: Int64
        /// The link type of its interface in the file.
        public let linkType: LinkType
        /// Its interface as the manifest describes it; `nil` when the manifest does not.
        public let described: ManifestInterface?

        /// 1-based frame number, as Wireshark numbers it.
        public var number: Int { capture.number }

        /// Whether replay hands this frame's HCI to a phone-side BLE core: its interface is
        /// described as `ble-hci` or `ble-monitor` (for `core`, when given and the interface names
        /// one), or is described without a role, or not at all, and has a BLE link type.
        public func isBLE(forCore core: String? = nil) -> Bool {
            Self.isBLE(linkType: linkType, described: described, forCore: core)
        }

        /// ``isBLE(forCore:)`` for a frame of an interface of `linkType` that the manifest
        /// describes as `described` (for a walk without dissection).
        public static func isBLE(linkType: LinkType, described: ManifestInterface?, forCore core: String? = nil) -> Bool {
            if let described, let role = described.role {
                guard role == .bleHCI || role == .bleMonitor else { return false }
                guard let core else { return true }
                return (described.core ?? core) == core
            }
            return linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothHCIH4 || linkType == .bluetoothLinuxMonitor
        }
    }

    private let reader: any CaptureReader
    private let described: [Int: ManifestInterface]
    private let namedHandles: [UInt16: GATTHandleName]
    private var dissectors: [Int: FrameDissector] = [:]
    private var firstNs: Int64?

    /// Opens the capture at `capturePath`; `gattHandles` name the handles of a capture that
    /// missed its GATT discovery (the manifest's `gatt_handles`).
    public init(capturePath: String, interfaces: [ManifestInterface], gattHandles: [ManifestGATTHandle] = []) throws(CaptureError) {
        reader = try CaptureFile.open(path: capturePath)
        described = Dictionary(interfaces.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        namedHandles = GATTHandleName.table(gattHandles.map(\.nameTexts))
    }

    /// The next frame on an interface the file describes; `nil` at the end. A frame naming an
    /// interface the file never described still sets virtual time zero, as in replay, and is
    /// passed over (replay reports it).
    public mutating func next() throws(CaptureError) -> Frame? {
        while let frame = try reader.next() {
            let start = firstNs ?? frame.timestampNs
            firstNs = start
            guard frame.interfaceIndex < reader.interfaces.count else { continue }
            return Frame(capture: frame, timeNs: max(0, frame.timestampNs &- start),
                         linkType: reader.interfaces[frame.interfaceIndex].linkType, described: described[frame.interfaceIndex])
        }
        return nil
    }

    /// What replay's dissector for the frame's interface makes of it. `configure` adjusts that
    /// dissector when the interface's first frame makes it (an MQTT broker's port, say).
    public mutating func dissect(_ frame: Frame, configure: (inout FrameDissector) -> Void = { _ in }) -> DissectedFrame {
        let index = frame.capture.interfaceIndex
        if dissectors[index] == nil {
            var dissector = ReplayEngine.replayDissector(namedHandles: namedHandles)
            configure(&dissector)
            dissectors[index] = dissector
        }
        // Mutated in place, not copied out of the dictionary and back (that copies its state).
        return dissectors[index]!.dissect(frame.capture, linkType: frame.linkType)
    }
}
