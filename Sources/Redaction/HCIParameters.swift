/// Where the values redaction replaces sit in HCI commands, events and advertising data: one table
/// per packet family, keyed by opcode, event code or LE subevent code, each entry the packet's
/// parameters in order with their names as the specification gives them.
///
/// Sources: Bluetooth Core 5.4, Vol 4 Part E §7.1 (Link Control commands), §7.2 (Link Policy),
/// §7.3 (Controller & Baseband), §7.4 (Informational), §7.7 (events), §7.7.65 (LE Meta event
/// subevents), §7.8 (LE Controller commands); Vol 3 Part C §8 and §11 and the Core Specification
/// Supplement Part A with Assigned Numbers §2.3 (advertising and EIR data types). Only the
/// parameters up to the last one that can hold an address, a name, a key, a PIN or advertising data
/// are listed: nothing after them matters to redaction.
///
/// A parameter array (`Num_Keys`, `Num_Responses`, `Num_Reports` and their `[i]` parameters) is
/// read as Bumble, BlueZ and Wireshark read it: one count octet, then each element's parameters
/// together. Every real controller sends one element per Inquiry Result, where both readings agree.
enum HCIParameters {
    /// What one parameter (or a run of parameters redaction does not look into) is.
    indirect enum Parameter: Sendable {
        /// Octets redaction leaves as they are (handles, types, intervals, statuses…).
        case octets(Int)
        /// A BD_ADDR or LE address (6 octets).
        case address(String)
        /// A secret of the given size: a link key, LTK, IRK, OOB value, DHKey (16 or 32 octets).
        case key(String, Int)
        /// A 4-octet passkey or numeric comparison value.
        case passkey(String)
        /// `PIN_Code_Length` (1 octet) then `PIN_Code` (16 octets, the first `PIN_Code_Length` used).
        case pinCode(String)
        /// A UTF-8 name in a field of the given size, ended by its first NUL if shorter.
        case name(String, Int)
        /// Extended Inquiry Response data: AD structures in a field of the given size (Vol 3 Part C §8).
        case eir(String, Int)
        /// A 1-octet length, then that many octets of AD structures (Vol 3 Part C §11).
        case advertisingData(String)
        /// A 1-octet count, then that many copies of `element`.
        case array(String, [Parameter])
    }

    /// One packet's name, as the specification spells it, and its parameters in order.
    struct Layout: Sendable {
        var name: String
        var parameters: [Parameter]

        init(_ name: String, _ parameters: [Parameter]) {
            self.name = name
            self.parameters = parameters
        }
    }

    // MARK: Commands (Vol 4 Part E §7.1–§7.8), by opcode (OGF << 10 | OCF).

    /// Commands whose parameters hold an address, key, PIN, passkey, name or advertising data.
    static let commands: [UInt16: Layout] = [
        // §7.1 Link Control commands (OGF 0x01).
        0x0405: Layout("HCI_Create_Connection", [.address("BD_ADDR")]),
        0x0408: Layout("HCI_Create_Connection_Cancel", [.address("BD_ADDR")]),
        0x0409: Layout("HCI_Accept_Connection_Request", [.address("BD_ADDR")]),
        0x040A: Layout("HCI_Reject_Connection_Request", [.address("BD_ADDR")]),
        0x040B: Layout("HCI_Link_Key_Request_Reply", [.address("BD_ADDR"), .key("Link_Key", 16)]),
        0x040C: Layout("HCI_Link_Key_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x040D: Layout("HCI_PIN_Code_Request_Reply", [.address("BD_ADDR"), .pinCode("PIN_Code")]),
        0x040E: Layout("HCI_PIN_Code_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x0419: Layout("HCI_Remote_Name_Request", [.address("BD_ADDR")]),
        0x041A: Layout("HCI_Remote_Name_Request_Cancel", [.address("BD_ADDR")]),
        0x0429: Layout("HCI_Accept_Synchronous_Connection_Request", [.address("BD_ADDR")]),
        0x042A: Layout("HCI_Reject_Synchronous_Connection_Request", [.address("BD_ADDR")]),
        0x042B: Layout("HCI_IO_Capability_Request_Reply", [.address("BD_ADDR")]),
        0x042C: Layout("HCI_User_Confirmation_Request_Reply", [.address("BD_ADDR")]),
        0x042D: Layout("HCI_User_Confirmation_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x042E: Layout("HCI_User_Passkey_Request_Reply", [.address("BD_ADDR"), .passkey("Numeric_Value")]),
        0x042F: Layout("HCI_User_Passkey_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x0430: Layout("HCI_Remote_OOB_Data_Request_Reply", [.address("BD_ADDR"), .key("C", 16), .key("R", 16)]),
        0x0433: Layout("HCI_Remote_OOB_Data_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x0434: Layout("HCI_IO_Capability_Request_Negative_Reply", [.address("BD_ADDR")]),
        0x043D: Layout("HCI_Enhanced_Accept_Synchronous_Connection_Request", [.address("BD_ADDR")]),
        0x043F: Layout("HCI_Truncated_Page", [.address("BD_ADDR")]),
        0x0440: Layout("HCI_Truncated_Page_Cancel", [.address("BD_ADDR")]),
        0x0442: Layout("HCI_Set_Connectionless_Peripheral_Broadcast_Receive", [.octets(1), .address("BD_ADDR")]),
        0x0444: Layout("HCI_Receive_Synchronization_Train", [.address("BD_ADDR")]),
        0x0445: Layout("HCI_Remote_OOB_Extended_Data_Request_Reply", [
            .address("BD_ADDR"), .key("C_192", 16), .key("R_192", 16), .key("C_256", 16), .key("R_256", 16),
        ]),
        0x0460: Layout("HCI_Send_Keypress_Notification", [.address("BD_ADDR")]),
        // §7.2 Link Policy commands (OGF 0x02).
        0x080B: Layout("HCI_Switch_Role", [.address("BD_ADDR")]),
        // §7.3 Controller & Baseband commands (OGF 0x03).
        0x0C0D: Layout("HCI_Read_Stored_Link_Key", [.address("BD_ADDR")]),
        0x0C11: Layout("HCI_Write_Stored_Link_Key", [.array("Num_Keys_To_Write", [.address("BD_ADDR"), .key("Link_Key", 16)])]),
        0x0C12: Layout("HCI_Delete_Stored_Link_Key", [.address("BD_ADDR")]),
        0x0C13: Layout("HCI_Write_Local_Name", [.name("Local_Name", 248)]),
        0x0C52: Layout("HCI_Write_Extended_Inquiry_Response", [.octets(1), .eir("Extended_Inquiry_Response", 240)]),
        // §7.8 LE Controller commands (OGF 0x08).
        0x2005: Layout("HCI_LE_Set_Random_Address", [.address("Random_Address")]),
        0x2006: Layout("HCI_LE_Set_Advertising_Parameters", [.octets(7), .address("Peer_Address")]),
        0x2008: Layout("HCI_LE_Set_Advertising_Data", [.advertisingData("Advertising_Data")]),
        0x2009: Layout("HCI_LE_Set_Scan_Response_Data", [.advertisingData("Scan_Response_Data")]),
        0x200D: Layout("HCI_LE_Create_Connection", [.octets(6), .address("Peer_Address")]),
        0x2011: Layout("HCI_LE_Add_Device_To_Filter_Accept_List", [.octets(1), .address("Address")]),
        0x2012: Layout("HCI_LE_Remove_Device_From_Filter_Accept_List", [.octets(1), .address("Address")]),
        0x2017: Layout("HCI_LE_Encrypt", [.key("Key", 16)]),
        0x2019: Layout("HCI_LE_Enable_Encryption", [.octets(12), .key("Long_Term_Key", 16)]),
        0x201A: Layout("HCI_LE_Long_Term_Key_Request_Reply", [.octets(2), .key("Long_Term_Key", 16)]),
        0x2027: Layout("HCI_LE_Add_Device_To_Resolving_List", [
            .octets(1), .address("Peer_Identity_Address"), .key("Peer_IRK", 16), .key("Local_IRK", 16),
        ]),
        0x2028: Layout("HCI_LE_Remove_Device_From_Resolving_List", [.octets(1), .address("Peer_Identity_Address")]),
        0x202B: Layout("HCI_LE_Read_Peer_Resolvable_Address", [.octets(1), .address("Peer_Identity_Address")]),
        0x202C: Layout("HCI_LE_Read_Local_Resolvable_Address", [.octets(1), .address("Peer_Identity_Address")]),
        0x2035: Layout("HCI_LE_Set_Advertising_Set_Random_Address", [.octets(1), .address("Random_Address")]),
        // Advertising_Handle, Advertising_Event_Properties (2), Primary_Advertising_Interval_Min (3)
        // and _Max (3), Primary_Advertising_Channel_Map, Own_Address_Type, Peer_Address_Type: 12.
        0x2036: Layout("HCI_LE_Set_Extended_Advertising_Parameters", [.octets(12), .address("Peer_Address")]),
        0x2037: Layout("HCI_LE_Set_Extended_Advertising_Data", [.octets(3), .advertisingData("Advertising_Data")]),
        0x2038: Layout("HCI_LE_Set_Extended_Scan_Response_Data", [.octets(3), .advertisingData("Scan_Response_Data")]),
        0x203F: Layout("HCI_LE_Set_Periodic_Advertising_Data", [.octets(2), .advertisingData("Advertising_Data")]),
        0x2043: Layout("HCI_LE_Extended_Create_Connection", [.octets(3), .address("Peer_Address")]),
        0x2044: Layout("HCI_LE_Periodic_Advertising_Create_Sync", [.octets(3), .address("Advertiser_Address")]),
        0x2047: Layout("HCI_LE_Add_Device_To_Periodic_Advertiser_List", [.octets(1), .address("Advertiser_Address")]),
        0x2048: Layout("HCI_LE_Remove_Device_From_Periodic_Advertiser_List", [.octets(1), .address("Advertiser_Address")]),
        0x204E: Layout("HCI_LE_Set_Privacy_Mode", [.octets(1), .address("Peer_Identity_Address")]),
        0x207F: Layout("HCI_LE_Set_Extended_Advertising_Parameters_V2", [.octets(12), .address("Peer_Address")]),
        0x2085: Layout("HCI_LE_Extended_Create_Connection_V2", [.octets(5), .address("Peer_Address")]),
    ]

    /// The return parameters of HCI_Command_Complete (§7.7.14) per command opcode, starting
    /// with Status.
    static let returnParameters: [UInt16: Layout] = {
        var table: [UInt16: Layout] = [:]
        // Commands that return Status, BD_ADDR (§7.1.x "Return parameters").
        let statusAndAddress: [UInt16: String] = [
            0x0408: "HCI_Create_Connection_Cancel", 0x040B: "HCI_Link_Key_Request_Reply",
            0x040C: "HCI_Link_Key_Request_Negative_Reply", 0x040D: "HCI_PIN_Code_Request_Reply",
            0x040E: "HCI_PIN_Code_Request_Negative_Reply", 0x041A: "HCI_Remote_Name_Request_Cancel",
            0x042B: "HCI_IO_Capability_Request_Reply", 0x042C: "HCI_User_Confirmation_Request_Reply",
            0x042D: "HCI_User_Confirmation_Request_Negative_Reply", 0x042E: "HCI_User_Passkey_Request_Reply",
            0x042F: "HCI_User_Passkey_Request_Negative_Reply", 0x0430: "HCI_Remote_OOB_Data_Request_Reply",
            0x0433: "HCI_Remote_OOB_Data_Request_Negative_Reply", 0x0434: "HCI_IO_Capability_Request_Negative_Reply",
            0x0440: "HCI_Truncated_Page_Cancel", 0x0442: "HCI_Set_Connectionless_Peripheral_Broadcast_Receive",
            0x0445: "HCI_Remote_OOB_Extended_Data_Request_Reply", 0x0460: "HCI_Send_Keypress_Notification",
            0x1009: "HCI_Read_BD_ADDR",
        ]
        for (opcode, name) in statusAndAddress { table[opcode] = Layout(name, [.octets(1), .address("BD_ADDR")]) }
        table[0x0C14] = Layout("HCI_Read_Local_Name", [.octets(1), .name("Local_Name", 248)])
        table[0x0C51] = Layout("HCI_Read_Extended_Inquiry_Response", [.octets(2), .eir("Extended_Inquiry_Response", 240)])
        table[0x0C57] = Layout("HCI_Read_Local_OOB_Data", [.octets(1), .key("C", 16), .key("R", 16)])
        table[0x0C7D] = Layout("HCI_Read_Local_OOB_Extended_Data", [
            .octets(1), .key("C_192", 16), .key("R_192", 16), .key("C_256", 16), .key("R_256", 16),
        ])
        table[0x202B] = Layout("HCI_LE_Read_Peer_Resolvable_Address", [.octets(1), .address("Peer_Resolvable_Address")])
        table[0x202C] = Layout("HCI_LE_Read_Local_Resolvable_Address", [.octets(1), .address("Local_Resolvable_Address")])
        return table
    }()

    // MARK: Events (§7.7), by event code.

    /// Events whose parameters hold an address, key, passkey, name or EIR data.
    static let events: [UInt8: Layout] = [
        0x02: Layout("HCI_Inquiry_Result", [.array("Num_Responses", [.address("BD_ADDR"), .octets(8)])]),
        0x03: Layout("HCI_Connection_Complete", [.octets(3), .address("BD_ADDR")]),
        0x04: Layout("HCI_Connection_Request", [.address("BD_ADDR")]),
        0x07: Layout("HCI_Remote_Name_Request_Complete", [.octets(1), .address("BD_ADDR"), .name("Remote_Name", 248)]),
        0x12: Layout("HCI_Role_Change", [.octets(1), .address("BD_ADDR")]),
        0x15: Layout("HCI_Return_Link_Keys", [.array("Num_Keys", [.address("BD_ADDR"), .key("Link_Key", 16)])]),
        0x16: Layout("HCI_PIN_Code_Request", [.address("BD_ADDR")]),
        0x17: Layout("HCI_Link_Key_Request", [.address("BD_ADDR")]),
        0x18: Layout("HCI_Link_Key_Notification", [.address("BD_ADDR"), .key("Link_Key", 16)]),
        0x20: Layout("HCI_Page_Scan_Repetition_Mode_Change", [.address("BD_ADDR")]),
        // BD_ADDR, Page_Scan_Repetition_Mode, Reserved, Class_Of_Device (3), Clock_Offset (2), RSSI.
        0x22: Layout("HCI_Inquiry_Result_with_RSSI", [.array("Num_Responses", [.address("BD_ADDR"), .octets(8)])]),
        0x2C: Layout("HCI_Synchronous_Connection_Complete", [.octets(3), .address("BD_ADDR")]),
        0x2F: Layout("HCI_Extended_Inquiry_Result", [
            .octets(1), .address("BD_ADDR"), .octets(8), .eir("Extended_Inquiry_Response", 240),
        ]),
        0x31: Layout("HCI_IO_Capability_Request", [.address("BD_ADDR")]),
        0x32: Layout("HCI_IO_Capability_Response", [.address("BD_ADDR")]),
        0x33: Layout("HCI_User_Confirmation_Request", [.address("BD_ADDR"), .passkey("Numeric_Value")]),
        0x34: Layout("HCI_User_Passkey_Request", [.address("BD_ADDR")]),
        0x35: Layout("HCI_Remote_OOB_Data_Request", [.address("BD_ADDR")]),
        0x36: Layout("HCI_Simple_Pairing_Complete", [.octets(1), .address("BD_ADDR")]),
        0x3B: Layout("HCI_User_Passkey_Notification", [.address("BD_ADDR"), .passkey("Passkey")]),
        0x3C: Layout("HCI_Keypress_Notification", [.address("BD_ADDR")]),
        0x3D: Layout("HCI_Remote_Host_Supported_Features_Notification", [.address("BD_ADDR")]),
        0x50: Layout("HCI_Synchronization_Train_Received", [.octets(1), .address("BD_ADDR")]),
        0x51: Layout("HCI_Connectionless_Peripheral_Broadcast_Receive", [.address("BD_ADDR")]),
        0x52: Layout("HCI_Connectionless_Peripheral_Broadcast_Timeout", [.address("BD_ADDR")]),
        0x53: Layout("HCI_Truncated_Page_Complete", [.octets(1), .address("BD_ADDR")]),
    ]

    /// HCI_LE_Meta_Event (0x3E) subevents (§7.7.65), by subevent code; parameters after the code.
    static let leSubevents: [UInt8: Layout] = [
        0x01: Layout("HCI_LE_Connection_Complete", [.octets(5), .address("Peer_Address")]),
        // Event_Type, Address_Type, Address, Data_Length, Data, RSSI.
        0x02: Layout("HCI_LE_Advertising_Report", [
            .array("Num_Reports", [.octets(2), .address("Address"), .advertisingData("Data"), .octets(1)]),
        ]),
        0x09: Layout("HCI_LE_Generate_DHKey_Complete", [.octets(1), .key("DHKey", 32)]),
        0x0A: Layout("HCI_LE_Enhanced_Connection_Complete", [
            .octets(5), .address("Peer_Address"), .address("Local_Resolvable_Private_Address"), .address("Peer_Resolvable_Private_Address"),
        ]),
        // Event_Type, Address_Type, Address, Direct_Address_Type, Direct_Address, RSSI.
        0x0B: Layout("HCI_LE_Directed_Advertising_Report", [
            .array("Num_Reports", [.octets(2), .address("Address"), .octets(1), .address("Direct_Address"), .octets(1)]),
        ]),
        // Event_Type (2), Address_Type, Address, Primary_PHY, Secondary_PHY, Advertising_SID,
        // TX_Power, RSSI, Periodic_Advertising_Interval (2), Direct_Address_Type, Direct_Address,
        // Data_Length, Data.
        0x0D: Layout("HCI_LE_Extended_Advertising_Report", [
            .array("Num_Reports", [.octets(3), .address("Address"), .octets(8), .address("Direct_Address"), .advertisingData("Data")]),
        ]),
        0x0E: Layout("HCI_LE_Periodic_Advertising_Sync_Established", [.octets(5), .address("Advertiser_Address")]),
        // Sync_Handle (2), TX_Power, RSSI, CTE_Type, Data_Status, Data_Length, Data.
        0x0F: Layout("HCI_LE_Periodic_Advertising_Report", [.octets(6), .advertisingData("Data")]),
        0x13: Layout("HCI_LE_Scan_Request_Received", [.octets(2), .address("Scanner_Address")]),
        0x18: Layout("HCI_LE_Periodic_Advertising_Sync_Transfer_Received", [.octets(9), .address("Advertiser_Address")]),
        0x24: Layout("HCI_LE_Periodic_Advertising_Sync_Established_V2", [.octets(5), .address("Advertiser_Address")]),
        // Sync_Handle (2), TX_Power, RSSI, CTE_Type, Periodic_Event_Counter (2), Subevent,
        // Data_Status, Data_Length, Data.
        0x25: Layout("HCI_LE_Periodic_Advertising_Report_V2", [.octets(9), .advertisingData("Data")]),
        0x26: Layout("HCI_LE_Periodic_Advertising_Sync_Transfer_Received_V2", [.octets(9), .address("Advertiser_Address")]),
        0x29: Layout("HCI_LE_Enhanced_Connection_Complete_V2", [
            .octets(5), .address("Peer_Address"), .address("Local_Resolvable_Private_Address"), .address("Peer_Resolvable_Private_Address"),
        ]),
    ]

    // MARK: Advertising and EIR data types (Assigned Numbers §2.3, Supplement Part A §1).

    /// What an AD structure of a data type holds, for redaction.
    enum ADContent: Sendable, Equatable {
        /// A UTF-8 name: the whole data.
        case name
        /// One or more 6-octet addresses, from the data's start (the LE Bluetooth Device Address's
        /// trailing type octet is left).
        case addresses
        /// A 16-octet secret, when the data is exactly 16 octets.
        case key
    }

    /// The AD types that carry a name, an address or a secret, with their Assigned Numbers names.
    static let advertisingDataTypes: [UInt8: (name: String, content: ADContent)] = [
        0x08: ("Shortened Local Name", .name),
        0x09: ("Complete Local Name", .name),
        0x0E: ("Simple Pairing Hash C-192", .key),
        0x0F: ("Simple Pairing Randomizer R-192", .key),
        // 0x10 is the Security Manager TK Value in OOB and AD data (16 octets) and Device ID in
        // EIR (8 octets, vendor and product numbers): only a 16-octet one is a secret.
        0x10: ("Security Manager TK Value", .key),
        0x17: ("Public Target Address", .addresses),
        0x18: ("Random Target Address", .addresses),
        0x1B: ("LE Bluetooth Device Address", .addresses),
        0x1D: ("Simple Pairing Hash C-256", .key),
        0x1E: ("Simple Pairing Randomizer R-256", .key),
        0x22: ("LE Secure Connections Confirmation Value", .key),
        0x23: ("LE Secure Connections Random Value", .key),
        0x2D: ("Broadcast_Code", .key),
        // A Resolvable Set Identifier is made like a resolvable private address (hash and prand).
        0x2E: ("Resolvable Set Identifier", .addresses),
        0x30: ("Broadcast_Name", .name),
    ]
}
