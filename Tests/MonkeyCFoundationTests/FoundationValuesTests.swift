import Foundation
import MonkeyC
import MonkeyCFoundation
import Testing

@Suite struct FoundationValuesTests {
    @Test func anNSNumberHoldingABoolStaysABoolAndOneHoldingOneStaysANumber() throws {
        #expect(try FoundationValues.monkeyC(NSNumber(value: true), rules: .connectIQ, path: "m") == .bool(true))
        #expect(try FoundationValues.monkeyC(NSNumber(value: 1), rules: .connectIQ, path: "m") == .int32(1))
        #expect(try FoundationValues.monkeyC(NSNumber(value: 2.5), rules: .connectIQ, path: "m") == .double(2.5))
    }

    @Test func dictionaryKeysAreSortedWhateverTheHashSeed() throws {
        let value = try FoundationValues.monkeyC(["b": 2, "a": 1, "c": 3] as [String: Any], rules: .propertyList, path: "p")
        #expect(value == .dictionary([MonkeyCPair("a", 1), MonkeyCPair("b", 2), MonkeyCPair("c", 3)]))
    }

    @Test func dataTravelsInAPropertyListAndIsRefusedInAConnectIQMessage() throws {
        #expect(try FoundationValues.monkeyC(Data([1, 2]), rules: .propertyList, path: "p") == .byteArray([1, 2]))
        #expect(throws: UnsupportedValue.self) { try FoundationValues.monkeyC(Data([1, 2]), rules: .connectIQ, path: "m") }
    }

    @Test func nullTravelsInAConnectIQMessageAndIsRefusedInAPropertyList() throws {
        #expect(try FoundationValues.monkeyC(NSNull(), rules: .connectIQ, path: "m") == .null)
        do {
            _ = try FoundationValues.monkeyC(["gone": NSNull()] as [String: Any], rules: .propertyList, path: "payload")
            Issue.record("NSNull is not a property-list type")
        } catch {
            #expect(error.description.hasPrefix("payload[\"gone\"] is a NSNull"), "\(error.description)")
        }
    }

    @Test func aUInt64BeyondInt64MaxIsRefusedNamingItsPath() {
        do {
            _ = try FoundationValues.monkeyC([UInt64.max] as [Any], rules: .connectIQ, path: "message")
            Issue.record("no Monkey C type holds it")
        } catch {
            #expect(error.description.contains("message[0] is 18446744073709551615"), "\(error.description)")
        }
    }

    @Test func aReceivedDictionaryWithANumberKeyKeepsItForConnectIQAndReportsItForAPropertyList() {
        let pairs = [MonkeyCPair(.int32(1), "one")]
        var problems: [String] = []
        let connectIQ = FoundationValues.dictionary(pairs, rules: .connectIQ, problems: &problems)
        #expect((connectIQ as? [AnyHashable: Any])?[1] as? String == "one")
        #expect(problems.isEmpty)
        let propertyList = FoundationValues.dictionary(pairs, rules: .propertyList, problems: &problems)
        #expect((propertyList as? [String: Any])?["1"] as? String == "one")
        #expect(problems.count == 1)
    }
}
