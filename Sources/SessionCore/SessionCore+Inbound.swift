import MonkeyC

// Receiving: reassembly, dedupe by id (watermarks), ACKs, delivery or pending content.

extension SessionCore {
    /// The highest id of `lane` completely received from the peer: durable for the background
    /// channels, per link for messages and replies.
    func inboundWatermark(_ lane: Lane, peerIndex index: Int) -> UInt32 {
        let marks = durable.peers[index].watermarks
        switch lane {
        case .applicationContext: return marks.applicationContext
        case .userInfo: return marks.userInfo
        case .complication: return marks.complicationUserInfo
        case .file: return marks.file
        case .message: return link?.binding?.messageWatermark ?? 0
        case .reply: return link?.binding?.replyWatermark ?? 0
        }
    }

    mutating func setInboundWatermark(_ lane: Lane, _ id: UInt32, peerIndex index: Int) {
        switch lane {
        case .applicationContext: durable.peers[index].watermarks.applicationContext = id
        case .userInfo: durable.peers[index].watermarks.userInfo = id
        case .complication: durable.peers[index].watermarks.complicationUserInfo = id
        case .file: durable.peers[index].watermarks.file = id
        case .message: link?.binding?.messageWatermark = id
        case .reply: link?.binding?.replyWatermark = id
        }
        if lane != .message, lane != .reply { output.dirty = true }
    }

    func itemLimit(_ channel: SessionChannel) -> Int {
        switch channel {
        case .applicationContext: configuration.maximumApplicationContextBytes
        case .message, .messageData: configuration.maximumMessageBytes
        case .messageReply: configuration.maximumMessageBytes + 4
        case .userInfo, .complicationUserInfo: configuration.maximumUserInfoBytes
        case .fileMetadata: configuration.maximumUserInfoBytes + 4
        default: configuration.maximumFileBytes
        }
    }

    /// A data frame on a bound link (flags already checked).
    mutating func receiveDataFrame(_ frame: SessionFrame, peerIndex index: Int) {
        guard let lane = Lane(channel: frame.channel) else { return }
        if frame.channel == .fileChunk {
            receiveFileChunk(frame, peerIndex: index)
        } else {
            receiveItemFrame(frame, lane: lane, peerIndex: index)
        }
    }

    mutating func receiveItemFrame(_ frame: SessionFrame, lane: Lane, peerIndex index: Int) {
        let retransmission = frame.flags.contains(.retransmission)
        var complete = frame.id <= inboundWatermark(lane, peerIndex: index)
        if frame.channel == .fileMetadata, let file = durable.peers[index].inboundFile {
            if frame.id < file.id { return } // a late frame of a file its sender gave up
            if frame.id == file.id { complete = true } // its metadata is in already
        }
        if complete {
            if !retransmission {
                violation(.duplicateFrame, "\(frame): \(frame.channel) #\(frame.id) was already received completely")
            }
            sendAck(frame.channel, frame.id, received: SessionLink.complete)
            return
        }
        var partial = link?.binding?.partials[lane.rawValue]
        if let existing = partial, existing.id != frame.id {
            if frame.id < existing.id { return } // a late frame of an item its sender gave up
            partial = nil // the sender moved on to a newer item
            link?.binding?.partials[lane.rawValue] = nil
        }
        if partial == nil {
            guard let total = frame.total else {
                // The item's first frame is missing: tell the sender it must start over.
                sendAck(frame.channel, frame.id, received: 0)
                return
            }
            guard Int(total) <= itemLimit(frame.channel) else {
                violation(.itemTooLarge, "\(frame): \(frame.channel) items are at most \(itemLimit(frame.channel)) bytes; refused with 7009")
                sendControl(.error(channel: frame.channel, id: frame.id, code: UInt16(SessionErrorCode.payloadTooLarge.rawValue)))
                return
            }
            partial = Reassembly(channel: frame.channel, id: frame.id, total: Int(total), flags: frame.flags)
        }
        guard var item = partial else { return }
        guard frame.channel == item.channel, frame.total.map({ Int($0) == item.total }) ?? true else {
            violation(.inconsistentFragment, "\(frame) does not belong to \(item.channel) #\(item.id) of \(item.total) bytes; ignored")
            keepPartial(item, lane: lane)
            return
        }
        let offset = Int(frame.offset)
        let received = item.bytes.count
        let end = offset + frame.bytes.count
        guard offset >= received, end <= item.total, frame.flags.contains(.last) == (end == item.total) else {
            if offset < received {
                noteOutOfOrder(frame, received: received)
                sendAck(frame.channel, frame.id, received: UInt32(received))
            } else {
                violation(.inconsistentFragment, "\(frame) ends at \(end) of \(item.total) bytes with LAST \(frame.flags.contains(.last) ? "set" : "clear"); ignored")
            }
            keepPartial(item, lane: lane)
            return
        }
        guard offset == received else {
            // Ahead of a gap: kept when within the window, so a reordered burst is not lost.
            if offset < received + (link?.window ?? SessionLink.windowFrames) * (link?.room ?? 0) {
                item.ahead[offset] = AheadPiece(bytes: frame.bytes, needsAck: frame.flags.contains(.needsAck))
                if frame.flags.contains(.needsAck) { sendAck(frame.channel, frame.id, received: UInt32(received)) }
            } else {
                noteOutOfOrder(frame, received: received)
                sendAck(frame.channel, frame.id, received: UInt32(received))
            }
            keepPartial(item, lane: lane)
            return
        }
        item.bytes += frame.bytes
        var needsAck = frame.flags.contains(.needsAck)
        while let piece = item.ahead.removeValue(forKey: item.bytes.count) {
            item.bytes += piece.bytes
            needsAck = needsAck || piece.needsAck
        }
        item.ahead = item.ahead.filter { $0.key > item.bytes.count }
        guard item.bytes.count == item.total else {
            keepPartial(item, lane: lane)
            if needsAck { sendAck(frame.channel, frame.id, received: UInt32(item.bytes.count)) }
            return
        }
        link?.binding?.partials[lane.rawValue] = nil
        completeItem(item, lane: lane, peerIndex: index)
    }

    /// Stores the item being received; a message or reply part is dropped if nothing more of it
    /// comes within the message time limit.
    mutating func keepPartial(_ item: Reassembly, lane: Lane) {
        var kept = item
        if lane == .message || lane == .reply { kept.deadline = clock + configuration.messageReplyTimeout }
        link?.binding?.partials[lane.rawValue] = kept
    }

    /// A frame that is not the next one: a duplicate (behind) or a gap (ahead).
    mutating func noteOutOfOrder(_ frame: SessionFrame, received: Int) {
        let offset = Int(frame.offset)
        if offset < received {
            if !frame.flags.contains(.retransmission) {
                violation(.duplicateFrame, "\(frame): bytes from \(offset) were already received (\(received) held)")
            }
        } else if let room = link?.room, let window = link?.window, offset >= received + window * room {
            violation(.outOfWindow, "\(frame): offset \(offset) is beyond the window (\(received) held, \(window) frames of \(room) bytes)")
        }
    }

    mutating func refuse(_ item: Reassembly, code: SessionErrorCode, kind: SessionViolationKind, _ detail: String) {
        violation(kind, "\(item.channel) #\(item.id): \(detail); refused with \(code)")
        sendControl(.error(channel: item.channel, id: item.id, code: UInt16(code.rawValue)))
    }

    /// A whole item arrived: decode, deliver (or keep pending), move the watermark, ACK.
    mutating func completeItem(_ item: Reassembly, lane: Lane, peerIndex index: Int) {
        let id = item.id
        switch item.channel {
        case .applicationContext, .userInfo, .complicationUserInfo:
            do {
                _ = try SessionPropertyList.decodeDictionary(item.bytes, at: 0)
            } catch {
                refuse(item, code: .payloadUnsupportedTypes, kind: .undecodablePayload, "\(error)")
                return
            }
            setInboundWatermark(lane, id, peerIndex: index)
            let delivery: PendingDelivery = item.channel == .applicationContext
                ? .applicationContext(item.bytes)
                : .userInfo(id: id, payload: item.bytes, isCurrentComplication: item.flags.contains(.currentComplication))
            deliverOrKeep(delivery, peerIndex: index)
            sendAck(item.channel, id, received: SessionLink.complete)
        case .message, .messageData:
            let value: MonkeyCValue?
            if item.channel == .message {
                do {
                    value = try SessionPropertyList.decodeDictionary(item.bytes, at: 0)
                } catch {
                    refuse(item, code: .payloadUnsupportedTypes, kind: .undecodablePayload, "\(error)")
                    return
                }
            } else {
                value = nil
            }
            guard state == .activated else {
                // Not a misbehaving peer: this side cannot take messages now.
                sendControl(.error(channel: item.channel, id: id, code: UInt16(SessionErrorCode.notReachable.rawValue)))
                return
            }
            setInboundWatermark(lane, id, peerIndex: index)
            let expectsReply = item.flags.contains(.expectsReply)
            let messageID = SessionMessageID(rawValue: id)
            if let value {
                output.events.append(.didReceiveMessage(messageID, value, expectsReply: expectsReply))
            } else {
                output.events.append(.didReceiveMessageData(messageID, item.bytes, expectsReply: expectsReply))
            }
            if expectsReply { incomingAwaitingReply[id] = item.channel == .messageData }
            sendAck(item.channel, id, received: SessionLink.complete)
        case .messageReply:
            guard item.bytes.count >= 4 else {
                refuse(item, code: .messageReplyFailed, kind: .undecodablePayload, "a reply of \(item.bytes.count) bytes has no inReplyTo (u32)")
                return
            }
            setInboundWatermark(lane, id, peerIndex: index)
            sendAck(item.channel, id, received: SessionLink.complete)
            handleReply(to: readLittleEndianUInt32(item.bytes, at: 0), body: Array(item.bytes[4...]))
        case .fileMetadata:
            let size: UInt32
            let metadata: [UInt8]?
            do {
                guard case let .fileMetadata(decodedSize, decodedMetadata) = try SessionItem.decode(channel: .fileMetadata, payload: item.bytes) else { return }
                size = decodedSize
                metadata = decodedMetadata == nil ? nil : Array(item.bytes[4...])
            } catch {
                refuse(item, code: .payloadUnsupportedTypes, kind: .undecodablePayload, "\(error)")
                return
            }
            guard Int(size) <= configuration.maximumFileBytes else {
                refuse(item, code: .payloadTooLarge, kind: .itemTooLarge, "a file of \(size) bytes; at most \(configuration.maximumFileBytes) are taken")
                return
            }
            if let older = durable.peers[index].inboundFile {
                // The sender gave the older file up without a CANCEL reaching this side.
                output.fileOperations.append(.discardIncomingFile(durable.peers[index].identity, FileTransferID(rawValue: older.id)))
            }
            durable.peers[index].inboundFile = InboundFile(id: id, size: Int(size), metadata: metadata, received: 0)
            output.dirty = true
            sendAck(.fileMetadata, id, received: SessionLink.complete)
        default:
            break
        }
    }

    /// A file chunk: written straight to the host's partial file at its offset.
    mutating func receiveFileChunk(_ frame: SessionFrame, peerIndex index: Int) {
        let retransmission = frame.flags.contains(.retransmission)
        if frame.id <= durable.peers[index].watermarks.file {
            if !retransmission {
                violation(.duplicateFrame, "\(frame): file #\(frame.id) was already received completely")
            }
            sendAck(.fileChunk, frame.id, received: SessionLink.complete)
            return
        }
        guard var file = durable.peers[index].inboundFile, file.id == frame.id else {
            if let file = durable.peers[index].inboundFile, frame.id < file.id { return } // late, given up
            violation(.unexpectedFileChunk, "\(frame): no metadata of file #\(frame.id) was received; the chunk is ignored")
            // ACK 0 of the chunks would restart the chunks, never the metadata: ACK 0 of the
            // metadata tells the sender to start the file over with it (on the frames that ask).
            if frame.flags.contains(.needsAck) || frame.flags.contains(.first) {
                sendAck(.fileMetadata, frame.id, received: 0)
            }
            return
        }
        if let total = frame.total, Int(total) != file.size {
            violation(.inconsistentFragment, "\(frame) announces \(total) bytes, but file #\(file.id)'s metadata said \(file.size); ignored")
            return
        }
        let offset = Int(frame.offset)
        let end = offset + frame.bytes.count
        guard offset >= file.received, end <= file.size, frame.flags.contains(.last) == (end == file.size) else {
            if offset < file.received {
                noteOutOfOrder(frame, received: file.received)
                sendAck(.fileChunk, frame.id, received: UInt32(file.received))
            } else {
                violation(.inconsistentFragment, "\(frame) ends at \(end) of file #\(file.id)'s \(file.size) bytes with LAST \(frame.flags.contains(.last) ? "set" : "clear"); ignored")
            }
            return
        }
        if link?.binding?.fileAhead?.id != file.id {
            link?.binding?.fileAhead = LinkSession.FileAhead(id: file.id)
        }
        guard offset == file.received else {
            // Ahead of a gap: kept when within the window, written once the gap fills.
            if offset < file.received + (link?.window ?? SessionLink.windowFrames) * (link?.room ?? 0) {
                link?.binding?.fileAhead?.pieces[offset] = AheadPiece(bytes: frame.bytes, needsAck: frame.flags.contains(.needsAck))
                if frame.flags.contains(.needsAck) { sendAck(.fileChunk, frame.id, received: UInt32(file.received)) }
            } else {
                noteOutOfOrder(frame, received: file.received)
                sendAck(.fileChunk, frame.id, received: UInt32(file.received))
            }
            return
        }
        let peer = durable.peers[index].identity
        var pieces = [(offset, frame.bytes)]
        var needsAck = frame.flags.contains(.needsAck)
        file.received = end
        while let piece = link?.binding?.fileAhead?.pieces.removeValue(forKey: file.received) {
            pieces.append((file.received, piece.bytes))
            file.received += piece.bytes.count
            needsAck = needsAck || piece.needsAck
        }
        let held = file.received
        let stillAhead = (link?.binding?.fileAhead?.pieces ?? [:]).filter { $0.key > held }
        link?.binding?.fileAhead?.pieces = stillAhead
        for (at, bytes) in pieces {
            output.fileOperations.append(.writeIncomingFile(peer, FileTransferID(rawValue: file.id), offset: at, bytes: bytes))
        }
        guard file.received == file.size else {
            durable.peers[index].inboundFile = file
            if needsAck { sendAck(.fileChunk, file.id, received: UInt32(file.received)) }
            return
        }
        link?.binding?.fileAhead?.pieces = [:]
        durable.peers[index].inboundFile = nil
        setInboundWatermark(.file, file.id, peerIndex: index)
        deliverOrKeep(.file(id: file.id, size: file.size, metadata: file.metadata), peerIndex: index)
        sendAck(.fileChunk, file.id, received: SessionLink.complete)
    }

    /// Delivers now when the session can take it (activated, or inactive and still delivering),
    /// else keeps it as pending content (a newer context replaces a pending older one).
    mutating func deliverOrKeep(_ delivery: PendingDelivery, peerIndex index: Int) {
        output.dirty = true
        if state != .notActivated {
            deliverNow(delivery, peerIndex: index)
            return
        }
        if case .applicationContext = delivery {
            durable.peers[index].pending.removeAll { if case .applicationContext = $0 { true } else { false } }
        }
        durable.peers[index].pending.append(delivery)
    }

    mutating func deliverNow(_ delivery: PendingDelivery, peerIndex index: Int) {
        switch delivery {
        case .applicationContext(let bytes):
            durable.peers[index].receivedApplicationContext = bytes
            output.dirty = true
            output.events.append(.didReceiveApplicationContext(decodedOrEmpty(bytes)))
        case let .userInfo(id, payload, isCurrentComplication):
            output.events.append(.didReceiveUserInfo(UserInfoTransferID(rawValue: id), decodedOrEmpty(payload),
                                                      isCurrentComplicationInfo: isCurrentComplication))
        case let .file(id, size, metadata):
            let value = metadata.flatMap { try? MonkeyCSerialization.decode($0) }
            output.events.append(.didReceiveFile(SessionFile(peer: durable.peers[index].identity, id: FileTransferID(rawValue: id),
                                                             size: size, metadata: value)))
        }
    }

    /// A reply arrived for one of this side's messages.
    mutating func handleReply(to message: UInt32, body: [UInt8]) {
        let id = SessionMessageID(rawValue: message)
        guard let index = messages.firstIndex(where: { $0.id == id }) else {
            if message != 0, message < nextMessageID {
                output.events.append(.lateReplyDiscarded(id))
            } else {
                violation(.unexpectedReply, "a reply to \(id), which this side never sent")
            }
            return
        }
        let sent = messages[index]
        guard sent.expectsReply else {
            violation(.unexpectedReply, "a reply to \(id), which was sent without a reply handler; dropped")
            return
        }
        // The reply proves delivery even when the message's own ACK was lost.
        if let progress = link?.binding?.lanes[Lane.message.rawValue], progress.id == message {
            link?.binding?.lanes[Lane.message.rawValue] = nil
        }
        messages.remove(at: index)
        if sent.isData {
            output.events.append(.didReceiveReplyData(id, body))
        } else {
            do {
                output.events.append(.didReceiveReply(id, try SessionPropertyList.decodeDictionary(body, at: 4)))
            } catch {
                violation(.undecodablePayload, "the reply to \(id): \(error)")
                output.events.append(.messageFailed(id, SessionError(.messageReplyFailed, "the reply to \(id) is not a property-list dictionary: \(error)")))
            }
        }
        pump()
    }
}
