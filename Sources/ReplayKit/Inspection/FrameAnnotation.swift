import CaptureKit
import CaptureSet
import Dissectors

/// What a core's protocol carries in one dissected frame, named by that core's integration: a
/// Connect IQ link packet inside an ATT write, for instance. `tether inspect` and the timeline
/// report show it beside the generic dissection.
public struct FrameAnnotation: Sendable, Hashable {
    /// One line, appended to the frame's summary after ` · `.
    public var summary: String
    /// The annotation for scripts: one JSON object, as `tether inspect --json --frames` writes it.
    public var json: String

    /// An annotation.
    public init(summary: String, json: String) {
        self.summary = summary
        self.json = json
    }
}

/// Follows one core's protocol through a capture's dissected frames, in capture order (it may
/// keep state across frames: a transfer's packets, a key seen earlier). Made by
/// ``CoreIntegration/makeFrameAnnotator()``.
public protocol FrameAnnotator: Sendable {
    /// The member `tether inspect --json --frames` lists the frame's first annotation under
    /// (`connect_iq`); all of them go under the same name with `_all` appended.
    var jsonKey: String { get }
    /// The annotations of `frame`, in the order its records carry them; empty for a frame that
    /// carries none of this protocol.
    mutating func annotate(_ frame: DissectedFrame) -> [FrameAnnotation]
}

/// One annotator's annotations of a frame.
public struct FrameAnnotations: Sendable, Hashable {
    /// The annotator's ``FrameAnnotator/jsonKey``.
    public var jsonKey: String
    /// Its annotations, never empty.
    public var annotations: [FrameAnnotation]
}

/// One dissector per capture, fed every frame in order (it carries ACL, IP and GATT state across
/// frames), with every registered core's annotator on top: what `tether inspect --frames`, `trace
/// export`'s frame track and the timeline report show for a frame.
public struct AnnotatingFrameDissector {
    private var dissector: FrameDissector
    private var annotators: [any FrameAnnotator]
    /// The annotations of the frame last dissected, by annotator in registry order.
    public private(set) var lastAnnotations: [FrameAnnotations] = []

    /// A dissector that also names the handles a manifest lists (`gattHandles`), reads TCP
    /// connections to `mqttPorts` as MQTT, and asks each of `registry`'s cores to annotate.
    public init(registry: IntegrationRegistry, gattHandles: [ManifestGATTHandle] = [], mqttPorts: Set<UInt16> = [1883]) {
        dissector = FrameDissector(namedHandles: GATTHandleName.table(gattHandles.map(\.nameTexts)))
        dissector.mqttPorts = mqttPorts
        annotators = registry.integrations.compactMap { $0.makeFrameAnnotator() }
    }

    /// The dissector a set's own frames are read with: its manifest's named handles, and MQTT on
    /// 1883 and every broker port its interfaces name.
    public init(registry: IntegrationRegistry, set: LoadedCaptureSet) {
        self.init(registry: registry, gattHandles: set.manifest.gattHandles,
                  mqttPorts: Set([1883] + set.manifest.interfaces.compactMap(\.brokerPort)))
    }

    /// `frame` dissected, its summary followed by every annotation's.
    public mutating func dissect(_ frame: CaptureFrame, interface: CaptureInterface) -> DissectedFrame {
        var dissected = dissector.dissect(frame, linkType: interface.linkType)
        lastAnnotations.removeAll(keepingCapacity: true)
        for index in annotators.indices {
            let annotations = annotators[index].annotate(dissected)
            guard !annotations.isEmpty else { continue }
            lastAnnotations.append(FrameAnnotations(jsonKey: annotators[index].jsonKey, annotations: annotations))
            dissected.summary += " · " + annotations.map(\.summary).joined(separator: " · ")
        }
        return dissected
    }

    /// The direction to show for a frame: the HCI direction when the dissector found one,
    /// otherwise the pcapng `epb_flags` inbound/outbound bits.
    public static func direction(of frame: CaptureFrame, _ dissected: DissectedFrame) -> String? {
        if let direction = dissected.direction {
            return direction == .unknown ? nil : direction.rawValue
        }
        switch (frame.flags ?? 0) & 0x3 {
        case 1: return "received"
        case 2: return "sent"
        default: return nil
        }
    }
}
