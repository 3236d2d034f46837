import CaptureKit

/// The contents of a capture set's `manifest.yaml`: what was recorded, when, by what, which
/// interface plays which role, annotations, IngestCore overrides, expectations and baselines.
///
/// Every key is snake_case in YAML; docs/capture-set.md describes each field with an example.
/// Keys Tether does not know are ignored on load, so a newer minor writer stays readable; a higher
/// ``schemaVersion`` than ``CaptureSetManifest/supportedSchemaVersion`` is refused.
public struct CaptureSetManifest: Codable, Sendable, Equatable {
    /// The manifest schema this build of Tether reads and writes.
    public static let supportedSchemaVersion = 1

    /// Manifest schema version (currently 1).
    public var schemaVersion: Int
    /// One line saying what was recorded.
    public var title: String
    /// Free text: the scenario, the conditions, anything a reader of the replay report should know.
    public var description: String?
    /// When recording started, ISO 8601 with a UTC offset (`2026-11-22T00:45:00Z`).
    public var recordedAt: String
    /// The Tether version that wrote the set (``TetherVersion/current`` at the time).
    public var tetherVersion: String
    /// Whether the recording was sealed. An interrupted live recording stays `recording`.
    public var status: CaptureSetStatus
    /// The capture file's name inside the set folder (normally `capture.pcapng`).
    public var captureFile: String
    /// Lower-case hex SHA-256 of the capture file, set when the recording is sealed. `nil` while
    /// recording: such a set loads with a warning instead of a verified digest.
    public var captureSha256: String?
    /// Lower-case hex SHA-256 of each live trace in the set's `live/` folder, by path relative to
    /// the set (`live/messaging.jsonl`), set by `seal`. `nil` in a set without live traces and in
    /// sets sealed before Tether covered them: such live traces load with a warning that they are
    /// not verified.
    public var liveTracesSha256: [String: String]?
    /// Which capture interface plays which role.
    public var interfaces: [ManifestInterface]
    /// The devices that took part.
    public var devices: [ManifestDevice]
    /// Notes attached to frames.
    public var annotations: [ManifestAnnotation]
    /// ATT handles named by hand, for captures that do not contain the GATT discovery.
    public var gattHandles: [ManifestGATTHandle]
    /// The sections that belong to cores' integrations (`ingest:`, `messaging:`, `session:`, a
    /// user's `heart_rate:`…), in the order the file has them. The integration that claims a
    /// section decodes it; replay refuses a section no registered integration claims.
    public var sections: [ManifestSection]
    /// What replay checks.
    public var expectations: [Expectation]
    /// Accepted behaviour traces: core name (`ingest`, `messaging`, `session`, `widget`) → path relative to
    /// the set folder (normally `baseline/<core>.jsonl`).
    public var baselines: [String: String]
    /// Fault scenarios replayed besides the set itself, each with its own faults, expectations and
    /// baselines (docs/faults.md).
    public var scenarios: [ManifestScenario] = []
    /// Where fields were in `manifest.yaml` (1-based lines, by dotted path such as
    /// `interfaces[2].core`), for error messages; empty for a manifest made in memory. Not
    /// written, and ignored by `==`.
    public var sourceLines: SourceLines = SourceLines()

    /// The top-level keys the capture set itself defines; every other top-level key is a
    /// ``sections`` entry.
    public static let reservedKeys: Set<String> = [
        "schema_version", "title", "description", "recorded_at", "tether_version", "status", "capture_file",
        "capture_sha256", "live_traces_sha256", "interfaces", "devices", "annotations", "gatt_handles", "expectations", "baselines",
        "scenarios",
    ]

    /// The section called `name`, if the manifest has one.
    public func section(named name: String) -> ManifestSection? {
        sections.first { $0.name == name }
    }

    /// Puts `section` in place of the section of its name, or appends it.
    public mutating func setSection(_ section: ManifestSection) {
        if let i = sections.firstIndex(where: { $0.name == section.name }) {
            sections[i] = section
        } else {
            sections.append(section)
        }
    }

    /// The section called `name` decoded as `type`; `nil` when the manifest has none.
    /// `manifestPath` goes into the error.
    /// - Throws: ``CaptureSetError/invalidManifest(path:field:problem:)`` naming the field and line.
    public func decodeSection<T: Decodable>(_ name: String, as type: T.Type, manifestPath: String = "manifest.yaml") throws(CaptureSetError) -> T? {
        guard let section = section(named: name) else { return nil }
        return try section.decode(type, manifestPath: manifestPath)
    }

    /// Removes the section called `name`.
    public mutating func removeSection(named name: String) {
        sections.removeAll { $0.name == name }
    }

    /// A manifest for a new recording: status `recording`, no digest yet, written by this Tether.
    public init(
        title: String, description: String? = nil, recordedAt: String,
        tetherVersion: String = TetherVersion.current, status: CaptureSetStatus = .recording,
        captureFile: String = CaptureSetDirectory.defaultCaptureFileName, captureSha256: String? = nil,
        interfaces: [ManifestInterface] = [], devices: [ManifestDevice] = [],
        annotations: [ManifestAnnotation] = [], gattHandles: [ManifestGATTHandle] = [],
        sections: [ManifestSection] = [], expectations: [Expectation] = [], baselines: [String: String] = [:],
        schemaVersion: Int = CaptureSetManifest.supportedSchemaVersion
    ) {
        self.sections = sections
        self.schemaVersion = schemaVersion
        self.title = title
        self.description = description
        self.recordedAt = recordedAt
        self.tetherVersion = tetherVersion
        self.status = status
        self.captureFile = captureFile
        self.captureSha256 = captureSha256
        self.interfaces = interfaces
        self.devices = devices
        self.annotations = annotations
        self.gattHandles = gattHandles
        self.expectations = expectations
        self.baselines = baselines
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case title, description
        case recordedAt = "recorded_at"
        case tetherVersion = "tether_version"
        case status
        case captureFile = "capture_file"
        case captureSha256 = "capture_sha256"
        case liveTracesSha256 = "live_traces_sha256"
        case interfaces, devices, annotations
        case gattHandles = "gatt_handles"
        case expectations, baselines, scenarios
    }

    /// Lists and maps may be left out of a hand-written manifest; they default to empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
        title = try c.decode(String.self, forKey: .title)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        recordedAt = try c.decode(String.self, forKey: .recordedAt)
        tetherVersion = try c.decode(String.self, forKey: .tetherVersion)
        status = try c.decodeIfPresent(CaptureSetStatus.self, forKey: .status) ?? .complete
        captureFile = try c.decodeIfPresent(String.self, forKey: .captureFile) ?? CaptureSetDirectory.defaultCaptureFileName
        captureSha256 = try c.decodeIfPresent(String.self, forKey: .captureSha256)
        liveTracesSha256 = try c.decodeIfPresent([String: String].self, forKey: .liveTracesSha256)
        interfaces = try c.decodeIfPresent([ManifestInterface].self, forKey: .interfaces) ?? []
        devices = try c.decodeIfPresent([ManifestDevice].self, forKey: .devices) ?? []
        annotations = try c.decodeIfPresent([ManifestAnnotation].self, forKey: .annotations) ?? []
        gattHandles = try c.decodeIfPresent([ManifestGATTHandle].self, forKey: .gattHandles) ?? []
        // Sections keep their YAML as written, with lines: `CaptureSetDirectory.decodeManifest`
        // reads them from the parsed document, which a `Decoder` does not expose.
        sections = []
        expectations = try c.decodeIfPresent([Expectation].self, forKey: .expectations) ?? []
        baselines = try c.decodeIfPresent([String: String].self, forKey: .baselines) ?? [:]
        scenarios = try c.decodeIfPresent([ManifestScenario].self, forKey: .scenarios) ?? []
    }

    /// Empty lists are written too, so a hand editor sees every section.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(title, forKey: .title)
        try c.encodeIfPresent(description, forKey: .description)
        try c.encode(recordedAt, forKey: .recordedAt)
        try c.encode(tetherVersion, forKey: .tetherVersion)
        try c.encode(status, forKey: .status)
        try c.encode(captureFile, forKey: .captureFile)
        try c.encodeIfPresent(captureSha256, forKey: .captureSha256)
        if let liveTracesSha256 {
            // Sorted by hand, as `baselines`: the same manifest must give the same text.
            var live = c.nestedContainer(keyedBy: BaselineKey.self, forKey: .liveTracesSha256)
            for file in liveTracesSha256.keys.sorted() {
                try live.encode(liveTracesSha256[file, default: ""], forKey: BaselineKey(stringValue: file))
            }
        }
        // Lists go in as finished nodes (``LinearYAMLList``): writing stays linear in their length.
        try c.encode(LinearYAMLList(interfaces), forKey: .interfaces)
        try c.encode(LinearYAMLList(devices), forKey: .devices)
        try c.encode(LinearYAMLList(annotations), forKey: .annotations)
        try c.encode(LinearYAMLList(gattHandles), forKey: .gattHandles)
        var sectionContainer = encoder.container(keyedBy: ManifestKey.self)
        for section in sections {
            try sectionContainer.encode(ManifestTreeValue(tree: section.value), forKey: ManifestKey(stringValue: section.name))
        }
        try c.encode(LinearYAMLList(expectations), forKey: .expectations)
        // Sorted by hand: a Dictionary's order differs from run to run, a manifest must not.
        var b = c.nestedContainer(keyedBy: BaselineKey.self, forKey: .baselines)
        for core in baselines.keys.sorted() {
            try b.encode(baselines[core, default: ""], forKey: BaselineKey(stringValue: core))
        }
        // Written only when there are some: a set without scenarios keeps the text it always had.
        if !scenarios.isEmpty { try c.encode(LinearYAMLList(scenarios), forKey: .scenarios) }
    }

    private struct BaselineKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The interface entry for a capture interface index, if the manifest describes it.
    public func interface(index: Int) -> ManifestInterface? {
        interfaces.first { $0.index == index }
    }
}

/// Whether a capture set's recording finished.
public enum CaptureSetStatus: String, Codable, Sendable, Hashable {
    /// The recorder wrote the manifest at start and has not sealed it (still running, or it was
    /// interrupted). The capture file may end in a cut-off block.
    case recording
    /// The recorder closed the capture file and wrote its digest.
    case complete
}

/// What a capture interface carries, as far as replay is concerned. An open set of names: the
/// constants are the ones Tether's adapters know; any other string is kept as written.
public struct InterfaceRole: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// The role's name as written in the manifest.
    public var rawValue: String
    /// A role by name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// UDP datagrams to intdash Motion's plugin port; replayed into IngestCore.
    public static let ingestUDP = InterfaceRole(rawValue: "ingest-udp")
    /// HCI packets with direction (H4 with phdr, or an H4 tap); replayed into the BLE cores.
    public static let bleHCI = InterfaceRole(rawValue: "ble-hci")
    /// BlueZ monitor-channel records; replayed into the BLE cores.
    public static let bleMonitor = InterfaceRole(rawValue: "ble-monitor")
    /// TCP to and from an MQTT broker (libpcap), read as MQTT on the manifest's `broker_port`.
    public static let mqttTCP = InterfaceRole(rawValue: "mqtt-tcp")
    /// App Group container events from inotify (LINKTYPE_USER1, 148): when each process wrote,
    /// renamed, opened and read the shared folder's files (docs/app-group-link.md).
    public static let appGroup = InterfaceRole(rawValue: "app-group")
    /// The app's API calls, one UTF-8 JSON object per frame (LINKTYPE_USER0, 147): when the app
    /// acted, for the core named in each record. docs/capture-set.md describes the records.
    public static let apiCalls = InterfaceRole(rawValue: "api-calls")
    /// Recorded for context only; no adapter consumes it.
    public static let context = InterfaceRole(rawValue: "context")

    /// Reads the plain string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }
    /// Writes the plain string.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    /// The role's name.
    public var description: String { rawValue }
}

/// One capture interface as the manifest describes it.
public struct ManifestInterface: Codable, Sendable, Equatable {
    /// The interface's index in the capture file (pcapng Interface Description Block order, from 0).
    public var index: Int
    /// The interface name it was recorded from (`lo`, `any`, `hci0`, `h4tap:9001`).
    public var name: String?
    /// The LINKTYPE_ number of its frames (1 Ethernet, 276 Linux SLL2, 201 HCI H4 with phdr…).
    public var linkType: UInt32
    /// What the interface carries for replay.
    public var role: InterfaceRole?
    /// For `ingest-udp`: the UDP port the ingest server listened on (12345 when absent).
    public var ingestPort: UInt16?
    /// For `mqtt-tcp`: the broker's TCP port, whose connections are read as MQTT (1883 when absent).
    public var brokerPort: UInt16? = nil
    /// For BLE roles: the core that replays this interface (`messaging` when absent; `session`).
    public var core: String?
    /// Frames the recorder wrote for this interface (absent for imported sets).
    public var frames: Int?
    /// Packets the live source saw (libpcap's `ps_recv`), when it counts them.
    public var received: UInt64?
    /// Packets the live source dropped (`ps_drop + ps_ifdrop`), when it counts them.
    public var dropped: UInt64?
    /// Every other scalar key of the entry, as text: what a user's integration reads from its
    /// interfaces (replay hands them on in ``ReplayInterface``'s parameters). Kept when the
    /// manifest is written back.
    public var parameters: [String: String] = [:]

    /// Describe one interface.
    public init(
        index: Int, name: String? = nil, linkType: LinkType, role: InterfaceRole? = nil, ingestPort: UInt16? = nil,
        core: String? = nil, frames: Int? = nil, received: UInt64? = nil, dropped: UInt64? = nil
    ) {
        self.core = core
        self.index = index
        self.name = name
        self.linkType = linkType.rawValue
        self.role = role
        self.ingestPort = ingestPort
        self.frames = frames
        self.received = received
        self.dropped = dropped
    }

    /// ``linkType`` as a CaptureKit value.
    public var captureLinkType: LinkType { LinkType(rawValue: linkType) }

    enum CodingKeys: String, CodingKey {
        case index, name
        case linkType = "link_type"
        case role
        case ingestPort = "ingest_port"
        case brokerPort = "broker_port"
        case core
        case frames, received, dropped
    }

    /// Reads the known keys, and every other scalar key into ``parameters``.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        index = try c.decode(Int.self, forKey: .index)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        linkType = try c.decode(UInt32.self, forKey: .linkType)
        role = try c.decodeIfPresent(InterfaceRole.self, forKey: .role)
        ingestPort = try c.decodeIfPresent(UInt16.self, forKey: .ingestPort)
        brokerPort = try c.decodeIfPresent(UInt16.self, forKey: .brokerPort)
        core = try c.decodeIfPresent(String.self, forKey: .core)
        frames = try c.decodeIfPresent(Int.self, forKey: .frames)
        received = try c.decodeIfPresent(UInt64.self, forKey: .received)
        dropped = try c.decodeIfPresent(UInt64.self, forKey: .dropped)
        let all = try decoder.container(keyedBy: ManifestKey.self)
        for key in all.allKeys where CodingKeys(rawValue: key.stringValue) == nil {
            parameters[key.stringValue] = try all.decode(String.self, forKey: key)
        }
    }

    /// Writes the known keys, then ``parameters`` in sorted order.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(index, forKey: .index)
        try c.encodeIfPresent(name, forKey: .name)
        try c.encode(linkType, forKey: .linkType)
        try c.encodeIfPresent(role, forKey: .role)
        try c.encodeIfPresent(ingestPort, forKey: .ingestPort)
        try c.encodeIfPresent(brokerPort, forKey: .brokerPort)
        try c.encodeIfPresent(core, forKey: .core)
        try c.encodeIfPresent(frames, forKey: .frames)
        try c.encodeIfPresent(received, forKey: .received)
        try c.encodeIfPresent(dropped, forKey: .dropped)
        var extra = encoder.container(keyedBy: ManifestKey.self)
        for key in parameters.keys.sorted() where CodingKeys(rawValue: key) == nil {
            try extra.encode(parameters[key, default: ""], forKey: ManifestKey(stringValue: key))
        }
    }
}

/// A device that took part in the recording.
public struct ManifestDevice: Codable, Sendable, Equatable {
    /// A name to refer to it by (`forerunner-965`, `iphone-15`).
    public var name: String
    /// Manufacturer's model name.
    public var model: String?
    /// Firmware or OS version.
    public var firmware: String?
    /// App identifiers involved (Connect IQ app UUIDs, bundle ids).
    public var appIds: [String]

    /// Describe one device.
    public init(name: String, model: String? = nil, firmware: String? = nil, appIds: [String] = []) {
        self.name = name
        self.model = model
        self.firmware = firmware
        self.appIds = appIds
    }

    enum CodingKeys: String, CodingKey {
        case name, model, firmware
        case appIds = "app_ids"
    }

    /// `app_ids` may be left out.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        model = try c.decodeIfPresent(String.self, forKey: .model)
        firmware = try c.decodeIfPresent(String.self, forKey: .firmware)
        appIds = try c.decodeIfPresent([String].self, forKey: .appIds) ?? []
    }
}

/// A note attached to one frame. Also written as a pcapng packet comment when recorded live.
public struct ManifestAnnotation: Codable, Sendable, Equatable {
    /// The 1-based frame number it is attached to (Wireshark's numbering).
    public var frame: Int
    /// Virtual time of that frame: nanoseconds since the capture's first frame, the same clock as
    /// the trace's `t_ns`.
    public var timeNs: Int64
    /// The note.
    public var text: String
    /// Who wrote it, when known.
    public var author: String?

    /// Describe one annotation.
    public init(frame: Int, timeNs: Int64, text: String, author: String? = nil) {
        self.frame = frame
        self.timeNs = timeNs
        self.text = text
        self.author = author
    }

    enum CodingKeys: String, CodingKey {
        case frame
        case timeNs = "time_ns"
        case text, author
    }
}

/// An ATT handle named by hand, for a capture that starts after GATT discovery.
public struct ManifestGATTHandle: Codable, Sendable, Equatable {
    /// The attribute handle (the characteristic's value handle).
    public var handle: UInt16
    /// The owning service's UUID.
    public var serviceUUID: String?
    /// The characteristic's UUID.
    public var characteristicUUID: String

    /// Name one handle.
    public init(handle: UInt16, serviceUUID: String? = nil, characteristicUUID: String) {
        self.handle = handle
        self.serviceUUID = serviceUUID
        self.characteristicUUID = characteristicUUID
    }

    /// The handle and its two texts, as `Dissectors.GATTHandleName.table(_:)` reads them:
    /// `GATTHandleName.table(manifest.gattHandles.map(\.nameTexts))`.
    public var nameTexts: (handle: UInt16, service: String?, characteristic: String) {
        (handle, serviceUUID, characteristicUUID)
    }

    /// Each of the entry's texts that is not a Bluetooth UUID (``isUUIDText(_:)``): its key and
    /// what to write instead. A set from disk with one is refused when it loads; an entry built in
    /// code names nothing, and the replay engine warns.
    public var uuidTextProblems: [(key: String, problem: String)] {
        [("characteristic_uuid", characteristicUUID), ("service_uuid", serviceUUID)].compactMap { key, text in
            guard let text, !Self.isUUIDText(text) else { return nil }
            return (key, "\"\(text)\" is not a Bluetooth UUID: write 0x2a37, 0x12345678 or the full 6a4ecd28-667b-11e3-949a-0800200c9a66 form")
        }
    }

    /// Whether `text` is written as a Bluetooth UUID: 4 or 8 hex digits with or without `0x`
    /// (`0x2a37`, `180d`, `0x12345678`), or the 8-4-4-4-12 form, in any case. The grammar
    /// `Dissectors.BluetoothUUID` parses (a test holds the two to it); written here because a
    /// manifest is checked where it loads, and this module knows no dissector.
    public static func isUUIDText(_ text: String) -> Bool {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        let isHex: (Character) -> Bool = { $0.isASCII && $0.isHexDigit }
        if digits.count == 4 || digits.count == 8 { return digits.allSatisfy(isHex) }
        guard digits.count == 36 else { return false }
        for (offset, character) in digits.enumerated() {
            let isDashPlace = offset == 8 || offset == 13 || offset == 18 || offset == 23
            guard isDashPlace ? character == "-" : isHex(character) else { return false }
        }
        return true
    }

    enum CodingKeys: String, CodingKey {
        case handle
        case serviceUUID = "service_uuid"
        case characteristicUUID = "characteristic_uuid"
    }
}

/// Where a manifest's fields were written: 1-based lines by dotted field path. Two manifests are
/// equal whatever their lines, because the lines say where a value was, not what it is.
public struct SourceLines: Sendable, Equatable {
    /// Line by field path (`interfaces[2].core`, `messaging`).
    public var lines: [String: Int]

    /// Keys the manifest has where Tether reads no key of that name (in a scenario), one sentence
    /// each naming the field path and its line: reported as load warnings, since a misspelt
    /// `expectation:` would otherwise leave a scenario checking nothing without a word.
    public var ignoredKeys: [String] = []

    /// Lines by path.
    public init(_ lines: [String: Int] = [:]) { self.lines = lines }

    /// The line of `path`, if known.
    public subscript(path: String) -> Int? { lines[path] }

    /// Always `true`: see the type's comment.
    public static func == (lhs: SourceLines, rhs: SourceLines) -> Bool { true }
}

/// A fault scenario of a capture set: the same capture replayed with `faults` applied, checked
/// against its own expectations and baselines, reported as `SET / NAME` (docs/faults.md).
public struct ManifestScenario: Codable, Sendable, Hashable {
    /// Lower case letters, digits, `-` and `_`: part of the report's name and of its baseline path.
    public var name: String
    /// What the scenario shows, for a reader of the manifest.
    public var description: String?
    /// The faults, in the form `tether replay --fault` takes (`drop:frame=192`).
    public var faults: [String]
    /// Frame matching for this scenario (default: responder, as under any fault).
    public var frameMatching: FrameMatchingMode?
    /// What the scenario's replay must show.
    public var expectations: [Expectation]
    /// Its accepted traces: core → path in the set folder (normally `baseline/<name>/<core>.jsonl`).
    public var baselines: [String: String]

    /// A scenario.
    public init(name: String, description: String? = nil, faults: [String], frameMatching: FrameMatchingMode? = nil,
                expectations: [Expectation] = [], baselines: [String: String] = [:]) {
        self.name = name
        self.description = description
        self.faults = faults
        self.frameMatching = frameMatching
        self.expectations = expectations
        self.baselines = baselines
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, description, faults, expectations, baselines
        case frameMatching = "frame_matching"
    }

    /// The keys a scenario entry may have.
    public static let knownKeys: [String] = CodingKeys.allCases.map(\.rawValue)

    /// Lists and maps may be left out.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decodeIfPresent(String.self, forKey: .description)
        faults = try c.decodeIfPresent([String].self, forKey: .faults) ?? []
        frameMatching = try c.decodeIfPresent(FrameMatchingMode.self, forKey: .frameMatching)
        expectations = try c.decodeIfPresent([Expectation].self, forKey: .expectations) ?? []
        baselines = try c.decodeIfPresent([String: String].self, forKey: .baselines) ?? [:]
    }

    /// In a fixed order, baselines sorted.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encodeIfPresent(description, forKey: .description)
        try c.encode(faults, forKey: .faults)
        try c.encodeIfPresent(frameMatching, forKey: .frameMatching)
        try c.encode(LinearYAMLList(expectations), forKey: .expectations)
        var b = c.nestedContainer(keyedBy: ScenarioBaselineKey.self, forKey: .baselines)
        for core in baselines.keys.sorted() {
            try b.encode(baselines[core, default: ""], forKey: ScenarioBaselineKey(stringValue: core))
        }
    }

    private struct ScenarioBaselineKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The longest scenario name: it names a folder under `baseline/` (and appears in report page
    /// names), and file systems allow 255 bytes per name.
    public static let maximumNameLength = 100

    /// Where a core's baseline of scenario `name` goes by default.
    public static func defaultBaselinePath(scenario: String, core: String) -> String {
        "\(CaptureSetDirectory.baselineFolderName)/\(scenario)/\(core).jsonl"
    }
}
