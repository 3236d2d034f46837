// The MQTT side of the widget channel: topics, the request payload the core publishes, and strict
// decoders for what the cloud sends. The topic and payload design is fixed by docs/widget-mqtt.md;
// this file follows it. Payloads may carry members beyond those read here; they are ignored.

/// The topics of one account (docs/widget-mqtt.md).
///
/// | topic | direction | payload |
/// |---|---|---|
/// | `tether/{account}/api/request/{client_id}` | client → cloud, QoS 1 | `{"id","path","version":"1.0.0","params":{…}}` |
/// | `tether/{account}/api/response/{client_id}` | cloud → client, QoS 1 | `{"id","code","message","data"}` |
/// | `tether/{account}/thing/properties` | cloud → clients, QoS 1 | `{"iotId","items":{prop:{"value","time"}}}` |
/// | `tether/{account}/thing/status` | cloud → clients, QoS 1 | `{"iotId","status":{"value":1|3,"time"}}` |
public struct WidgetTopics: Sendable, Hashable {
    /// The account.
    public let account: String

    /// The API version every request carries.
    public static let apiVersion = "1.0.0"

    /// The topics of `account`.
    public init(account: String) {
        self.account = account
    }

    /// `host-{account}` or `widget-{account}`.
    public static func clientID(role: WidgetRole, account: String) -> String {
        "\(role.rawValue)-\(account)"
    }

    /// `tether/{account}/api/request/{clientID}`.
    public func request(clientID: String) -> String { "tether/\(account)/api/request/\(clientID)" }

    /// `tether/{account}/api/response/{clientID}`.
    public func response(clientID: String) -> String { "tether/\(account)/api/response/\(clientID)" }

    /// `tether/{account}/thing/properties`.
    public var properties: String { "tether/\(account)/thing/properties" }

    /// `tether/{account}/thing/status`.
    public var status: String { "tether/\(account)/thing/status" }

    /// Whether `text` can be one topic level: not empty, at most 64 UTF-8 bytes, no `/`, `+`, `#`,
    /// NUL or other control characters.
    public static func isValidLevel(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { byte in
            byte >= 0x20 && byte != 0x7F && byte != UInt8(ascii: "/") && byte != UInt8(ascii: "+") && byte != UInt8(ascii: "#")
        }
    }
}

/// A response payload's envelope.
struct ResponseEnvelope: Sendable, Hashable {
    var id: String
    var code: Int
    var message: String
    var data: WidgetJSON
}

/// Why a payload was refused: the violation's detail, and the response id when one could be read
/// (so the request it answers still gets its one result).
struct PayloadProblem: Error, Sendable, Hashable {
    var detail: String
    var responseID: String?

    init(_ detail: String, responseID: String? = nil) {
        self.detail = detail
        self.responseID = responseID
    }
}

enum MQTTCodec {
    static func requestPayload(id: WidgetRequestID, path: WidgetAPIPath, params: WidgetJSON) -> [UInt8] {
        WidgetJSON.object([
            "id": .string(id.rawValue), "path": .string(path.rawValue), "version": .string(WidgetTopics.apiVersion), "params": params,
        ]).encoded()
    }

    static func parseObject(_ bytes: [UInt8], what: String) -> Result<[String: WidgetJSON], PayloadProblem> {
        let value: WidgetJSON
        do {
            value = try WidgetJSON.parse(bytes)
        } catch {
            return .failure(PayloadProblem("\(what) (\(bytes.count) bytes) is not JSON: \(error)"))
        }
        guard let members = value.objectValue else {
            return .failure(PayloadProblem("\(what) is a JSON \(value.typeName), not an object"))
        }
        return .success(members)
    }

    static func decodeResponse(_ bytes: [UInt8]) -> Result<ResponseEnvelope, PayloadProblem> {
        parseObject(bytes, what: "the response").flatMap { members in
            guard let id = members["id"]?.stringValue else {
                return .failure(PayloadProblem("the response has no string \"id\" (found \(members["id"]?.text ?? "nothing"))"))
            }
            guard let code = members["code"]?.intValue, let small = Int(exactly: code) else {
                return .failure(PayloadProblem("response \(id) has no integer \"code\" (found \(members["code"]?.text ?? "nothing"))", responseID: id))
            }
            var message = ""
            if let value = members["message"] {
                guard let text = value.stringValue else {
                    return .failure(PayloadProblem("response \(id): \"message\" must be a string, found a \(value.typeName)", responseID: id))
                }
                message = text
            }
            return .success(ResponseEnvelope(id: id, code: small, message: message, data: members["data"] ?? .null))
        }
    }

    static func string(_ value: WidgetJSON?, _ key: String, in what: String) -> Result<String, PayloadProblem> {
        guard let text = value?.stringValue, !text.isEmpty else {
            return .failure(PayloadProblem("\(what): \"\(key)\" must be a non-empty string, found \(value?.text ?? "nothing")"))
        }
        return .success(text)
    }

    static func integer(_ value: WidgetJSON?, _ key: String, in what: String) -> Result<Int64, PayloadProblem> {
        guard let number = value?.intValue else {
            return .failure(PayloadProblem("\(what): \"\(key)\" must be an integer, found \(value?.text ?? "nothing")"))
        }
        return .success(number)
    }

    /// `{"iotId","items":{prop:{"value","time"}}}`: a properties notification or a property read's data.
    static func decodeProperties(_ value: WidgetJSON, what: String) -> Result<(iotId: String, items: [String: WidgetPropertyValue]), PayloadProblem> {
        guard let members = value.objectValue else {
            return .failure(PayloadProblem("\(what) is a JSON \(value.typeName), not an object"))
        }
        return string(members["iotId"], "iotId", in: what).flatMap { iotId in
            guard let items = members["items"]?.objectValue else {
                return .failure(PayloadProblem("\(what): \"items\" must be an object, found \(members["items"]?.text ?? "nothing")"))
            }
            var decoded: [String: WidgetPropertyValue] = [:]
            for (name, item) in items {
                guard let value = item["value"], let time = item["time"]?.intValue, time >= 0 else {
                    return .failure(PayloadProblem("\(what): item \"\(name)\" must be {\"value\":…,\"time\":<ms ≥ 0>}, found \(item.text)"))
                }
                decoded[name] = WidgetPropertyValue(value: value, time: time)
            }
            return .success((iotId, decoded))
        }
    }

    /// `{"iotId","status":{"value","time"}}`.
    static func decodeStatus(_ value: WidgetJSON, what: String) -> Result<(iotId: String, code: Int64, time: Int64), PayloadProblem> {
        guard let members = value.objectValue else {
            return .failure(PayloadProblem("\(what) is a JSON \(value.typeName), not an object"))
        }
        return string(members["iotId"], "iotId", in: what).flatMap { iotId in
            guard let status = members["status"], let code = status["value"]?.intValue, let time = status["time"]?.intValue, time >= 0 else {
                return .failure(PayloadProblem("\(what): \"status\" must be {\"value\":<int>,\"time\":<ms ≥ 0>}, found \(members["status"]?.text ?? "nothing")"))
            }
            return .success((iotId, code, time))
        }
    }

    static func array(_ value: WidgetJSON, what: String) -> Result<[WidgetJSON], PayloadProblem> {
        guard let elements = value.arrayValue else {
            return .failure(PayloadProblem("\(what): \"data\" must be an array, found a \(value.typeName)"))
        }
        return .success(elements)
    }

    static func decodeDevices(_ data: WidgetJSON) -> Result<[WidgetDevice], PayloadProblem> {
        let what = "the device list"
        return array(data, what: what).flatMap { elements in
            var devices: [WidgetDevice] = []
            var seen: Set<String> = []
            for element in elements {
                let where_ = "\(what), device \(devices.count)"
                let fields = string(element["iotId"], "iotId", in: where_).flatMap { iotId in
                    string(element["productKey"], "productKey", in: where_).flatMap { productKey in
                        string(element["deviceName"], "deviceName", in: where_).flatMap { deviceName in
                            integer(element["status"], "status", in: where_).map { (iotId, productKey, deviceName, $0) }
                        }
                    }
                }
                guard case let .success((iotId, productKey, deviceName, status)) = fields else {
                    if case .failure(let problem) = fields { return .failure(problem) }
                    continue
                }
                var nickName: String?
                switch element["nickName"] {
                case nil, .null?: nickName = nil
                case .string(let text)?: nickName = text
                case let other?: return .failure(PayloadProblem("\(where_): \"nickName\" must be a string or null, found a \(other.typeName)"))
                }
                guard seen.insert(iotId).inserted, let code = Int(exactly: status) else {
                    return .failure(PayloadProblem("\(where_): device \(iotId) is listed twice or its status is out of range"))
                }
                devices.append(WidgetDevice(iotId: iotId, productKey: productKey, deviceName: deviceName, nickName: nickName, status: code))
            }
            return .success(devices)
        }
    }

    static func decodeScenes(_ data: WidgetJSON) -> Result<[WidgetScene], PayloadProblem> {
        let what = "the scene list"
        return array(data, what: what).flatMap { elements in
            var scenes: [WidgetScene] = []
            for element in elements {
                let where_ = "\(what), scene \(scenes.count)"
                switch string(element["sceneId"], "sceneId", in: where_).flatMap({ id in string(element["name"], "name", in: where_).map { (id, $0) } }) {
                case .success(let (id, name)): scenes.append(WidgetScene(sceneId: id, name: name))
                case .failure(let problem): return .failure(problem)
                }
            }
            return .success(scenes)
        }
    }

    static func decodeScenePage(_ data: WidgetJSON) -> Result<WidgetScenePage, PayloadProblem> {
        let what = "the scene catalog page"
        let numbers = integer(data["total"], "total", in: what).flatMap { total in
            integer(data["pageNo"], "pageNo", in: what).flatMap { pageNo in
                integer(data["pageSize"], "pageSize", in: what).map { (total, pageNo, $0) }
            }
        }
        return numbers.flatMap { total, pageNo, pageSize in
            guard let elements = data["data"]?.arrayValue,
                  let total = Int(exactly: total), let pageNo = Int(exactly: pageNo), let pageSize = Int(exactly: pageSize) else {
                return .failure(PayloadProblem("\(what): \"data\" must be an array of scenes and the numbers in range"))
            }
            var scenes: [WidgetCatalogScene] = []
            for element in elements {
                let where_ = "\(what), scene \(scenes.count)"
                let fields = string(element["sceneId"], "sceneId", in: where_).flatMap { id in
                    string(element["name"], "name", in: where_).map { (id, $0) }
                }
                switch fields {
                case .success(let (id, name)):
                    guard let enabled = element["enable"]?.boolValue else {
                        return .failure(PayloadProblem("\(where_): \"enable\" must be a boolean"))
                    }
                    scenes.append(WidgetCatalogScene(sceneId: id, name: name, enabled: enabled))
                case .failure(let problem):
                    return .failure(problem)
                }
            }
            return .success(WidgetScenePage(total: total, pageNo: pageNo, pageSize: pageSize, scenes: scenes))
        }
    }

    /// `scene/fire`'s data: `null`, `{}`, or `{"skipped":[iotId…]}`.
    static func decodeFire(_ data: WidgetJSON) -> Result<[String], PayloadProblem> {
        switch data {
        case .null:
            return .success([])
        case .object(let members):
            guard let skipped = members["skipped"] else { return .success([]) }
            guard let list = skipped.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                return .failure(PayloadProblem("the scene fire response: \"skipped\" must be an array of device ids, found \(skipped.text)"))
            }
            return .success(list.compactMap(\.stringValue))
        default:
            return .failure(PayloadProblem("the scene fire response: \"data\" must be null or an object, found a \(data.typeName)"))
        }
    }
}
