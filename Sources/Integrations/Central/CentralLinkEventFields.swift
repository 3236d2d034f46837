import BehaviourTrace
import Emulation

/// The fields of a `central` trace event that the virtual link's answer makes (every one but a
/// `notification`, which ``CentralNotificationFields`` holds), kept as the link's own value and
/// what the adapter added to it, rather than a dictionary: the fields are written only when the
/// line is written or a field read.
///
/// The line is the one docs/trace-format.md lists, unchanged: ``forEachField(_:)`` gives the
/// fields in key order. Two events are equal when they write the same fields: the values held
/// keep more than the line (a service's characteristics, an advertisement's capture time), and
/// what is not written must not make two events with the same line differ.
struct CentralLinkEventFields: TracePayloadComparedByWrittenFields {
    /// What the fields are read from. Each case carries what its events write and nothing else,
    /// so a value of this type cannot hold a link event it does not write.
    enum Source: Sendable, Hashable {
        /// `discovered`: an advertising report, parsed once, as the facade hands it to the app.
        case advertisement(RecordedAdvertisement, AdvertisingData, synthesized: Bool, peripheral: String)
        /// `connected`, `disconnected`, and the peripheral's identifier.
        case connection(Connection, peripheral: String)
        /// An event that ends an app request (a discovery, a read, a write with response, a
        /// notification switch), and the request's id when one was waiting.
        case answer(Answer, request: Int64?)
        /// Any other event of the link (`mtu`, `frame_matched`, `frame_diverged`, `rssi`,
        /// `no_recorded_answer`, `api_misuse`).
        case link(Link)
    }

    /// The link's connection events (``VirtualLinkEvent``'s cases of the same names).
    enum Connection: Sendable, Hashable {
        case connected(recorded: Int, frame: Int?)
        case disconnected(reason: UInt8, byCentral: Bool, frame: Int?)
    }

    /// The link's answers to an app request (``VirtualLinkEvent``'s cases of the same names).
    enum Answer: Sendable, Hashable {
        case servicesDiscovered([EmulatedDatabase.Service], error: UInt8?)
        case includedServicesDiscovered(service: UInt16, [EmulatedDatabase.Service], error: UInt8?)
        case characteristicsDiscovered(service: UInt16, [EmulatedDatabase.Characteristic], error: UInt8?)
        case descriptorsDiscovered(characteristic: UInt16, [EmulatedDatabase.Descriptor], error: UInt8?)
        case read(handle: UInt16, value: [UInt8]?, error: UInt8?, frame: Int?)
        case written(handle: UInt16, error: UInt8?, frame: Int?)
        case notificationState(handle: UInt16, enabled: Bool, error: UInt8?)
    }

    /// The link's other events (``VirtualLinkEvent``'s cases of the same names).
    enum Link: Sendable, Hashable {
        case mtuChanged(Int)
        case requestSent(pdu: [UInt8], matched: RecordedRequest?, expected: RecordedRequest?)
        case rssi(Int?)
        case unanswered(String)
        case misuse(String)
    }

    /// What the fields are read from.
    let source: Source

    /// The fields of `source`.
    init(_ source: Source) {
        self.source = source
    }

    /// Every field, keys in ascending order (each case lists its keys sorted; `att_error`, where a
    /// request may fail, comes first).
    func forEachField(_ body: (String, TraceValue) -> Void) {
        func int(_ value: some BinaryInteger) -> TraceValue { .int(Int64(value)) }
        func hex(_ bytes: [UInt8]) -> TraceValue { .string(JSONLiteral.hex(bytes)) }
        func error(_ code: UInt8?) { if let code { body("att_error", int(code)) } }
        switch source {
        case let .advertisement(report, parsed, synthesized, peripheral):
            body("address", .string(report.address))
            body("connectable", .bool(report.isConnectable))
            body("data", hex(report.data))
            if !synthesized { body("frame", int(report.frame)) }
            if let data = parsed.manufacturerData { body("manufacturer_data", hex(data)) }
            if let name = parsed.name { body("name", .string(name)) }
            body("peripheral", .string(peripheral))
            if let rssi = report.rssi { body("rssi", int(rssi)) }
            if report.isScanResponse { body("scan_response", .bool(true)) }
            if !parsed.serviceData.isEmpty {
                // A UUID listed twice keeps its first data, as a dictionary built from the list did.
                var members: [String: TraceValue] = [:]
                for item in parsed.serviceData where members[item.uuid.description] == nil {
                    members[item.uuid.description] = hex(item.data)
                }
                body("service_data", .object(members))
            }
            if !parsed.services.isEmpty { body("services", .array(parsed.services.map { .string($0.description) })) }
            if !parsed.solicitedServices.isEmpty {
                body("solicited_services", .array(parsed.solicitedServices.map { .string($0.description) }))
            }
            if synthesized { body("synthesized", .bool(true)) }
            if let power = parsed.txPower { body("tx_power", int(power)) }
        case let .connection(event, peripheral):
            switch event {
            case let .connected(recorded, frame):
                if let frame { body("frame", int(frame)) }
                body("peripheral", .string(peripheral))
                body("recorded_connection", int(recorded + 1))
            case let .disconnected(reason, byCentral, frame):
                body("by_central", .bool(byCentral))
                if let frame { body("frame", int(frame)) }
                body("peripheral", .string(peripheral))
                body("reason", int(reason))
            }
        case let .answer(event, request):
            let requestValue = request.map(TraceValue.int)
            switch event {
            case let .servicesDiscovered(services, code):
                error(code)
                if let requestValue { body("request", requestValue) }
                body("services", .array(services.map(Self.service)))
            case let .includedServicesDiscovered(service, services, code):
                error(code)
                if let requestValue { body("request", requestValue) }
                body("service", int(service))
                body("services", .array(services.map(Self.service)))
            case let .characteristicsDiscovered(service, found, code):
                error(code)
                body("characteristics", .array(found.map {
                    .object(["uuid": .string($0.uuid.description), "declaration": int($0.declarationHandle),
                             "handle": int($0.valueHandle), "properties": int($0.properties)])
                }))
                if let requestValue { body("request", requestValue) }
                body("service", int(service))
            case let .descriptorsDiscovered(characteristic, found, code):
                error(code)
                body("characteristic", int(characteristic))
                body("descriptors", .array(found.map { .object(["uuid": .string($0.uuid.description), "handle": int($0.handle)]) }))
                if let requestValue { body("request", requestValue) }
            case let .read(handle, value, code, frame):
                error(code)
                if let frame { body("frame", int(frame)) }
                body("handle", int(handle))
                if let requestValue { body("request", requestValue) }
                if let value { body("value", hex(value)) }
            case let .written(handle, code, frame):
                error(code)
                if let frame { body("frame", int(frame)) }
                body("handle", int(handle))
                if let requestValue { body("request", requestValue) }
            case let .notificationState(handle, enabled, code):
                error(code)
                body("enabled", .bool(enabled))
                body("handle", int(handle))
                if let requestValue { body("request", requestValue) }
            }
        case .link(let event):
            switch event {
            case .mtuChanged(let mtu):
                body("mtu", int(mtu))
            case let .requestSent(pdu, matched, expected):
                if let matched {
                    body("frame", int(matched.frame))
                    body("request", hex(pdu))
                } else {
                    if let expected {
                        body("expected", hex(expected.pdu))
                        body("expected_frame", int(expected.frame))
                    }
                    body("sent", hex(pdu))
                }
            case .rssi(let rssi):
                if let rssi { body("rssi", int(rssi)) }
            case .unanswered(let detail), .misuse(let detail):
                body("detail", .string(detail))
            }
        }
    }

    /// `{"uuid", "start", "end", "primary"}`.
    static func service(_ service: EmulatedDatabase.Service) -> TraceValue {
        .object(["uuid": .string(service.uuid.description), "start": .int(Int64(service.startHandle)),
                 "end": .int(Int64(service.endHandle)), "primary": .bool(service.isPrimary)])
    }
}
