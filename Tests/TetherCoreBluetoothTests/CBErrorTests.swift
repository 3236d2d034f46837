import Testing
@testable import TetherCoreBluetooth

@Test(arguments: [
    (CBError.Code.unknown, 0), (.invalidParameters, 1), (.invalidHandle, 2), (.notConnected, 3),
    (.outOfSpace, 4), (.operationCancelled, 5), (.connectionTimeout, 6), (.peripheralDisconnected, 7),
    (.uuidNotAllowed, 8), (.alreadyAdvertising, 9), (.connectionFailed, 10), (.connectionLimitReached, 11),
    (.unknownDevice, 12), (.operationNotSupported, 13), (.peerRemovedPairingInformation, 14),
    (.encryptionTimedOut, 15), (.tooManyLEPairedDevices, 16), (.leGattExceededBackgroundNotificationLimit, 17),
    (.leGattNearBackgroundNotificationLimit, 18),
] as [(CBError.Code, Int)])
func errorCodesHaveTheSDKsRawValues(_ code: CBError.Code, _ value: Int) {
    #expect(code.rawValue == value)
    #expect(CBError.Code(rawValue: value) == code)
}

@Test(arguments: [
    (CBATTError.Code.success, 0x00), (.invalidHandle, 0x01), (.readNotPermitted, 0x02), (.writeNotPermitted, 0x03),
    (.invalidPdu, 0x04), (.insufficientAuthentication, 0x05), (.requestNotSupported, 0x06), (.invalidOffset, 0x07),
    (.insufficientAuthorization, 0x08), (.prepareQueueFull, 0x09), (.attributeNotFound, 0x0A),
    (.attributeNotLong, 0x0B), (.insufficientEncryptionKeySize, 0x0C), (.invalidAttributeValueLength, 0x0D),
    (.unlikelyError, 0x0E), (.insufficientEncryption, 0x0F), (.unsupportedGroupType, 0x10),
    (.insufficientResources, 0x11),
] as [(CBATTError.Code, Int)])
func attErrorCodesHaveTheSDKsRawValues(_ code: CBATTError.Code, _ value: Int) {
    #expect(code.rawValue == value)
    #expect(CBATTError.Code(rawValue: value) == code)
    #expect(CBATTError.Code(attErrorCode: UInt8(value)) == code)
}

@Test func everyCodeIsAlsoAStaticMemberOfItsError() {
    #expect(CBError.connectionTimeout == CBError.Code.connectionTimeout)
    #expect(CBError.peerRemovedPairingInformation == .peerRemovedPairingInformation)
    #expect(CBATTError.insufficientEncryption == CBATTError.Code.insufficientEncryption)
    #expect(CBError(.notConnected).code == CBError.notConnected)
}

@Test func anATTErrorCarriesCodesTheSDKDoesNotName() throws {
    let application = try #require(CBATTError.Code(rawValue: 0x80))
    #expect(application.rawValue == 0x80)
    #expect(CBATTError.Code(attErrorCode: 0xFE).rawValue == 0xFE)
    #expect(CBATTError(.init(attErrorCode: 0x80)).errorCode == 0x80)
    #expect((CBATTError(application) as NSError).code == 0x80)
}

@Test func anUnnamedCodeWithANamedValueIsTheNamedCode() {
    #expect(CBATTError.Code.unnamed(5) == .insufficientAuthentication)
    #expect(Set([CBATTError.Code.unnamed(5), .insufficientAuthentication]).count == 1)
}

@Test func aCBErrorBridgesToNSErrorWithTheSDKsDomainCodeAndMessage() {
    let error: any Error = CBError(.peripheralDisconnected, detail: "HCI 0x13")
    let bridged = error as NSError
    #expect(bridged.domain == "CBErrorDomain")
    #expect(bridged.domain == CBErrorDomain)
    #expect(bridged.code == 7)
    #expect(error.localizedDescription == "The specified device has disconnected from us.")
}

@Test func anATTErrorBridgesToNSErrorWithTheSDKsDomainCodeAndMessage() {
    let error: any Error = CBATTError(.readNotPermitted)
    let bridged = error as NSError
    #expect(bridged.domain == "CBATTErrorDomain")
    #expect(bridged.domain == CBATTErrorDomain)
    #expect(bridged.code == 2)
    #expect(error.localizedDescription == "Reading is not permitted.")
}

@Test func nsErrorGivesTheSameDomainCodeAndMessageAsBridging() {
    let error = CBError(.connectionTimeout)
    #expect(error.nsError.domain == (error as NSError).domain)
    #expect(error.nsError.code == 6)
    #expect(error.nsError.localizedDescription == "The connection has timed out unexpectedly.")
    #expect(CBATTError(.insufficientEncryption).nsError.code == 0x0F)
}

@Test func errorsAreEqualByCodeAlone() {
    #expect(CBError(.connectionTimeout, detail: "supervision timeout") == CBError(.connectionTimeout))
    #expect(CBError(.connectionTimeout) != CBError(.peripheralDisconnected))
    #expect(Set([CBATTError(.writeNotPermitted, detail: "handle 0x0012"), CBATTError(.writeNotPermitted)]).count == 1)
}

@Test func anErrorCaseInACatchMatchesAThrownErrorWithThatCode() {
    func fail(_ error: some Error) throws { throw error }
    var caught = ""
    do { try fail(CBError(.peripheralDisconnected)) } catch CBError.connectionTimeout { caught = "timeout" } catch CBError.peripheralDisconnected { caught = "disconnected" } catch { caught = "other" }
    #expect(caught == "disconnected")
    do { try fail(CBATTError(.insufficientAuthentication)) } catch CBATTError.insufficientAuthentication { caught = "authentication" } catch { caught = "other" }
    #expect(caught == "authentication")
}

@Test func descriptionGivesMessageCodeAndDetail() {
    #expect(CBError(.connectionTimeout, detail: "HCI 0x08").description
        == "The connection has timed out unexpectedly. (CBError.connectionTimeout, 6): HCI 0x08")
    #expect(CBATTError(.attributeNotFound).description.contains("CBATTError.attributeNotFound, 0x0A"))
}
