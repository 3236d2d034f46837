import Foundation
import Testing
import TetherTestSupport

/// Real BLE traffic from two Bumble devices (Harness/rigs/bumble_gatt_exchange.py): Tether's ATT
/// list for the btsnoop file equals tshark's.
@Suite struct BumbleATTTests {
    /// One ATT PDU as a row of the comparison.
    struct ATTRow: Equatable, CustomStringConvertible {
        var frame: Int
        var opcode: Int
        var handle: Int?
        var description: String { "frame \(frame) opcode 0x\(String(opcode, radix: 16)) handle \(handle.map { "0x" + String($0, radix: 16) } ?? "-")" }
    }

    /// Opcodes whose PDU carries exactly one attribute handle (Core Spec Vol 3 Part F §3.4), plus the
    /// Read Response, which both tools attribute to its request's handle. Others (discovery
    /// requests and responses, MTU exchange, write response) are compared by opcode only, because
    /// their "handle" is a range or list or absent, and tools show those differently.
    static let singleHandleOpcodes: Set<Int> = [0x0A, 0x0B, 0x0C, 0x12, 0x16, 0x1B, 0x1D, 0x52, 0xD2]

    static func parseHex(_ text: Substring) -> Int? {
        let trimmed = text.hasPrefix("0x") ? text.dropFirst(2) : text
        return Int(trimmed, radix: 16)
    }

    /// tshark's ATT rows: one per ATT PDU.
    static func tsharkRows(_ file: URL) throws -> [ATTRow] {
        let rows = try Tools.tsharkFields(file, filter: "btatt", fields: ["frame.number", "btatt.opcode", "btatt.handle"])
        var result: [ATTRow] = []
        for row in rows {
            guard let frame = Int(row[0]) else { continue }
            let opcodes = row.count > 1 ? row[1].split(separator: ",").compactMap(parseHex) : []
            let handles = row.count > 2 ? row[2].split(separator: ",").compactMap(parseHex) : []
            for opcode in opcodes {
                result.append(ATTRow(frame: frame, opcode: opcode, handle: singleHandleOpcodes.contains(opcode) ? handles.first : nil))
            }
        }
        return result
    }

    /// Tether's ATT rows, from `tether inspect FILE --frames --json`.
    static func tetherRows(_ file: URL) throws -> [ATTRow] {
        let result = try Tools.tetherSucceeds(["inspect", file.path, "--frames", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdoutBytes) as? [String: Any])
        let frames = try #require(json["frame_list"] as? [[String: Any]])
        var rows: [ATTRow] = []
        for frame in frames {
            guard let all = frame["att_all"] as? [[String: Any]], let number = frame["number"] as? Int else { continue }
            for att in all {
                let opcode = try #require(att["opcode"] as? Int)
                rows.append(ATTRow(frame: number, opcode: opcode, handle: singleHandleOpcodes.contains(opcode) ? att["handle"] as? Int : nil))
            }
        }
        return rows
    }

    @Test(arguments: ["phone", "watch"])
    func tetherATTListEqualsTsharks(side: String) throws {
        let folder = try TemporaryFolder("cli-tests")
        let phone = try Tools.bumbleCapture(in: folder)
        let file = side == "phone" ? phone : folder.path("watch.btsnoop")
        let expected = try Self.tsharkRows(file)
        // The exchange has MTU, discovery, read, three writes, subscribe and three notifications.
        try #require(expected.count >= 20, "tshark found only \(expected.count) ATT PDUs in \(file.path)")
        let actual = try Self.tetherRows(file)
        #expect(actual == expected, "Tether and tshark differ:\n\(Self.difference(actual, expected))")
    }

    @Test func aFragmentedATTPDUBelongsToTheFrameThatCompletesIt() throws {
        let folder = try TemporaryFolder("cli-tests")
        let phone = try Tools.bumbleCapture(in: folder)
        // On the phone side the 200-byte Write Request leaves the host in 27-byte ACL fragments.
        let result = try Tools.tetherSucceeds(["inspect", phone.path, "--frames", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdoutBytes) as? [String: Any])
        let frames = try #require(json["frame_list"] as? [[String: Any]])
        let longWrites = frames.filter { frame in
            guard let att = frame["att"] as? [String: Any] else { return false }
            return att["opcode"] as? Int == 0x12 && (att["value"] as? String)?.count == 400
        }
        let longWrite = try #require(longWrites.first, "no 200-byte Write Request found")
        let number = try #require(longWrite["number"] as? Int)
        let tsharkFrames = try Tools.tsharkFields(phone, filter: "btatt.opcode == 0x12 && btatt.value", fields: ["frame.number", "btatt.value"])
        let tsharkLong = tsharkFrames.first { $0.count > 1 && $0[1].count == 400 }
        #expect(tsharkLong?.first == String(number), "Tether puts the long write on frame \(number), tshark on \(tsharkLong?.first ?? "none")")
        // The fragments before it carry no ATT PDU of their own.
        let previous = frames.first { $0["number"] as? Int == number - 1 }
        #expect(previous?["att"] == nil, "frame \(number - 1), a fragment, should not complete an ATT PDU")
    }

    static func difference(_ actual: [ATTRow], _ expected: [ATTRow]) -> String {
        var lines: [String] = []
        for index in 0..<max(actual.count, expected.count) {
            let a = index < actual.count ? actual[index].description : "(none)"
            let e = index < expected.count ? expected[index].description : "(none)"
            if a != e { lines.append("  #\(index): tether \(a) | tshark \(e)") }
            if lines.count >= 20 { break }
        }
        return lines.joined(separator: "\n")
    }
}
