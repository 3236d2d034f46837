import IngestCore
@testable import IngestLive
import Testing

@testable import IngestIntegration
import LiveHosts

@Suite struct PluginTrafficGeneratorTests {
    @Test func sameSeedGivesTheSameSchedule() {
        let config = PluginTrafficConfiguration(duration: .seconds(3), payloadKind: .mixed, seed: 42, faults: [.notJSON, .oversize, .stall(.seconds(2))])
        let first = PluginTrafficGenerator(configuration: config).schedule()
        let second = PluginTrafficGenerator(configuration: config).schedule()
        #expect(first == second)
        #expect(!first.isEmpty)
    }

    @Test func differentSeedsGiveDifferentValues() {
        let a = PluginTrafficGenerator(configuration: .init(duration: .seconds(1), seed: 1)).schedule()
        let b = PluginTrafficGenerator(configuration: .init(duration: .seconds(1), seed: 2)).schedule()
        #expect(a.map(\.bytes) != b.map(\.bytes))
        #expect(a.map(\.offset) == b.map(\.offset))
    }

    @Test func sendsRateTimesDurationDataMessagesEachWithTheSampleSixEntries() {
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 20, duration: .seconds(5))).schedule()
        let data = schedule.filter { if case .data = $0.kind { true } else { false } }
        #expect(data.count == 100)
        #expect(data[1].offset == .milliseconds(50))
        for datagram in data {
            #expect(datagram.entries.map(\.name) == ["v1/1/yaw", "v1/1/pitch", "v1/1/roll", "v1/1/x", "v1/1/y", "v1/1/z"])
            #expect(datagram.entries.allSatisfy { $0.type == "float64" && $0.payload.count == 8 })
        }
    }

    @Test func nameEveryTenSecondsFromTenSecondsAndEndAtTheEnd() {
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 2, duration: .seconds(25), pluginName: "Sim")).schedule()
        let names = schedule.filter { $0.kind == .name }
        #expect(names.map(\.offset) == [.seconds(10), .seconds(20)])
        #expect(String(decoding: names[0].bytes, as: UTF8.self) == "{\n  \"name\" : \"Sim\"\n}")
        #expect(schedule.last?.kind == .end)
        #expect(schedule.last?.offset == .seconds(25))
        #expect(String(decoding: schedule.last?.bytes ?? [], as: UTF8.self) == "{\n  \"end\" : \"true\"\n}")
    }

    @Test func dataMessageIsPrettyPrintedWithSevenDigitTime() throws {
        let config = PluginTrafficConfiguration(rate: 10, duration: .seconds(1), startWallClockNs: 1_674_790_238_123_456_789)
        let first = try #require(PluginTrafficGenerator(configuration: config).schedule().first)
        let text = String(decoding: first.bytes, as: UTF8.self)
        #expect(text.hasPrefix("{\n  \"t\" : \"1674790238.1234567\",\n  \"d\" : [\n    {\n      \"n\" : \"v1/1/yaw\",\n      \"t\" : \"float64\",\n      \"p\" : \""))
        #expect(text.hasSuffix("\"\n    }\n  ]\n}"))
        #expect(first.sampleTimeNs == 1_674_790_238_123_456_700)
    }

    @Test func sampleTimeStringPadsTheFraction() {
        #expect(PluginTrafficGenerator.sampleTimeString(1_700_000_000_000_000_500) == "1700000000.0000005")
        #expect(PluginTrafficGenerator.sampleTimeString(1_700_000_000_999_999_999) == "1700000000.9999999")
    }

    @Test func payloadsEncodeTheirValuesAsIngestCoreDecodesThem() throws {
        for kind in SimulatedPayloadKind.allCases {
            let schedule = PluginTrafficGenerator(configuration: .init(rate: 5, duration: .seconds(1), payloadKind: kind)).schedule()
            // No entries would leave nothing to check.
            #expect(schedule.flatMap(\.entries).count >= 5 * 6, "\(kind)")
            for entry in schedule.flatMap(\.entries) {
                #expect(try DataValue.decode(type: entry.type, payload: entry.payload) == entry.value, "\(kind) \(entry.name)")
            }
        }
    }

    @Test func float64PayloadMatchesTheSpecificationVector() {
        #expect(Base64Text.encode(PluginTrafficGenerator.bigEndian((123.456).bitPattern)) == "QF7dLxqfvnc=")
        #expect(Base64Text.encode(PluginTrafficGenerator.bigEndian(UInt64(42))) == "AAAAAAAAACo=")
        #expect(Base64Text.encode(Array("ab".utf8)) == "YWI=")
        #expect(Base64Text.encode(Array("a".utf8)) == "YQ==")
    }

    @Test func faultsAreInsertedBetweenDataMessagesWithoutReplacingAny() {
        let faults: [TrafficFault] = [.notJSON, .badBase64, .oversize, .wrongPayloadLength, .missingFields, .timeBackwards]
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 10, duration: .seconds(2), seed: 7, faults: faults)).schedule()
        let data = schedule.filter { if case .data = $0.kind { true } else { false } }
        #expect(data.count == 20)
        let injected = schedule.compactMap { if case .fault(let f) = $0.kind { f } else { nil } }
        #expect(Set(injected) == Set(faults))
        #expect(schedule.first { $0.kind == .fault(.oversize) }?.bytes.count == 10_000)
        #expect(schedule.filter(\.isMalformed).count == 5)
        if case .data = schedule.first?.kind {} else { Issue.record("a fault came before the first data message") }
    }

    @Test func stallShiftsEverythingAfterIt() {
        let plain = PluginTrafficGenerator(configuration: .init(rate: 10, duration: .seconds(2), seed: 3)).schedule()
        let stalled = PluginTrafficGenerator(configuration: .init(rate: 10, duration: .seconds(2), seed: 3, faults: [.stall(.seconds(5))])).schedule()
        #expect(plain.count == stalled.count)
        #expect(stalled.last?.offset == .seconds(7))
        let jumps = zip(stalled.dropFirst(), stalled).filter { $0.0.offset - $0.1.offset >= .seconds(5) }
        #expect(jumps.count == 1)
    }
}
