/// What the syntax pass found: the members that matter, unvalidated.
struct MessageShape {
    /// The value of a member that the message needs, or why it cannot be used.
    enum Member {
        case absent
        case string(JSONString)
        /// Present with another JSON type.
        case other(JSONType)
    }

    struct EntryShape {
        var offset: Int
        var name: Member = .absent
        var type: Member = .absent
        var payload: Member = .absent
        /// Set when the element of `d` is not an object.
        var notAnObject: JSONType?
    }

    enum DataMember {
        case absent
        case legacy(JSONString)
        case entries([EntryShape])
        case other(JSONType)
    }

    var time: Member = .absent
    var data: DataMember = .absent
    var name: Member = .absent
    var end: Member = .absent

    typealias Rejection = MotionMessage.Rejection

    func validate(_ buffer: JSONText, texts: inout EntryTextCache) throws(Rejection) -> MotionMessage {
        let kindCount = (dataIsPresent ? 1 : 0) + (name.isPresent ? 1 : 0) + (end.isPresent ? 1 : 0)
        guard kindCount <= 1 else {
            let kinds = [dataIsPresent ? "d" : nil, name.isPresent ? "name" : nil, end.isPresent ? "end" : nil].compactMap { $0 }
            throw Rejection(reason: .unknownMessage, detail: "members \(kinds.joined(separator: ", ")) in one message; a message carries exactly one of d, name, end")
        }
        switch data {
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "\"d\" is \(type); expected an array of entries (or a base64 string from a Motion V1 sender)")
        case .legacy(let payloadText):
            let timeNs: Int64?
            switch time {
            case .absent: timeNs = nil
            case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"t\" is \(type); expected a decimal string of seconds")
            case .string(let text): timeNs = try Self.parseTime(text, buffer)
            }
            let payload = try Self.decodeBase64(payloadText, buffer, what: "\"d\" (Motion V1 payload)")
            return .legacyV1(timeNs: timeNs, payload: payload)
        case .entries(let entryShapes):
            let timeText: JSONString
            switch time {
            case .absent: throw Rejection(reason: .missingField, detail: "a data message needs \"t\", the sample time")
            case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"t\" is \(type); expected a decimal string of seconds, e.g. \"1674790238.1234567\"")
            case .string(let text): timeText = text
            }
            guard !entryShapes.isEmpty else {
                throw Rejection(reason: .missingField, detail: "\"d\" is empty; a data message carries one or more entries")
            }
            // Shape problems of every entry come before content problems, as documented above.
            for (index, entry) in entryShapes.enumerated() {
                if let type = entry.notAnObject {
                    throw Rejection(reason: .wrongFieldType, detail: "entry \(index) of \"d\" (byte \(entry.offset)) is \(type); expected an object {\"n\", \"t\", \"p\"}")
                }
                try Self.checkEntryMember(entry.name, key: "n", index: index, offset: entry.offset)
                try Self.checkEntryMember(entry.type, key: "t", index: index, offset: entry.offset)
                try Self.checkEntryMember(entry.payload, key: "p", index: index, offset: entry.offset)
            }
            let timeNs = try Self.parseTime(timeText, buffer)
            var entries: [MotionMessage.Entry] = []
            entries.reserveCapacity(entryShapes.count)
            for (index, entry) in entryShapes.enumerated() {
                guard case .string(let nameText) = entry.name, case .string(let typeText) = entry.type,
                      case .string(let payloadText) = entry.payload
                else {
                    preconditionFailure("MessageShape: entry \(index) passed the shape check without three strings")
                }
                let type = typeText.withBytes(in: buffer) { texts.string($0, slot: 2 * index + 1) }
                let payload = try Self.decodeBase64(payloadText, buffer, what: "entry \(index) of \"d\" (byte \(entry.offset))")
                let value: DataValue
                do throws(PayloadDecodingError) {
                    value = try DataValue.decode(type: type, payload: payload)
                } catch {
                    throw Rejection(reason: error.reason, detail: "entry \(index) of \"d\" (byte \(entry.offset)): \(error)")
                }
                let name = nameText.withBytes(in: buffer) { texts.string($0, slot: 2 * index) }
                entries.append(MotionMessage.Entry(name: name, type: type, payload: payload, value: value))
            }
            return .data(timeNs: timeNs, entries: entries)
        case .absent:
            break
        }
        switch name {
        case .string(let text): return .pluginName(text.string(in: buffer))
        case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"name\" is \(type); expected a string")
        case .absent: break
        }
        switch end {
        case .string(let text):
            let isTrue = text.withBytes(in: buffer) { $0.elementsEqual("true".utf8) }
            guard isTrue else {
                throw Rejection(reason: .wrongFieldType, detail: "\"end\" is \(text.excerpt(in: buffer)); expected the string \"true\"")
            }
            return .end
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "\"end\" is \(type); expected the string \"true\"")
        case .absent:
            break
        }
        throw Rejection(reason: .unknownMessage, detail: "an object without \"d\", \"name\" or \"end\"; not a Motion plugin message")
    }

    private var dataIsPresent: Bool {
        if case .absent = data { return false }
        return true
    }

    private static func parseTime(_ text: JSONString, _ buffer: JSONText) throws(Rejection) -> Int64 {
        let result = text.withBytes(in: buffer) { SampleTime.parseNanoseconds($0) }
        switch result {
        case .success(let ns): return ns
        case .failure(let failure):
            throw Rejection(reason: .badTime, detail: "\"t\" = \(text.excerpt(in: buffer)), character \(failure.offset): expected \(failure.expected)")
        }
    }

    private static func checkEntryMember(_ member: Member, key: StaticString, index: Int, offset: Int) throws(Rejection) {
        switch member {
        case .absent:
            throw Rejection(reason: .missingField, detail: "entry \(index) of \"d\" (byte \(offset)) has no \"\(key)\"")
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "entry \(index) of \"d\" (byte \(offset)): \"\(key)\" is \(type); expected a string")
        case .string:
            return
        }
    }

    /// `what` is only built when decoding fails: it is on the hot path.
    private static func decodeBase64(_ text: JSONString, _ buffer: JSONText, what: @autoclosure () -> String) throws(Rejection) -> [UInt8] {
        let result = text.withBytes(in: buffer) { Base64.decode($0) }
        switch result {
        case .success(let bytes): return bytes
        case .failure(let failure):
            throw Rejection(reason: .badBase64, detail: "\(what()), base64 character \(failure.offset): expected \(failure.expected)")
        }
    }
}

extension MessageShape.Member {
    var isPresent: Bool {
        if case .absent = self { return false }
        return true
    }
}
