import MonkeyCTrace
@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import MonkeyC
import ReplayKit
import BehaviourTrace
import Testing

@Suite struct MessagingAPICallTests {
    static let app = "0180E520-5F7E-11E4-9803-0800200C9A66"
    static let device = "7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0"

    static let calls: [MessagingAPICall] = [
        .deviceList(url: "x://device-select-resp?d0ID=\(device)"),
        .bindDevice(device: device, peer: "F0:F0:F0:F0:F0:F0"),
        .bluetoothState(ready: true),
        .registerDevice(device: device),
        .unregisterDevice(device: device),
        .unregisterAllDevices,
        .registerApp(app: app, device: device, listener: 2),
        .unregisterApp(app: app, device: device, listener: 2),
        .appStatus(app: app, device: device),
        .send(app: app, device: device, message: .array([.string("hello pi"), .double(3.14159)])),
        .openApp(app: app, device: device),
    ]

    @Test(arguments: calls) func recordReadsBackAsTheSameCall(_ call: MessagingAPICall) throws {
        #expect(try MessagingAPICall(record: call.record) == call)
    }

    @Test func recordJSONIsOneObjectWithTheCore() throws {
        let json = MessagingAPICall.appStatus(app: Self.app, device: Self.device).recordJSON
        let members = try JSONLiteral.parseObject(Array(json.utf8), label: "test")
        #expect(members["core"] == .string("messaging"))
        #expect(members["call"] == .string("app_status"))
    }

    @Test func deviceDefaultsToTheOnlyDevice() throws {
        let call = try MessagingAPICall(record: ["call": .string("open_app"), "app": .string(Self.app)], defaultDevice: Self.device)
        #expect(call == .openApp(app: Self.app, device: Self.device))
    }

    @Test func missingKeyIsNamed() {
        #expect(throws: MessagingAPICallError.missing("app", call: "send")) {
            try MessagingAPICall(record: ["call": .string("send"), "device": .string(Self.device), "message": .int(1)])
        }
    }

    @Test func unknownCallIsRefused() {
        #expect(throws: MessagingAPICallError.unknownCall("reboot")) { try MessagingAPICall(record: ["call": .string("reboot")]) }
    }

    @Test func specialFormsRoundTrip() throws {
        let value = MonkeyCValue.dictionary([
            MonkeyCPair(.string("f"), .float32(1.5)), MonkeyCPair(.string("big"), .int64(3)),
            MonkeyCPair(.string("c"), .char(65)), MonkeyCPair(.string("b"), .byteArray([0, 255])),
        ])
        #expect(try MonkeyCJSON.monkeyCValue(MonkeyCJSON.traceValue(value)) == .dictionary([
            MonkeyCPair(.string("b"), .byteArray([0, 255])), MonkeyCPair(.string("big"), .int64(3)),
            MonkeyCPair(.string("c"), .char(65)), MonkeyCPair(.string("f"), .float32(1.5)),
        ]))
    }

    @Test func nonStringKeysUsePairs() throws {
        let value = MonkeyCValue.dictionary([MonkeyCPair(.int32(1), .string("one"))])
        let json = MonkeyCJSON.traceValue(value)
        #expect(json == .object(["$pairs": .array([.array([.int(1), .string("one")])])]))
        #expect(try MonkeyCJSON.monkeyCValue(json) == value)
    }

    @Test func integersTooBigForInt32BecomeInt64() throws {
        #expect(try MonkeyCJSON.monkeyCValue(.int(5_000_000_000)) == .int64(5_000_000_000))
        #expect(try MonkeyCJSON.monkeyCValue(.int(7)) == .int32(7))
    }

    @Test func badSpecialFormIsAnError() {
        #expect(throws: MonkeyCJSONError.self) { try MonkeyCJSON.monkeyCValue(.object(["$bytes": .string("abc")])) }
        #expect(throws: MonkeyCJSONError.self) { try MonkeyCJSON.monkeyCValue(.object(["$nope": .int(1)])) }
    }
}

extension MessagingAPICall: CustomTestStringConvertible {
    public var testDescription: String { name }
}
