import CaptureKit

extension InterfaceRole {
    /// Link types that can carry IP, on which UDP and TCP are read (what libpcap gives on `lo`
    /// and `any`, and the raw and loopback forms other captures use).
    public static let ipLinkTypes: [LinkType] = [.ethernet, .linuxSLL, .linuxSLL2, .raw, .ipv4, .ipv6, .null, .loop]

    /// The link types an interface of this role can have, in the order a message lists them:
    /// the one place that says what each role's frames look like. `nil` when any link type will
    /// do: `context`, and roles Tether does not know.
    public var expectedLinkTypes: [LinkType]? {
        switch self {
        case .ingestUDP, .mqttTCP: Self.ipLinkTypes
        case .bleHCI: [.bluetoothHCIH4WithPHDR, .bluetoothHCIH4]
        case .bleMonitor: [.bluetoothLinuxMonitor]
        case .appGroup: [.user1]
        case .apiCalls: [.user0]
        default: nil
        }
    }

    /// Whether an interface of this role can have `linkType` (always, for a role that expects none
    /// in particular).
    public func accepts(_ linkType: LinkType) -> Bool {
        expectedLinkTypes.map { $0.contains(linkType) } ?? true
    }

    /// The role an interface of `linkType` most likely plays, for advice: `nil` when the link type
    /// alone does not say (an IP link type may carry ingest UDP or MQTT's TCP).
    public static func likelyRole(for linkType: LinkType) -> InterfaceRole? {
        switch linkType {
        case .bluetoothHCIH4WithPHDR, .bluetoothHCIH4: .bleHCI
        case .bluetoothLinuxMonitor: .bleMonitor
        case .user1: .appGroup
        case .user0: .apiCalls
        default: nil
        }
    }
}

/// An interface whose link type in the capture file contradicts what the manifest says of it:
/// the `link_type` written there, or the link types its `role` can have. Replay would then feed
/// its frames to a core that cannot read them (or skip them), so the set's results mean little.
public struct LinkTypeContradiction: Sendable, Equatable, CustomStringConvertible {
    /// The set's name.
    public var set: String
    /// The capture file's name inside the set, for the message.
    public var captureFile: String
    /// The manifest's entry for the interface.
    public var interface: ManifestInterface
    /// The manifest's position of that entry (`interfaces[i]`), for the message.
    public var entry: Int
    /// The interface's link type in the capture file.
    public var found: LinkType

    /// Whether the manifest's `link_type` differs from the capture's.
    public var contradictsLinkType: Bool { interface.linkType != found.rawValue }
    /// Whether the manifest's `role` cannot have the capture's link type.
    public var contradictsRole: Bool { interface.role.map { !$0.accepts(found) } ?? false }

    /// The warning: the set, the interface, what the manifest expects, what the capture holds,
    /// and what to do.
    public var description: String {
        let name = interface.name.map { " (\($0))" } ?? ""
        var expected: [String] = []
        if contradictsRole, let role = interface.role, let types = role.expectedLinkTypes {
            let list = types.map(\.description)
            expected.append("role \(role), which carries " + (list.count == 1 ? list[0] : "one of " + list.joined(separator: ", ")))
        }
        if contradictsLinkType {
            expected.append("link_type \(interface.linkType) (\(interface.captureLinkType.name))")
        }
        var advice = "Fix `interfaces[\(entry)]` in manifest.yaml"
        if contradictsLinkType { advice += ": set `link_type: \(found.rawValue)`" }
        if contradictsRole {
            let role = InterfaceRole.likelyRole(for: found)
            advice += contradictsLinkType ? " and" : ":"
            advice += role.map { " set `role: \($0)`" } ?? " give it the role that carries \(found.name) frames (or `context`)"
        }
        advice += "; or, if the manifest is right, restore the capture file it was written for."
        return "capture set \(set): interface #\(interface.index)\(name) is \(found) in \(captureFile), but the manifest "
            + "says \(expected.joined(separator: " and ")), so replay would misread its frames. \(advice)"
    }
}

extension CaptureSetManifest {
    /// The interfaces the manifest describes whose link type in the capture (`captureLinkTypes`,
    /// by interface index) contradicts its `link_type` or its `role`. Interfaces the capture does
    /// not describe are not judged.
    public func linkTypeContradictions(captureLinkTypes: [Int: LinkType], set: String) -> [LinkTypeContradiction] {
        interfaces.enumerated().compactMap { entry, interface in
            guard let found = captureLinkTypes[interface.index] else { return nil }
            let contradiction = LinkTypeContradiction(set: set, captureFile: captureFile, interface: interface, entry: entry, found: found)
            return contradiction.contradictsLinkType || contradiction.contradictsRole ? contradiction : nil
        }
    }
}

extension CaptureSetDirectory {
    /// The link types of the capture interfaces `indices`, read from the capture file at `path`
    /// only as far as needed: a pcapng file describes an interface before its first frame, and
    /// Tether's recorder describes them all before any frame, so this normally stops at the first
    /// frame. It reads to the end only when an interface asked for is never described. An
    /// unreadable or damaged file gives what was read before the damage (the commands that read
    /// the frames report the damage themselves).
    static func captureLinkTypes(at path: String, indices: Set<Int>) -> [Int: LinkType] {
        guard !indices.isEmpty, let reader = try? CaptureFile.open(path: path) else { return [:] }
        var types: [Int: LinkType] = [:]
        var seen = 0
        while true {
            // Interfaces are only ever added, so only the new ones need a look.
            let interfaces = reader.interfaces
            for index in seen..<interfaces.count where indices.contains(index) { types[index] = interfaces[index].linkType }
            seen = interfaces.count
            guard types.count < indices.count, (try? reader.withNextFrame({ _ in })) == true else { return types }
        }
    }

    /// ``CaptureSetManifest/linkTypeContradictions(captureLinkTypes:set:)`` for the set's own
    /// capture file.
    public func linkTypeContradictions(manifest: CaptureSetManifest, capturePath: String) -> [LinkTypeContradiction] {
        let indices = Set(manifest.interfaces.map(\.index))
        let types = Self.captureLinkTypes(at: capturePath, indices: indices)
        return manifest.linkTypeContradictions(captureLinkTypes: types, set: name)
    }
}
