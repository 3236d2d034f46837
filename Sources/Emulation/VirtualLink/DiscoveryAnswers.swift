import Dissectors

// The GATT server's side of discovery (Core v6.0 Vol 3 Part G §4.4–4.7, ATT Part F §3.4.3–3.4.4):
// what one response to each discovery request carries from the emulated database at an ATT_MTU.
// A response holds entries of one UUID size only (§3.4.4.2, §3.4.4.10), so a run of entries stops
// where the size changes; the next request picks up there.

extension BluetoothUUID {
    /// How many bytes ATT carries this UUID in: 2 for a 16-bit Bluetooth-base UUID, else 16 (ATT
    /// has no 32-bit form on the air, §3.2.1).
    public var attributeSize: Int {
        if let short = shortValue, short <= 0xFFFF { return 2 }
        return 16
    }

    /// The UUID as ATT carries it: little-endian, in ``attributeSize`` bytes.
    public var littleEndianAttributeBytes: [UInt8] {
        if attributeSize == 2, let short = shortValue { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return bytes.reversed()
    }
}

extension EmulatedDatabase {
    /// The services one Read By Group Type Response (type «Primary Service») carries for a
    /// request from `start` to `end` at `mtu`; empty means Attribute Not Found.
    public func primaryServices(from start: UInt16, through end: UInt16, mtu: Int) -> [Service] {
        // From the first service at or after `start`, lazily: a response takes a few entries, and a
        // database may hold thousands of services.
        let candidates = services[firstService(from: start)...].lazy.filter { $0.isPrimary && $0.startHandle >= start && $0.startHandle <= end }
        return Self.sameSizeRun(candidates, uuid: \.uuid, entryOverhead: 4, capacity: mtu - 2)
    }

    /// The services of `uuid` one Find By Type Value Response carries for a request from `start`
    /// to `end` at `mtu` (4 bytes per found handle range); empty means Attribute Not Found.
    public func primaryServices(_ uuid: BluetoothUUID, from start: UInt16, through end: UInt16, mtu: Int) -> [Service] {
        let found = services[firstService(from: start)...].lazy.filter { $0.isPrimary && $0.uuid == uuid && $0.startHandle >= start && $0.startHandle <= end }
        return Array(found.prefix(max(1, (mtu - 1) / 4)))
    }

    /// The characteristic declarations one Read By Type Response («Characteristic») carries for a
    /// request from `start` to `end` at `mtu`; empty means Attribute Not Found.
    public func characteristicDeclarations(from start: UInt16, through end: UInt16, mtu: Int) -> [Characteristic] {
        let candidates = services(around: start, through: end).flatMap(\.characteristics)
            .filter { $0.declarationHandle >= start && $0.declarationHandle <= end }
        // Handle (2), properties (1), value handle (2), then the UUID.
        return Self.sameSizeRun(candidates, uuid: \.uuid, entryOverhead: 5, capacity: mtu - 2)
    }

    /// The descriptors one Find Information Response carries for a request from `start` to `end`
    /// at `mtu`; empty means Attribute Not Found.
    public func descriptors(from start: UInt16, through end: UInt16, mtu: Int) -> [Descriptor] {
        let candidates = services(around: start, through: end).flatMap(\.characteristics).flatMap(\.descriptors)
            .filter { $0.handle >= start && $0.handle <= end }
        return Self.sameSizeRun(candidates, uuid: \.uuid, entryOverhead: 2, capacity: mtu - 2)
    }

    /// The index of the first service starting at or after `handle`, by binary search over the
    /// services in handle order (as ``build(from:file:)`` makes them).
    func firstService(from handle: UInt16) -> Int {
        var low = 0
        var high = services.count
        while low < high {
            let middle = (low + high) / 2
            if services[middle].startHandle < handle { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The services from the one holding `start` to the last starting by `end`, lazily, in handle
    /// order: a request's range, found by binary search rather than by reading the whole database.
    func services(around start: UInt16, through end: UInt16) -> LazyPrefixWhileSequence<ArraySlice<Service>> {
        var index = firstService(from: start)
        if index > 0, services[index - 1].endHandle >= start { index -= 1 }
        return services[index...].lazy.prefix { $0.startHandle <= end }
    }

    /// The service holding `handle`.
    public func service(containing handle: UInt16) -> Service? {
        services.first { $0.startHandle <= handle && handle <= $0.endHandle }
    }

    /// The service starting at `startHandle`.
    public func service(startingAt startHandle: UInt16) -> Service? {
        services.first { $0.startHandle == startHandle }
    }

    /// The last handle a characteristic's descriptors may use: before the next declaration of its
    /// service, else its service's end.
    public func descriptorRangeEnd(of characteristic: Characteristic) -> UInt16 {
        guard let service = service(containing: characteristic.declarationHandle) else { return characteristic.valueHandle }
        let next = service.characteristics.map(\.declarationHandle).filter { $0 > characteristic.declarationHandle }.min()
        return next.map { $0 - 1 } ?? service.endHandle
    }

    /// The characteristic declared at or holding `handle` as its value or a descriptor.
    public func characteristic(holding handle: UInt16) -> Characteristic? {
        for service in services {
            for c in service.characteristics where c.valueHandle == handle || c.descriptors.contains(where: { $0.handle == handle }) {
                return c
            }
        }
        return nil
    }

    /// The leading entries of `candidates` whose UUIDs have the first one's size, as many as fit.
    static func sameSizeRun<S: Sequence>(_ candidates: S, uuid: (S.Element) -> BluetoothUUID, entryOverhead: Int, capacity: Int) -> [S.Element] {
        var iterator = candidates.makeIterator()
        guard let first = iterator.next() else { return [] }
        let size = uuid(first).attributeSize
        let fit = max(1, capacity / (entryOverhead + size))
        var run = [first]
        while run.count < fit, let candidate = iterator.next(), uuid(candidate).attributeSize == size {
            run.append(candidate)
        }
        return run
    }
}
