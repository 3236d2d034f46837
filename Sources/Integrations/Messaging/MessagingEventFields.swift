import BehaviourTrace
import MessagingCore

/// The fields of the core's events about one send or one message (`progress`, `completion`,
/// `message_received`), held as the core's own values rather than a dictionary of texts: a
/// Connect IQ hour writes one of these for nearly every packet the app sends or receives, and
/// each used to build a dictionary and render two UUIDs as text whether or not anything read them.
///
/// The trace line is unchanged: ``TracePayload`` writes these fields as the same dictionary would
/// be written (keys in order), and an event holding them equals the event read back from a
/// baseline, field by field. The UUIDs become text only when a field is read or written.
struct MessagingAppEventFields: TracePayload {
    /// What the event says beyond the app it is about.
    enum Detail: Sendable, Hashable {
        /// `progress`: `send`, `sent` of `total`.
        case progress(send: SendID, sent: Int, total: Int)
        /// `completion`: `send` and its `result`.
        case completion(send: SendID, result: IQSendMessageResult)
        /// `message_received`: `listener` and the message's `value`.
        case messageReceived(listener: ListenerID, value: TraceValue)
    }

    /// The app (and through it the device) the event is about.
    var app: IQApp
    /// The event's own fields.
    var detail: Detail

    /// `app`, `device` and the detail's fields.
    var fieldCount: Int {
        switch detail {
        case .progress: 5
        case .completion, .messageReceived: 4
        }
    }

    func field(_ key: String) -> TraceValue? {
        switch key {
        case "app": return .string(app.uuid.description)
        case "device": return .string(app.device.description)
        default: break
        }
        switch detail {
        case let .progress(send, sent, total):
            switch key {
            case "send": return .int(Int64(send.rawValue))
            case "sent": return .int(Int64(sent))
            case "total": return .int(Int64(total))
            default: return nil
            }
        case let .completion(send, result):
            switch key {
            case "send": return .int(Int64(send.rawValue))
            case "result": return .string(result.name)
            default: return nil
            }
        case let .messageReceived(listener, value):
            switch key {
            case "listener": return .int(Int64(listener.rawValue))
            case "value": return value
            default: return nil
            }
        }
    }

    /// Keys in ascending order: `app` and `device` come before every detail key.
    func forEachField(_ body: (String, TraceValue) -> Void) {
        body("app", .string(app.uuid.description))
        body("device", .string(app.device.description))
        switch detail {
        case let .progress(send, sent, total):
            body("send", .int(Int64(send.rawValue)))
            body("sent", .int(Int64(sent)))
            body("total", .int(Int64(total)))
        case let .completion(send, result):
            body("result", .string(result.name))
            body("send", .int(Int64(send.rawValue)))
        case let .messageReceived(listener, value):
            body("listener", .int(Int64(listener.rawValue)))
            body("value", value)
        }
    }
}
