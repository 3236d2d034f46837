import CaptureKit
import Foundation
import Testing
import TetherTestSupport
@testable import Redaction

/// A capture built in the test, byte by byte from Bluetooth Core 5.4 Vol 4 Part E §7 and the
/// advertising data types of Assigned Numbers (not from the tables under test): every HCI command,
/// return parameter, event and LE subevent parameter that holds an address, a name, a key, a PIN,
/// a passkey or advertising/EIR data, each with a value of its own, so a parameter redaction does
/// not know leaves its value behind.
struct GeneratedCapture {
    /// Every original value put in the capture, with the parameter it stands for.
    var addresses: [(String, [UInt8])] = []
    var keys: [(String, [UInt8])] = []
    var names: [(String, [UInt8])] = []
    var pins: [(String, [UInt8])] = []
    var passkeys: [(String, [UInt8])] = []
    /// H4 frames with the pseudo-header (direction, then the H4 packet), in order.
    var frames: [[UInt8]] = []
    /// Linux monitor frames.
    var monitorFrames: [[UInt8]] = []
    private var counter = 0

    private mutating func next() -> Int {
        counter += 1
        return counter
    }

    mutating func address(_ what: String) -> [UInt8] {
        let n = next()
        let low = UInt8(n & 0xFF), high = UInt8((n >> 8) & 0xFF)
        let value: [UInt8] = [low, 0xA7 ^ high, 0x3B, 0x5E, 0x92, 0xC0 | (low & 0x3F)]
        addresses.append((what, value))
        return value
    }

    mutating func key(_ what: String, _ size: Int = 16) -> [UInt8] {
        let n = next()
        let low = UInt8(n & 0xFF), high = UInt8((n >> 8) & 0xFF)
        let value: [UInt8] = (0..<size).map { UInt8(truncatingIfNeeded: 0x9D &+ $0 &* 7) ^ ($0 % 2 == 0 ? low : high &+ 0x55) }
        keys.append((what, value))
        return value
    }

    mutating func name(_ what: String) -> [UInt8] {
        let value = Array("Kai's Phone \(next())".utf8)
        names.append((what, value))
        return value
    }

    mutating func pin(_ what: String) -> [UInt8] {
        let value = Array("739\(100 + Int(next()))".utf8)
        pins.append((what, value))
        return value
    }

    mutating func passkey(_ what: String) -> [UInt8] {
        let number = 400_000 + Int(next()) * 1_111
        let value: [UInt8] = [UInt8(number & 0xFF), UInt8((number >> 8) & 0xFF), UInt8((number >> 16) & 0xFF), 0]
        passkeys.append((what, value))
        return value
    }

    /// An AD structure (Vol 3 Part C §11): length, type, data.
    static func ad(_ type: UInt8, _ data: [UInt8]) -> [UInt8] { [UInt8(data.count + 1), type] + data }

    /// Legacy advertising data (at most 31 octets): flags, a Complete Local Name, an LE
    /// Bluetooth Device Address.
    mutating func legacyAdvertisingData(_ what: String) -> [UInt8] {
        Self.ad(0x01, [0x06]) + Self.ad(0x09, name("\(what) AD 0x09")) + Self.ad(0x1B, address("\(what) AD 0x1B") + [0x01])
    }

    /// Extended advertising data: names, target addresses, a device address and a Broadcast Code.
    mutating func advertisingData(_ what: String) -> [UInt8] {
        var data = Self.ad(0x01, [0x06])
        data += Self.ad(0x09, name("\(what) AD 0x09"))
        data += Self.ad(0x17, address("\(what) AD 0x17 #1") + address("\(what) AD 0x17 #2"))
        data += Self.ad(0x1B, address("\(what) AD 0x1B") + [0x01])
        data += Self.ad(0x2D, key("\(what) AD 0x2D Broadcast_Code"))
        return data
    }

    /// EIR data (Vol 3 Part C §8): AD structures, zero padded to 240 octets.
    mutating func eir(_ what: String) -> [UInt8] {
        var data = Self.ad(0x08, name("\(what) EIR 0x08"))
        data += Self.ad(0x0E, key("\(what) EIR 0x0E C-192"))
        data += Self.ad(0x0F, key("\(what) EIR 0x0F R-192"))
        data += Self.ad(0x18, address("\(what) EIR 0x18"))
        return data + [UInt8](repeating: 0, count: 240 - data.count)
    }

    /// The AD types no other packet carries, in a scan response.
    mutating func moreAdvertisingData(_ what: String) -> [UInt8] {
        var data = Self.ad(0x10, key("\(what) AD 0x10 TK"))
        data += Self.ad(0x1D, key("\(what) AD 0x1D C-256"))
        data += Self.ad(0x1E, key("\(what) AD 0x1E R-256"))
        data += Self.ad(0x22, key("\(what) AD 0x22 confirmation"))
        data += Self.ad(0x23, key("\(what) AD 0x23 random"))
        data += Self.ad(0x2E, address("\(what) AD 0x2E RSI"))
        data += Self.ad(0x30, name("\(what) AD 0x30 Broadcast_Name"))
        return data
    }

    /// A name in a 248-octet field, NUL padded.
    mutating func name248(_ what: String) -> [UInt8] {
        let value = name(what)
        return value + [UInt8](repeating: 0, count: 248 - value.count)
    }

    mutating func command(_ opcode: UInt16, _ parameters: [UInt8]) {
        frames.append([0, 0, 0, 0, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(parameters.count)] + parameters)
    }

    mutating func event(_ code: UInt8, _ parameters: [UInt8]) {
        frames.append([0, 0, 0, 1, 0x04, code, UInt8(parameters.count)] + parameters)
    }

    mutating func commandComplete(_ opcode: UInt16, _ returned: [UInt8]) {
        event(0x0E, [1, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returned)
    }

    mutating func leEvent(_ subevent: UInt8, _ parameters: [UInt8]) { event(0x3E, [subevent] + parameters) }

    /// An SMP PDU in one ACL packet on L2CAP channel `cid`.
    mutating func smp(_ cid: UInt8, _ pdu: [UInt8]) {
        let l2cap: [UInt8] = [UInt8(pdu.count), 0, cid, 0] + pdu
        frames.append([0, 0, 0, 1, 0x02, 0x40, 0x20, UInt8(l2cap.count), 0] + l2cap)
    }

    /// Every packet.
    static func make() -> GeneratedCapture {
        var g = GeneratedCapture()
        let cod: [UInt8] = [0x0C, 0x02, 0x5A]
        // §7.1 Link Control commands: BD_ADDR first unless said otherwise.
        for (opcode, name) in [
            (UInt16(0x0405), "Create_Connection"), (0x0408, "Create_Connection_Cancel"), (0x0409, "Accept_Connection_Request"),
            (0x040A, "Reject_Connection_Request"), (0x040C, "Link_Key_Request_Negative_Reply"), (0x040E, "PIN_Code_Request_Negative_Reply"),
            (0x0419, "Remote_Name_Request"), (0x041A, "Remote_Name_Request_Cancel"), (0x0429, "Accept_Synchronous_Connection_Request"),
            (0x042A, "Reject_Synchronous_Connection_Request"), (0x042B, "IO_Capability_Request_Reply"),
            (0x042C, "User_Confirmation_Request_Reply"), (0x042D, "User_Confirmation_Request_Negative_Reply"),
            (0x042F, "User_Passkey_Request_Negative_Reply"), (0x0433, "Remote_OOB_Data_Request_Negative_Reply"),
            (0x0434, "IO_Capability_Request_Negative_Reply"), (0x043D, "Enhanced_Accept_Synchronous_Connection_Request"),
            (0x043F, "Truncated_Page"), (0x0440, "Truncated_Page_Cancel"), (0x0444, "Receive_Synchronization_Train"),
            (0x0460, "Send_Keypress_Notification"), (0x080B, "Switch_Role"), (0x0C0D, "Read_Stored_Link_Key"),
            (0x0C12, "Delete_Stored_Link_Key"),
        ] {
            g.command(opcode, g.address(name) + [0x01, 0x02, 0x00, 0x00])
        }
        g.command(0x040B, g.address("Link_Key_Request_Reply") + g.key("Link_Key_Request_Reply Link_Key"))
        let pin = g.pin("PIN_Code_Request_Reply PIN_Code")
        g.command(0x040D, g.address("PIN_Code_Request_Reply") + [UInt8(pin.count)] + pin + [UInt8](repeating: 0, count: 16 - pin.count))
        g.command(0x042E, g.address("User_Passkey_Request_Reply") + g.passkey("User_Passkey_Request_Reply Numeric_Value"))
        g.command(0x0430, g.address("Remote_OOB_Data_Request_Reply") + g.key("Remote_OOB_Data_Request_Reply C") + g.key("Remote_OOB_Data_Request_Reply R"))
        g.command(0x0442, [0x01] + g.address("Set_Connectionless_Peripheral_Broadcast_Receive") + [0x01, 0, 0])
        g.command(0x0445, g.address("Remote_OOB_Extended_Data_Request_Reply") + g.key("C_192") + g.key("R_192") + g.key("C_256") + g.key("R_256"))
        // §7.3 Controller & Baseband: two keys written at once, the local name, the EIR.
        g.command(0x0C11, [2] + g.address("Write_Stored_Link_Key #1") + g.key("Write_Stored_Link_Key #1")
            + g.address("Write_Stored_Link_Key #2") + g.key("Write_Stored_Link_Key #2"))
        g.command(0x0C13, g.name248("Write_Local_Name"))
        g.command(0x0C52, [0x00] + g.eir("Write_Extended_Inquiry_Response"))
        // §7.8 LE Controller commands.
        g.command(0x2005, g.address("LE_Set_Random_Address"))
        g.command(0x2006, [0xA0, 0, 0xA0, 0, 0x00, 0x01, 0x00] + g.address("LE_Set_Advertising_Parameters Peer_Address") + [0x07, 0x00])
        let ad = g.legacyAdvertisingData("LE_Set_Advertising_Data")
        g.command(0x2008, [UInt8(ad.count)] + ad + [UInt8](repeating: 0, count: 31 - ad.count))
        let scan = GeneratedCapture.ad(0x08, g.name("LE_Set_Scan_Response_Data AD 0x08")) + GeneratedCapture.ad(0x2E, g.address("LE_Set_Scan_Response_Data AD 0x2E"))
        g.command(0x2009, [UInt8(scan.count)] + scan + [UInt8](repeating: 0, count: 31 - scan.count))
        g.command(0x200D, [0x60, 0, 0x60, 0, 0x00, 0x01] + g.address("LE_Create_Connection Peer_Address") + [0x01, 0x18, 0, 0x28, 0, 0, 0, 0x2A, 0, 0, 0, 0, 0])
        g.command(0x2011, [0x01] + g.address("LE_Add_Device_To_Filter_Accept_List"))
        g.command(0x2012, [0x01] + g.address("LE_Remove_Device_From_Filter_Accept_List"))
        g.command(0x2017, g.key("LE_Encrypt Key") + [UInt8](repeating: 0x11, count: 16))
        g.command(0x2019, [0x40, 0x00] + [UInt8](repeating: 0x22, count: 8) + [0x33, 0x44] + g.key("LE_Enable_Encryption Long_Term_Key"))
        g.command(0x201A, [0x40, 0x00] + g.key("LE_Long_Term_Key_Request_Reply Long_Term_Key"))
        g.command(0x2027, [0x01] + g.address("LE_Add_Device_To_Resolving_List") + g.key("Peer_IRK") + g.key("Local_IRK"))
        g.command(0x2028, [0x01] + g.address("LE_Remove_Device_From_Resolving_List"))
        g.command(0x202B, [0x01] + g.address("LE_Read_Peer_Resolvable_Address"))
        g.command(0x202C, [0x01] + g.address("LE_Read_Local_Resolvable_Address"))
        g.command(0x2035, [0x00] + g.address("LE_Set_Advertising_Set_Random_Address"))
        // Advertising_Handle, Advertising_Event_Properties (2), Primary_Advertising_Interval_Min
        // (3), _Max (3), Primary_Advertising_Channel_Map, Own_Address_Type, Peer_Address_Type.
        let extendedParameters: [UInt8] = [0x00, 0x13, 0x00, 0xA0, 0, 0, 0xA0, 0, 0, 0x07, 0x01, 0x00]
        g.command(0x2036, extendedParameters + g.address("LE_Set_Extended_Advertising_Parameters Peer_Address") + [0, 0x7F, 1, 0, 1, 0, 0])
        g.command(0x207F, extendedParameters + g.address("LE_Set_Extended_Advertising_Parameters_V2 Peer_Address") + [0, 0x7F, 1, 0, 1, 0, 0, 1, 1])
        let extendedAD = g.advertisingData("LE_Set_Extended_Advertising_Data")
        g.command(0x2037, [0x00, 0x03, 0x01, UInt8(extendedAD.count)] + extendedAD)
        let extendedScan = g.moreAdvertisingData("LE_Set_Extended_Scan_Response_Data")
        g.command(0x2038, [0x00, 0x03, 0x01, UInt8(extendedScan.count)] + extendedScan)
        let periodic = g.advertisingData("LE_Set_Periodic_Advertising_Data")
        g.command(0x203F, [0x00, 0x03, UInt8(periodic.count)] + periodic)
        g.command(0x2043, [0x00, 0x01, 0x00] + g.address("LE_Extended_Create_Connection Peer_Address") + [0x01])
        g.command(0x2085, [0xFF, 0xFF, 0x00, 0x01, 0x00] + g.address("LE_Extended_Create_Connection_V2 Peer_Address") + [0x01])
        g.command(0x2044, [0x00, 0x01, 0x01] + g.address("LE_Periodic_Advertising_Create_Sync") + [0, 0, 0x64, 0, 0])
        g.command(0x2047, [0x01] + g.address("LE_Add_Device_To_Periodic_Advertiser_List") + [0x01])
        g.command(0x2048, [0x01] + g.address("LE_Remove_Device_From_Periodic_Advertiser_List") + [0x01])
        g.command(0x204E, [0x01] + g.address("LE_Set_Privacy_Mode") + [0x01])

        // §7.7.14 Command Complete return parameters: Status, then the parameters.
        for opcode: UInt16 in [0x0408, 0x040B, 0x040C, 0x040D, 0x040E, 0x041A, 0x042B, 0x042C, 0x042D, 0x042E, 0x042F,
                               0x0430, 0x0433, 0x0434, 0x0440, 0x0442, 0x0445, 0x0460, 0x1009] {
            g.commandComplete(opcode, [0x00] + g.address("Command_Complete 0x" + String(opcode, radix: 16) + " BD_ADDR") + (opcode == 0x0442 ? [0x01] : []))
        }
        g.commandComplete(0x0C14, [0x00] + g.name248("Read_Local_Name"))
        g.commandComplete(0x0C51, [0x00, 0x00] + g.eir("Read_Extended_Inquiry_Response"))
        g.commandComplete(0x0C57, [0x00] + g.key("Read_Local_OOB_Data C") + g.key("Read_Local_OOB_Data R"))
        g.commandComplete(0x0C7D, [0x00] + g.key("Read_Local_OOB_Extended_Data C_192") + g.key("R_192") + g.key("C_256") + g.key("R_256"))
        g.commandComplete(0x202B, [0x00] + g.address("LE_Read_Peer_Resolvable_Address return"))
        g.commandComplete(0x202C, [0x00] + g.address("LE_Read_Local_Resolvable_Address return"))

        // §7.7 events.
        g.event(0x02, [2] + g.address("Inquiry_Result #1") + [1, 0, 0] + cod + [0x34, 0x12]
            + g.address("Inquiry_Result #2") + [1, 0, 0] + cod + [0x35, 0x12])
        g.event(0x03, [0x00, 0x0B, 0x00] + g.address("Connection_Complete") + [0x01, 0x00])
        g.event(0x04, g.address("Connection_Request") + cod + [0x01])
        g.event(0x07, [0x00] + g.address("Remote_Name_Request_Complete") + g.name248("Remote_Name_Request_Complete Remote_Name"))
        g.event(0x12, [0x00] + g.address("Role_Change") + [0x01])
        g.event(0x15, [2] + g.address("Return_Link_Keys #1") + g.key("Return_Link_Keys #1") + g.address("Return_Link_Keys #2") + g.key("Return_Link_Keys #2"))
        g.event(0x16, g.address("PIN_Code_Request"))
        g.event(0x17, g.address("Link_Key_Request"))
        g.event(0x18, g.address("Link_Key_Notification") + g.key("Link_Key_Notification Link_Key") + [0x04])
        g.event(0x20, g.address("Page_Scan_Repetition_Mode_Change") + [0x01])
        g.event(0x22, [2] + g.address("Inquiry_Result_with_RSSI #1") + [1, 0] + cod + [0x34, 0x12, 0xC4]
            + g.address("Inquiry_Result_with_RSSI #2") + [1, 0] + cod + [0x35, 0x12, 0xC5])
        g.event(0x2C, [0x00, 0x0C, 0x00] + g.address("Synchronous_Connection_Complete") + [0x02, 0, 0, 0x3C, 0, 0x3C, 0, 0x03])
        g.event(0x2F, [1] + g.address("Extended_Inquiry_Result") + [1, 0] + cod + [0x34, 0x12, 0xC4] + g.eir("Extended_Inquiry_Result"))
        g.event(0x31, g.address("IO_Capability_Request"))
        g.event(0x32, g.address("IO_Capability_Response") + [0x01, 0x00, 0x03])
        g.event(0x33, g.address("User_Confirmation_Request") + g.passkey("User_Confirmation_Request Numeric_Value"))
        g.event(0x34, g.address("User_Passkey_Request"))
        g.event(0x35, g.address("Remote_OOB_Data_Request"))
        g.event(0x36, [0x00] + g.address("Simple_Pairing_Complete"))
        g.event(0x3B, g.address("User_Passkey_Notification") + g.passkey("User_Passkey_Notification Passkey"))
        g.event(0x3C, g.address("Keypress_Notification") + [0x01])
        g.event(0x3D, g.address("Remote_Host_Supported_Features_Notification") + [UInt8](repeating: 0, count: 8))
        g.event(0x50, [0x00] + g.address("Synchronization_Train_Received") + [UInt8](repeating: 0, count: 20))
        g.event(0x51, g.address("Connectionless_Peripheral_Broadcast_Receive") + [UInt8](repeating: 0, count: 8))
        g.event(0x52, g.address("Connectionless_Peripheral_Broadcast_Timeout") + [0x01])
        g.event(0x53, [0x00] + g.address("Truncated_Page_Complete"))

        // §7.7.65 LE Meta subevents.
        g.leEvent(0x01, [0x00, 0x40, 0x00, 0x00, 0x01] + g.address("LE_Connection_Complete") + [0x18, 0, 0, 0, 0xC8, 0, 0])
        let report1 = g.legacyAdvertisingData("LE_Advertising_Report #1")
        let report2 = g.legacyAdvertisingData("LE_Advertising_Report #2")
        g.leEvent(0x02, [2, 0x00, 0x01] + g.address("LE_Advertising_Report #1") + [UInt8(report1.count)] + report1 + [0xC0]
            + [0x04, 0x00] + g.address("LE_Advertising_Report #2") + [UInt8(report2.count)] + report2 + [0xC1])
        g.leEvent(0x09, [0x00] + g.key("LE_Generate_DHKey_Complete DHKey", 32))
        g.leEvent(0x0A, [0x00, 0x40, 0x00, 0x01, 0x02] + g.address("LE_Enhanced_Connection_Complete Peer_Address")
            + g.address("Local_Resolvable_Private_Address") + g.address("Peer_Resolvable_Private_Address") + [0x18, 0, 0, 0, 0xC8, 0, 0])
        g.leEvent(0x29, [0x00, 0x41, 0x00, 0x01, 0x02] + g.address("LE_Enhanced_Connection_Complete_V2 Peer_Address")
            + g.address("V2 Local_Resolvable_Private_Address") + g.address("V2 Peer_Resolvable_Private_Address") + [0x18, 0, 0, 0, 0xC8, 0, 0, 0xFF, 0xFF, 0xFF])
        g.leEvent(0x0B, [2, 0x01, 0x01] + g.address("LE_Directed_Advertising_Report #1") + [0x01] + g.address("Direct_Address #1") + [0xC0]
            + [0x01, 0x01] + g.address("LE_Directed_Advertising_Report #2") + [0x01] + g.address("Direct_Address #2") + [0xC1])
        let extended1 = g.advertisingData("LE_Extended_Advertising_Report #1")
        let extended2 = g.advertisingData("LE_Extended_Advertising_Report #2")
        g.leEvent(0x0D, [2, 0x13, 0x00, 0x01] + g.address("LE_Extended_Advertising_Report #1") + [1, 0, 0xFF, 0x7F, 0xC0, 0, 0, 0x01]
            + g.address("Extended Direct_Address #1") + [UInt8(extended1.count)] + extended1
            + [0x13, 0x00, 0x01] + g.address("LE_Extended_Advertising_Report #2") + [1, 0, 0xFF, 0x7F, 0xC0, 0, 0, 0x01]
            + g.address("Extended Direct_Address #2") + [UInt8(extended2.count)] + extended2)
        g.leEvent(0x0E, [0x00, 0x01, 0x00, 0x01, 0x01] + g.address("LE_Periodic_Advertising_Sync_Established") + [0x01, 0x50, 0, 0x05])
        g.leEvent(0x24, [0x00, 0x01, 0x00, 0x01, 0x01] + g.address("LE_Periodic_Advertising_Sync_Established_V2") + [0x01, 0x50, 0, 0x05, 0, 0, 0, 0])
        let periodicReport = g.advertisingData("LE_Periodic_Advertising_Report")
        g.leEvent(0x0F, [0x01, 0x00, 0x7F, 0xC0, 0xFF, 0x00, UInt8(periodicReport.count)] + periodicReport)
        let periodicReport2 = g.advertisingData("LE_Periodic_Advertising_Report_V2")
        g.leEvent(0x25, [0x01, 0x00, 0x7F, 0xC0, 0xFF, 0x01, 0x00, 0x00, 0x00, UInt8(periodicReport2.count)] + periodicReport2)
        g.leEvent(0x13, [0x00, 0x01] + g.address("LE_Scan_Request_Received"))
        g.leEvent(0x18, [0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x01] + g.address("LE_Periodic_Advertising_Sync_Transfer_Received") + [0x01, 0x50, 0, 0x05])
        g.leEvent(0x26, [0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x01] + g.address("LE_Periodic_Advertising_Sync_Transfer_Received_V2") + [0x01, 0x50, 0, 0x05, 0, 0, 0, 0])

        // Vol 3 Part H §3.6 SMP key distribution, LE (CID 6) and BR/EDR (CID 7).
        g.smp(0x06, [0x06] + g.key("SMP Encryption Information LTK"))
        g.smp(0x06, [0x08] + g.key("SMP Identity Information IRK"))
        g.smp(0x06, [0x09, 0x00] + g.address("SMP Identity Address Information"))
        g.smp(0x06, [0x0A] + g.key("SMP Signing Information CSRK"))
        g.smp(0x07, [0x08] + g.key("SMP over BR/EDR Identity Information IRK"))

        // Linux monitor: New Index (type, bus, BD_ADDR, name) and Index Info (BD_ADDR, manufacturer).
        g.monitorFrames.append([0x00, 0x00, 0x00, 0x00, 0x00, 0x01] + g.address("monitor New Index") + Array("hci0\0\0\0\0".utf8))
        g.monitorFrames.append([0x00, 0x00, 0x00, 0x0A] + g.address("monitor Index Info") + [0x02, 0x00])
        return g
    }

    static let manifest = """
        schema_version: 1
        title: Generated capture with every address, name, key, PIN and passkey parameter
        recorded_at: '2026-01-01T00:00:00Z'
        tether_version: 0.1.0
        status: complete
        capture_file: capture.pcapng
        interfaces:
        - index: 0
          link_type: 201
          role: ble-hci
        - index: 1
          link_type: 254
          role: ble-hci
        devices: []
        annotations: []
        gatt_handles: []
        expectations: []
        baselines: {}

        """

    /// Writes the set into `folder`.
    func writeSet(to folder: String, extraFrames: [CaptureFrame] = []) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(Self.manifest.utf8).write(to: URL(fileURLWithPath: folder + "/manifest.yaml"))
        let writer = try PcapngWriter(path: folder + "/capture.pcapng")
        _ = try writer.addInterface(CaptureInterface(linkType: .bluetoothHCIH4WithPHDR))
        _ = try writer.addInterface(CaptureInterface(linkType: .bluetoothLinuxMonitor))
        var number = 0
        for data in frames {
            number += 1
            try writer.write(CaptureFrame(number: number, interfaceIndex: 0, timestampNs: Int64(number) * 1_000_000, originalLength: data.count, data: data))
        }
        for data in monitorFrames {
            number += 1
            try writer.write(CaptureFrame(number: number, interfaceIndex: 1, timestampNs: Int64(number) * 1_000_000, originalLength: data.count, data: data))
        }
        for var frame in extraFrames {
            number += 1
            frame.number = number
            try writer.write(frame)
        }
        try writer.close()
    }
}

@Suite struct GeneratedCaptureTests {
    /// Every file under `folder`, relative path → bytes.
    static func files(_ folder: String) throws -> [(String, [UInt8])] {
        try CommittedSetsTests.files(under: folder).map { ($0, [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0)))) }
    }

    @Test func everyAddressNameKeyPINAndPasskeyParameterIsGoneFromEveryOutputFile() throws {
        let folder = try TemporaryFolder("redact-generated")
        let generated = GeneratedCapture.make()
        try generated.writeSet(to: folder.path("set").path)
        let out = folder.path("out").path
        let report = try SetRedactor.redact(set: folder.path("set").path, to: out)
        #expect(report.survivors.isEmpty)
        let values = generated.addresses.flatMap { [($0.0, $0.1), ($0.0 + " (reversed)", Array($0.1.reversed()))] }
            + generated.keys.flatMap { [($0.0, $0.1), ($0.0 + " (reversed)", Array($0.1.reversed()))] }
            + generated.names + generated.pins + generated.passkeys
        #expect(generated.addresses.count >= 120 && generated.keys.count >= 40 && generated.names.count >= 15)
        for (file, bytes) in try Self.files(out) {
            for (what, value) in values where ByteSubstitution.containsAny([value], in: bytes) != nil {
                Issue.record("\(file) still holds the original value of \(what)")
            }
        }
        // Every value was found, and the capture still has every frame, each its original length.
        #expect(report.map.originals(of: .address).count == generated.addresses.count)
        #expect(report.map.originals(of: .key).count == generated.keys.count)
        #expect(report.map.originals(of: .name).count == generated.names.count)
        #expect(report.map.originals(of: .pin).count == generated.pins.count)
        #expect(report.map.originals(of: .passkey).count == generated.passkeys.count)
        let (_, frames) = try CommittedSetsTests.frames(out + "/capture.pcapng")
        #expect(frames.map(\.data.count) == (generated.frames + generated.monitorFrames).map(\.count))
    }

    @Test func theGeneratedCaptureHasAPacketForEveryEntryOfTheTables() {
        let generated = GeneratedCapture.make()
        var commands: Set<UInt16> = [], returns: Set<UInt16> = [], events: Set<UInt8> = [], le: Set<UInt8> = []
        var adTypes: Set<UInt8> = []
        for frame in generated.frames {
            switch frame[4] {
            case 0x01: commands.insert(UInt16(frame[5]) | UInt16(frame[6]) << 8)
            case 0x04 where frame[5] == 0x0E: returns.insert(UInt16(frame[8]) | UInt16(frame[9]) << 8)
            case 0x04 where frame[5] == 0x3E: le.insert(frame[7])
            case 0x04: events.insert(frame[5])
            default: break
            }
            for field in HCIRedaction.fields(in: frame, linkType: .bluetoothHCIH4WithPHDR) where field.what.contains(" AD 0x") {
                if let range = field.what.range(of: " AD 0x"), let type = UInt8(field.what[range.upperBound...].prefix(2), radix: 16) { adTypes.insert(type) }
            }
        }
        #expect(commands == Set(HCIParameters.commands.keys))
        #expect(returns == Set(HCIParameters.returnParameters.keys))
        #expect(events == Set(HCIParameters.events.keys))
        #expect(le == Set(HCIParameters.leSubevents.keys))
        #expect(adTypes == Set(HCIParameters.advertisingDataTypes.keys))
    }

    @Test func addressesInManufacturerDataAndATTValuesAreReplacedInBothByteOrders() throws {
        let folder = try TemporaryFolder("redact-anywhere")
        var generated = GeneratedCapture()
        let peer = generated.address("LE_Connection_Complete")
        generated.leEvent(0x01, [0x00, 0x40, 0x00, 0x00, 0x01] + peer + [0x18, 0, 0, 0, 0xC8, 0, 0])
        // Manufacturer Specific Data (AD 0xFF): company 0x0087, then the peer's address, display order.
        let manufacturer = GeneratedCapture.ad(0xFF, [0x87, 0x00] + peer.reversed())
        generated.command(0x2008, [UInt8(manufacturer.count)] + manufacturer + [UInt8](repeating: 0, count: 31 - manufacturer.count))
        // An ATT Handle Value Notification whose value carries it in wire order.
        let att: [UInt8] = [0x1B, 0x2A, 0x00, 0x01] + peer + [0x02]
        generated.frames.append([0, 0, 0, 1, 0x02, 0x40, 0x20, UInt8(att.count + 4), 0, UInt8(att.count), 0, 0x04, 0x00] + att)
        try generated.writeSet(to: folder.path("set").path)
        let out = folder.path("out").path
        _ = try SetRedactor.redact(set: folder.path("set").path, to: out)
        let capture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out + "/capture.pcapng")))
        #expect(ByteSubstitution.containsAny([peer, Array(peer.reversed())], in: capture) == nil)
    }

    @Test func extendedAdvertisingParametersPeerAddressIsReadAtOctetTwelve() {
        var generated = GeneratedCapture()
        let peer = generated.address("LE_Set_Extended_Advertising_Parameters Peer_Address")
        generated.command(0x2036, [0x00, 0x13, 0x00, 0xA0, 0, 0, 0xA0, 0, 0, 0x07, 0x01, 0x00] + peer + [0, 0x7F, 1, 0, 1, 0, 0])
        let fields = HCIRedaction.fields(in: generated.frames[0], linkType: .bluetoothHCIH4WithPHDR)
        #expect(fields.map(\.offset) == [4 + 4 + 12])
        #expect(fields.map(\.kind) == [.address])
    }

    @Test func pinCodeIsReplacedForItsLengthOnly() {
        var generated = GeneratedCapture()
        let pin = Array("0000".utf8)
        let address = generated.address("PIN_Code_Request_Reply")
        generated.command(0x040D, address + [4] + pin + [UInt8](repeating: 0x5A, count: 12))
        let frame = generated.frames[0]
        var map = RedactionMap()
        HCIRedaction.discover(frame, linkType: .bluetoothHCIH4WithPHDR, into: &map, keepNames: false)
        #expect(map.originals(of: .pin) == [pin])
        var copy = frame
        _ = HCIRedaction.rewrite(&copy, linkType: .bluetoothHCIH4WithPHDR, map: map)
        let at = 4 + 4 + 6 + 1
        #expect(Array(copy[at..<(at + 4)]) == map.placeholder(for: pin))
        #expect(Array(copy[(at + 4)...]) == [UInt8](repeating: 0x5A, count: 12))
    }

    @Test func writeStoredLinkKeyReplacesEveryAddressAndKeyOfItsArray() {
        var generated = GeneratedCapture()
        var parameters: [UInt8] = [3]
        for n in 1...3 { parameters += generated.address("#\(n)") + generated.key("#\(n)") }
        generated.command(0x0C11, parameters)
        let fields = HCIRedaction.fields(in: generated.frames[0], linkType: .bluetoothHCIH4WithPHDR)
        #expect(fields.map(\.kind) == [.address, .key, .address, .key, .address, .key])
        #expect(fields.map(\.offset) == [9, 15, 31, 37, 53, 59])
    }

    @Test func truncatedArraysAndLengthsPastTheEndNeverTrap() {
        // Counts and lengths that promise more than the packet holds, for every table entry.
        var random = SplitMix64(state: 36)
        let commands = Array(HCIParameters.commands.keys), events = Array(HCIParameters.events.keys), le = Array(HCIParameters.leSubevents.keys)
        for _ in 0..<20_000 {
            let body = (0..<Int(random.next() % 80)).map { _ in UInt8(truncatingIfNeeded: random.next() % 4 == 0 ? 0xFF : random.next()) }
            let frame: [UInt8]
            switch random.next() % 3 {
            case 0:
                let opcode = commands[Int(random.next() % UInt64(commands.count))]
                frame = [0, 0, 0, 0, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(truncatingIfNeeded: random.next())] + body
            case 1:
                frame = [0, 0, 0, 1, 0x04, events[Int(random.next() % UInt64(events.count))], UInt8(truncatingIfNeeded: random.next())] + body
            default:
                frame = [0, 0, 0, 1, 0x04, 0x3E, UInt8(truncatingIfNeeded: random.next()), le[Int(random.next() % UInt64(le.count))]] + body
            }
            for field in HCIRedaction.fields(in: frame, linkType: .bluetoothHCIH4WithPHDR) {
                #expect(field.offset >= 0 && field.offset + field.count <= frame.count)
            }
            var map = RedactionMap()
            HCIRedaction.discover(frame, linkType: .bluetoothHCIH4WithPHDR, into: &map, keepNames: false)
            var copy = frame
            _ = HCIRedaction.rewrite(&copy, linkType: .bluetoothHCIH4WithPHDR, map: map)
            #expect(copy.count == frame.count)
        }
    }
}
