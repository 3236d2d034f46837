import Dissectors

/// The peripheral's GATT database as the emulator serves it: every attribute at the handle the
/// capture shows it at (handle gaps and a last service ending at 0xFFFF kept as recorded).
///
/// Built from the capture's GATT discovery (Core v6.0 Vol 3 Part G §4.4–4.7) where it has some,
/// else from the handles its traffic uses and the manifest's `gatt_handles`.
public struct EmulatedDatabase: Sendable, Hashable {
    /// A descriptor (Find Information told its type, or it was inferred as a CCCD).
    public struct Descriptor: Sendable, Hashable {
        /// Its handle.
        public var handle: UInt16
        /// Its type.
        public var uuid: BluetoothUUID

        /// A descriptor at `handle`.
        public init(handle: UInt16, uuid: BluetoothUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    /// A characteristic: declaration, value and descriptors.
    public struct Characteristic: Sendable, Hashable {
        /// The declaration's handle.
        public var declarationHandle: UInt16
        /// The value's handle.
        public var valueHandle: UInt16
        /// Characteristic Properties (§3.3.1.1): 0x02 read, 0x04 write without response, 0x08 write, 0x10 notify, 0x20 indicate.
        public var properties: UInt8
        /// The characteristic's UUID.
        public var uuid: BluetoothUUID
        /// Its descriptors, by handle.
        public var descriptors: [Descriptor]

        /// A characteristic; see the properties.
        public init(declarationHandle: UInt16, valueHandle: UInt16, properties: UInt8, uuid: BluetoothUUID, descriptors: [Descriptor]) {
            self.declarationHandle = declarationHandle
            self.valueHandle = valueHandle
            self.properties = properties
            self.uuid = uuid
            self.descriptors = descriptors
        }
    }

    /// A service and what it holds.
    public struct Service: Sendable, Hashable {
        /// The service declaration's handle.
        public var startHandle: UInt16
        /// The last handle of its group, as recorded (0xFFFF for a last service that says so).
        public var endHandle: UInt16
        /// The service's UUID.
        public var uuid: BluetoothUUID
        /// `false` for a secondary service.
        public var isPrimary: Bool
        /// Its characteristics, by declaration handle.
        public var characteristics: [Characteristic]

        /// A service; see the properties.
        public init(startHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID, isPrimary: Bool, characteristics: [Characteristic]) {
            self.startHandle = startHandle
            self.endHandle = endHandle
            self.uuid = uuid
            self.isPrimary = isPrimary
            self.characteristics = characteristics
        }
    }

    /// The services, by start handle.
    public var services: [Service]
    /// What was inferred rather than seen (printed by `tether emulate`).
    public var notes: [String]
    /// What the recorded database got wrong and how it was repaired or left out, each naming the
    /// frame that told it (printed by `tether emulate` as warnings).
    public var warnings: [String] = []

    /// A database of `services`.
    public init(services: [Service], notes: [String] = []) {
        self.services = services
        self.notes = notes
    }

    /// The handle of every Client Characteristic Configuration descriptor.
    public var cccdHandles: Set<UInt16> {
        Set(services.flatMap { $0.characteristics.flatMap { $0.descriptors.filter { $0.uuid == .clientCharacteristicConfiguration }.map(\.handle) } })
    }

    /// The characteristic whose value lives at `handle`.
    public func characteristic(valueHandle handle: UInt16) -> Characteristic? {
        for service in services {
            if let found = service.characteristics.first(where: { $0.valueHandle == handle }) { return found }
        }
        return nil
    }

    /// Builds the database of `peripheral`. `file` names the capture in errors.
    public static func build(from peripheral: RecordedPeripheral, file: String) throws(EmulationError) -> EmulatedDatabase {
        let usage = HandleUsage(peripheral.pdus)
        var database: EmulatedDatabase
        if !peripheral.discovered.services.isEmpty {
            database = fromDiscovery(peripheral.discovered, usage: usage, frames: peripheral.discoveryFrames)
        } else if !usage.handles.isEmpty || !peripheral.namedHandles.isEmpty {
            database = fromUsage(usage, named: peripheral.namedHandles)
        } else {
            throw .noDatabase(file: file)
        }
        database.services.sort { $0.startHandle < $1.startHandle }
        return database
    }

    /// Services, characteristics and descriptors as discovery told them; CCCDs added where a
    /// notifying characteristic has none and the next handle is free.
    ///
    /// A recording can hold a database no server could have (a damaged or hostile capture, a
    /// buggy peripheral): a service at handle 0, a service that ends before it starts, services
    /// that overlap, a value handle outside its characteristic's range, a descriptor typed where a
    /// declaration stands. Serving it as recorded would hand the central contradictory discovery
    /// answers, so each is repaired or left out, and said in ``warnings`` with the frame whose
    /// discovery response told it (`frames`, handle → frame).
    static func fromDiscovery(_ discovered: GATTDatabase, usage: HandleUsage, frames: [UInt16: Int] = [:]) -> EmulatedDatabase {
        var notes: [String] = []
        var warnings: [String] = []
        func told(_ handle: UInt16) -> String { frames[handle].map { " (frame \($0))" } ?? "" }
        var services: [GATTDatabase.Service] = []
        for service in discovered.services.values.sorted(by: { $0.startHandle < $1.startHandle }) {
            if service.startHandle == 0 {
                warnings.append("service \(service.uuid) is declared at handle 0x0000\(told(0)), which is not a valid attribute handle (Core Vol 3 Part F 3.2.2): left out")
            } else if service.startHandle > service.endHandle {
                warnings.append("service \(service.uuid) at 0x\(hex4(service.startHandle))\(told(service.startHandle)) ends at 0x\(hex4(service.endHandle)), before it starts: left out")
            } else {
                services.append(service)
            }
        }
        let declarations = discovered.characteristics.values.sorted { $0.declarationHandle < $1.declarationHandle }
        var built: [Service] = []
        /// What each handle of the built database is, so that no handle is two attributes.
        var taken: [UInt16: String] = [:]
        for service in services { taken[service.startHandle] = "the declaration of service \(service.uuid)" }
        for (index, service) in services.enumerated() {
            // A service whose range runs into the next service's ends just before that one
            // starts. The discovery of a last service often says 0xFFFF: that is no overlap.
            var end = service.endHandle
            if index + 1 < services.count, end >= services[index + 1].startHandle {
                let next = services[index + 1]
                if end != 0xFFFF {
                    warnings.append("service \(service.uuid) at 0x\(hex4(service.startHandle))\(told(service.startHandle)) runs to 0x\(hex4(end)), over service \(next.uuid) at 0x\(hex4(next.startHandle)): cut to end at 0x\(hex4(next.startHandle - 1))")
                }
                end = next.startHandle - 1
            }
            let inside = declarations.filter { $0.declarationHandle > service.startHandle && $0.declarationHandle <= end }
            var characteristics: [Characteristic] = []
            for (i, declaration) in inside.enumerated() {
                let limit = i + 1 < inside.count ? inside[i + 1].declarationHandle - 1 : end
                guard declaration.valueHandle > declaration.declarationHandle, declaration.valueHandle <= limit else {
                    warnings.append("characteristic \(declaration.uuid) declared at 0x\(hex4(declaration.declarationHandle))\(told(declaration.declarationHandle)) has its value at 0x\(hex4(declaration.valueHandle)), outside 0x\(hex4(declaration.declarationHandle + 1))-0x\(hex4(limit)) in service \(service.uuid): left out")
                    continue
                }
                if let other = taken[declaration.declarationHandle] ?? taken[declaration.valueHandle] {
                    warnings.append("characteristic \(declaration.uuid) at 0x\(hex4(declaration.declarationHandle))\(told(declaration.declarationHandle)) uses a handle that is \(other): left out")
                    continue
                }
                taken[declaration.declarationHandle] = "the declaration of characteristic \(declaration.uuid)"
                taken[declaration.valueHandle] = "the value of characteristic \(declaration.uuid)"
                var descriptors: [Descriptor] = []
                if declaration.valueHandle < limit {
                    for handle in (declaration.valueHandle + 1)...limit {
                        guard let type = discovered.attributeTypes[handle], !isDeclarationType(type) else { continue }
                        if let other = taken[handle] {
                            warnings.append("a descriptor \(type) at 0x\(hex4(handle))\(told(handle)) stands where \(other) is: left out")
                            continue
                        }
                        taken[handle] = "descriptor \(type) of characteristic \(declaration.uuid)"
                        descriptors.append(Descriptor(handle: handle, uuid: type))
                    }
                }
                var properties = declaration.properties
                properties |= usage.properties(of: declaration.valueHandle) & ~declaration.properties & 0x0C
                let notifies = declaration.properties & 0x30 != 0 || usage.notified.contains(declaration.valueHandle)
                // A value at 0xFFFF has no handle after it for a CCCD.
                if notifies, declaration.valueHandle < 0xFFFF, !descriptors.contains(where: { $0.uuid == .clientCharacteristicConfiguration }) {
                    let candidate = declaration.valueHandle + 1
                    if candidate <= limit, discovered.attributeTypes[candidate] == nil, taken[candidate] == nil {
                        taken[candidate] = "the CCCD of characteristic \(declaration.uuid)"
                        descriptors.insert(Descriptor(handle: candidate, uuid: .clientCharacteristicConfiguration), at: 0)
                        notes.append("characteristic \(declaration.uuid) notifies but discovery named no CCCD: one placed at 0x\(hex4(candidate))")
                    }
                }
                characteristics.append(Characteristic(declarationHandle: declaration.declarationHandle, valueHandle: declaration.valueHandle,
                                                      properties: properties, uuid: declaration.uuid, descriptors: descriptors))
            }
            // A recorded 0xFFFF stays as recorded (what the peripheral answered); a real overlap is cut.
            built.append(Service(startHandle: service.startHandle, endHandle: service.endHandle == 0xFFFF ? 0xFFFF : end, uuid: service.uuid,
                                 isPrimary: service.isPrimary, characteristics: characteristics))
        }
        // A descriptor type recorded at a declaration's handle (a CCCD on a service declaration):
        // the declaration is what the database serves there.
        for (handle, type) in discovered.attributeTypes.sorted(by: { $0.key < $1.key }) where !isDeclarationType(type) {
            if let what = taken[handle], what.hasPrefix("the declaration") {
                warnings.append("discovery typed handle 0x\(hex4(handle))\(told(handle)) as \(type), but it is \(what): the declaration is kept")
            }
        }
        let covered = Set(built.flatMap { s in s.characteristics.flatMap { [$0.valueHandle] + $0.descriptors.map(\.handle) } })
        let missing = usage.handles.subtracting(covered).sorted()
        if !missing.isEmpty {
            notes.append("handles used but not in the discovered database (left out): \(missing.map { "0x" + hex4($0) }.joined(separator: ", "))")
        }
        var database = EmulatedDatabase(services: built, notes: notes)
        database.warnings = warnings
        return database
    }

    /// A database from the handles the traffic uses and the manifest names: a characteristic per
    /// value handle (declaration at the handle before it), a CCCD where one was written, one service
    /// per service UUID (a made-up UUID where nothing names it).
    static func fromUsage(_ usage: HandleUsage, named: [UInt16: GATTHandleName]) -> EmulatedDatabase {
        var notes = ["the capture holds no GATT discovery: the database is rebuilt from the handles it uses and the manifest's gatt_handles"]
        var values = usage.handles.subtracting(usage.cccds).union(named.keys).sorted()
        values.removeAll { $0 < 2 }
        var groups: [(service: BluetoothUUID, characteristics: [Characteristic])] = []
        let unnamedService = BluetoothUUID("7e7effff-0000-4000-8000-7e7e7e7e7e7e")!
        for handle in values {
            let name = named[handle]
            let uuid = name?.characteristic ?? madeUpUUID(handle)
            if name == nil { notes.append("handle 0x\(hex4(handle)) is named nowhere: characteristic UUID \(uuid) made up") }
            let service = name?.service ?? unnamedService
            var descriptors: [Descriptor] = []
            if handle < 0xFFFF, usage.cccds.contains(handle + 1) { descriptors.append(Descriptor(handle: handle + 1, uuid: .clientCharacteristicConfiguration)) }
            var properties = usage.properties(of: handle)
            if properties == 0 { properties = 0x02 }
            let characteristic = Characteristic(declarationHandle: handle - 1, valueHandle: handle, properties: properties, uuid: uuid, descriptors: descriptors)
            if let last = groups.indices.last, groups[last].service == service {
                groups[last].characteristics.append(characteristic)
            } else {
                groups.append((service, [characteristic]))
            }
        }
        var services: [Service] = []
        var taken = Set<UInt16>()
        for group in groups {
            for c in group.characteristics { taken.formUnion([c.declarationHandle, c.valueHandle] + c.descriptors.map(\.handle)) }
        }
        for group in groups {
            let first = group.characteristics[0].declarationHandle
            let last = group.characteristics.map { c in c.descriptors.map(\.handle).max() ?? c.valueHandle }.max()!
            if first > 1, !taken.contains(first - 1) {
                taken.insert(first - 1)
                services.append(Service(startHandle: first - 1, endHandle: last, uuid: group.service, isPrimary: true, characteristics: group.characteristics))
            } else if let previous = services.indices.last {
                services[previous].characteristics += group.characteristics
                services[previous].endHandle = last
                notes.append("no free handle before 0x\(hex4(first)) for service \(group.service): its characteristics joined the previous service")
            } else {
                notes.append("no free handle before 0x\(hex4(first)) for service \(group.service): left out")
            }
        }
        return EmulatedDatabase(services: services, notes: notes)
    }

    /// A stable made-up UUID for a characteristic the capture names nowhere.
    static func madeUpUUID(_ handle: UInt16) -> BluetoothUUID {
        BluetoothUUID("7e7e\(hex4(handle))-0000-4000-8000-7e7e7e7e7e7e")!
    }
}

/// Which handles the traffic uses, and how.
struct HandleUsage {
    var handles: Set<UInt16> = []
    var written: Set<UInt16> = []
    var writtenWithoutResponse: Set<UInt16> = []
    var read: Set<UInt16> = []
    var notified: Set<UInt16> = []
    var indicated: Set<UInt16> = []
    /// Handles a client wrote 0x0000, 0x0100 or 0x0200 to, right after a notified or indicated handle.
    var cccds: Set<UInt16> = []

    init(_ pdus: [RecordedPDU]) {
        var cccdCandidates: [UInt16: [UInt8]] = [:]
        for pdu in pdus {
            guard let handle = pdu.handle else { continue }
            switch (pdu.fromClient, pdu.opcode) {
            case (true, 0x12): written.insert(handle); handles.insert(handle); cccdCandidates[handle] = pdu.value
            case (true, 0x52): writtenWithoutResponse.insert(handle); handles.insert(handle)
            case (true, 0x0A), (true, 0x0C): read.insert(handle); handles.insert(handle)
            case (false, 0x1B): notified.insert(handle); handles.insert(handle)
            case (false, 0x1D): indicated.insert(handle); handles.insert(handle)
            default: break
            }
        }
        for (handle, value) in cccdCandidates where handle > 1 && value.count == 2 && value[1] == 0 && value[0] <= 3 {
            if notified.contains(handle - 1) || indicated.contains(handle - 1) { cccds.insert(handle) }
        }
    }

    /// Characteristic Properties the traffic shows for `handle`.
    func properties(of handle: UInt16) -> UInt8 {
        var bits: UInt8 = 0
        if read.contains(handle) { bits |= 0x02 }
        if writtenWithoutResponse.contains(handle) { bits |= 0x04 }
        if written.contains(handle) { bits |= 0x08 }
        if notified.contains(handle) { bits |= 0x10 }
        if indicated.contains(handle) { bits |= 0x20 }
        return bits
    }
}

/// Four upper-case hex digits.
func hex4(_ value: UInt16) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: 4 - text.count) + text
}

/// «Primary Service», «Secondary Service», «Include», «Characteristic»: 0x2800–0x28FF.
func isDeclarationType(_ uuid: BluetoothUUID) -> Bool {
    guard let short = uuid.shortValue else { return false }
    return (0x2800...0x28FF).contains(short)
}
