import MonkeyC

// Sending: one item per lane on the wire, a window of frames, cumulative ACKs, go-back on timeout.

extension SessionCore {
    /// Whether data frames may go out now: the link is bound and the phone is not switching watches.
    var canSend: Bool {
        guard link?.boundPeer != nil else { return false }
        return !(role == .phone && state == .inactive)
    }

    /// Puts every lane's next frames on the wire, in priority order.
    mutating func pump() {
        guard canSend, let peer = link?.boundPeer else { return }
        for lane in Lane.priorityOrder { pumpLane(lane, peer: peer) }
    }

    mutating func pumpLane(_ lane: Lane, peer: SessionDeviceID) {
        guard let session = link, let binding = session.binding else { return }
        if binding.lanes[lane.rawValue] == nil {
            guard let started = startItem(on: lane, peer: peer) else { return }
            link?.binding?.lanes[lane.rawValue] = started
            link?.highestStarted[lane.rawValue] = max(session.highestStarted[lane.rawValue], started.id)
            if started.channel == .fileChunk {
                reportFileProgress(started.id, completed: started.acked, total: started.payload.count)
            }
        }
        guard var progress = link?.binding?.lanes[lane.rawValue] else { return }
        let room = session.room
        let windowEnd = progress.acked + binding.window * room
        // With a negotiated window the sender also asks for an ACK each time a frame reaches a
        // multiple of half the window (in item bytes), so ACKs come back while the other half is on
        // the wire; without one, only at the window's end, as link version 1 always did.
        let ackStride = binding.windowNegotiated ? max(1, binding.window / 2) * room : 0
        // With compact frames a continuation the context allows carries `room` bytes (4-byte
        // header); a FIRST frame, or one the context does not allow, the full frame's.
        let fullRoom = session.frameLength - SessionLink.headerLength
        var sent = false
        while true {
            var flags = progress.extraFlags
            let start: Int
            if progress.next == 0, !progress.firstSent {
                start = 0
                flags.insert(.first)
            } else {
                guard progress.next < progress.payload.count, progress.next < windowEnd else { break }
                start = progress.next
            }
            let compact = !flags.contains(.first)
                && link?.binding?.sendContext?.compactAllowed(channel: progress.channel, id: progress.id, offset: start) == true
            let end = min(progress.payload.count, start + (compact ? room : fullRoom))
            if end == progress.payload.count { flags.insert(.last) }
            if end == progress.payload.count || end >= windowEnd || (ackStride > 0 && end / ackStride > start / ackStride) {
                flags.insert(.needsAck)
            }
            if end <= progress.highestSent { flags.insert(.retransmission) }
            let frame = SessionFrame(
                channel: progress.channel, flags: flags, id: progress.id,
                totalOrOffset: flags.contains(.first) ? UInt32(progress.payload.count) : UInt32(start),
                bytes: Array(progress.payload[start..<end]))
            if let bytes = link?.binding?.sendContext?.encode(frame) {
                output.writes.append(bytes)
            } else {
                output.writes.append(frame.encode())
            }
            if flags.contains(.first) { progress.firstSent = true }
            progress.next = end
            progress.highestSent = max(progress.highestSent, end)
            sent = true
            if end == progress.payload.count { break }
        }
        if sent, progress.deadline == nil {
            progress.deadline = clock + configuration.retransmissionTimeout
        }
        link?.binding?.lanes[lane.rawValue] = progress
    }

    /// The next item of a lane, or nil when the lane has nothing to send.
    mutating func startItem(on lane: Lane, peer: SessionDeviceID) -> LaneProgress? {
        switch lane {
        case .message:
            guard let message = messages.first(where: { !$0.delivered }) else { return nil }
            return LaneProgress(id: message.id.rawValue, channel: message.isData ? .messageData : .message,
                                payload: message.payload, extraFlags: message.expectsReply ? .expectsReply : [])
        case .reply:
            guard let reply = replies.first else { return nil }
            return LaneProgress(id: reply.id, channel: .messageReply, payload: reply.payload)
        default:
            break
        }
        guard let index = durable.peerIndex(peer) else { return nil }
        let record = durable.peers[index]
        switch lane {
        case .applicationContext:
            guard let context = record.pendingContext else { return nil }
            return LaneProgress(id: context.id, channel: .applicationContext, payload: context.payload)
        case .userInfo, .complication:
            guard let item = (lane == .userInfo ? record.userInfoQueue : record.complicationQueue).first else { return nil }
            return LaneProgress(id: item.id, channel: lane == .userInfo ? .userInfo : .complicationUserInfo,
                                payload: item.payload, extraFlags: item.isCurrentComplication ? .currentComplication : [])
        case .file:
            guard let file = record.fileQueue.first else { return nil }
            guard let bytes = outgoingFileBytes[file.id] else {
                // Only possible if the host restored without the file; init(restoring:) already failed those.
                durable.peers[index].fileQueue.removeFirst()
                output.dirty = true
                output.events.append(.fileTransferDidFinish(FileTransferID(rawValue: file.id),
                    error: SessionError(.fileAccessDenied, "the bytes of file \(file.id) are gone; transfer it again")))
                return startItem(on: lane, peer: peer)
            }
            if let resume = link?.binding?.fileResume, resume.id == file.id, resume.offset <= file.size {
                return LaneProgress(id: file.id, channel: .fileChunk, payload: bytes, startingAt: resume.offset)
            }
            return LaneProgress(id: file.id, channel: .fileMetadata, payload: file.metadataPayload)
        case .message, .reply:
            return nil
        }
    }

    /// An ACK from the peer for something this side sends.
    mutating func handleAck(channel: SessionChannel, id: UInt32, received: UInt32) {
        guard let lane = Lane(channel: channel) else {
            violation(.unexpectedAck, "ACK \(channel) #\(id): that channel is never acknowledged")
            return
        }
        if channel == .fileMetadata, received == 0, let progress = link?.binding?.lanes[lane.rawValue], progress.id == id,
           progress.channel == .fileChunk, let peer = link?.boundPeer, let index = durable.peerIndex(peer),
           let file = durable.peers[index].fileQueue.first(where: { $0.id == id }) {
            // The receiver has no metadata of the file whose chunks are on the wire (it lost or
            // discarded it): start the file over with its metadata, under the same id.
            link?.binding?.lanes[lane.rawValue] = LaneProgress(id: id, channel: .fileMetadata, payload: file.metadataPayload)
            pump()
            return
        }
        guard var progress = link?.binding?.lanes[lane.rawValue], progress.id == id, progress.channel == channel else {
            if id <= (link?.highestStarted[lane.rawValue] ?? 0) { return } // late: finished or given up already
            violation(.unexpectedAck, "ACK \(channel) #\(id): nothing with that id was sent on \(channel) over this link")
            return
        }
        if received == SessionLink.complete {
            finishLaneItem(lane)
            return
        }
        let count = Int(received)
        guard count <= progress.payload.count else {
            violation(.unexpectedAck, "ACK \(channel) #\(id) received \(count), but the item has \(progress.payload.count) bytes")
            return
        }
        guard count != progress.acked else { return } // repeated
        guard count > progress.acked else {
            // Less than acknowledged before: a reordered old ACK, or the receiver lost its part (a
            // new binding). Going back costs some frames again in the first case and is the only
            // way on in the second; the retransmission timer does the going back.
            progress.acked = count
            link?.binding?.lanes[lane.rawValue] = progress
            return
        }
        progress.acked = count
        if progress.next < count {
            progress.next = count
            progress.firstSent = true
        }
        progress.deadline = clock + configuration.retransmissionTimeout
        link?.binding?.lanes[lane.rawValue] = progress
        if channel == .fileChunk { reportFileProgress(id, completed: count, total: progress.payload.count) }
        pump()
    }

    /// The peer has the lane's item completely.
    mutating func finishLaneItem(_ lane: Lane) {
        guard let progress = link?.binding?.lanes[lane.rawValue], let peer = link?.boundPeer else { return }
        link?.binding?.lanes[lane.rawValue] = nil
        let index = durable.ensurePeer(peer)
        switch lane {
        case .applicationContext:
            if durable.peers[index].pendingContext?.id == progress.id {
                durable.peers[index].pendingContext = nil
                output.dirty = true
            }
        case .userInfo, .complication:
            durable.peers[index].userInfoQueue.removeAll { $0.id == progress.id }
            durable.peers[index].complicationQueue.removeAll { $0.id == progress.id }
            output.dirty = true
            output.events.append(.userInfoTransferDidFinish(UserInfoTransferID(rawValue: progress.id), error: nil))
        case .file:
            if progress.channel == .fileMetadata, let bytes = outgoingFileBytes[progress.id] {
                // Metadata delivered: the file's bytes follow on the same lane.
                link?.binding?.lanes[lane.rawValue] = LaneProgress(id: progress.id, channel: .fileChunk, payload: bytes)
                reportFileProgress(progress.id, completed: 0, total: bytes.count)
            } else if let file = durable.peers[index].fileQueue.first(where: { $0.id == progress.id }) {
                completeOutgoingFile(file.id, size: file.size, peerIndex: index)
            }
        case .message:
            if let position = messages.firstIndex(where: { $0.id.rawValue == progress.id }) {
                if messages[position].expectsReply {
                    messages[position].delivered = true
                } else {
                    messages.remove(at: position)
                    output.events.append(.messageDelivered(SessionMessageID(rawValue: progress.id)))
                }
            }
        case .reply:
            replies.removeAll { $0.id == progress.id }
        }
        pump()
    }

    mutating func completeOutgoingFile(_ id: UInt32, size: Int, peerIndex index: Int) {
        durable.peers[index].fileQueue.removeAll { $0.id == id }
        output.dirty = true
        reportFileProgress(id, completed: size, total: size)
        outgoingFileBytes[id] = nil
        reportedFileProgress[id] = nil
        output.events.append(.fileTransferDidFinish(FileTransferID(rawValue: id), error: nil))
    }

    /// Reports progress only when it grew (it never goes back, even after a resume).
    mutating func reportFileProgress(_ id: UInt32, completed: Int, total: Int) {
        if let reported = reportedFileProgress[id], reported >= completed { return }
        reportedFileProgress[id] = completed
        output.events.append(.fileTransferProgress(FileTransferID(rawValue: id), completed: completed, total: total))
    }

    /// An ERROR from the peer: an item it refused, or a message it cannot answer.
    mutating func handlePeerError(channel: SessionChannel, id: UInt32, code: UInt16) {
        let known = SessionErrorCode(rawValue: Int(code))
        if known == nil {
            violation(.unknownErrorCode, "ERROR \(channel) #\(id) with code \(code), not a WCError code; taken as 7001 genericError")
        }
        let error = SessionError(known ?? .genericError, "the peer answered \(channel) #\(id) with \(known.map(\.description) ?? "code \(code)")")
        if let lane = Lane(channel: channel), let progress = link?.binding?.lanes[lane.rawValue], progress.id == id,
           progress.channel == channel || lane == .file, let peer = link?.boundPeer {
            link?.binding?.lanes[lane.rawValue] = nil
            let index = durable.ensurePeer(peer)
            switch lane {
            case .applicationContext:
                if durable.peers[index].pendingContext?.id == id {
                    durable.peers[index].pendingContext = nil
                    output.dirty = true
                }
                output.events.append(.applicationContextFailed(error))
            case .userInfo, .complication:
                durable.peers[index].userInfoQueue.removeAll { $0.id == id }
                durable.peers[index].complicationQueue.removeAll { $0.id == id }
                output.dirty = true
                output.events.append(.userInfoTransferDidFinish(UserInfoTransferID(rawValue: id), error: error))
            case .file:
                durable.peers[index].fileQueue.removeAll { $0.id == id }
                outgoingFileBytes[id] = nil
                reportedFileProgress[id] = nil
                output.dirty = true
                output.events.append(.fileTransferDidFinish(FileTransferID(rawValue: id), error: error))
            case .message:
                if let position = messages.firstIndex(where: { $0.id.rawValue == id }) {
                    messages.remove(at: position)
                    output.events.append(.messageFailed(SessionMessageID(rawValue: id), error))
                }
            case .reply:
                replies.removeAll { $0.id == id }
            }
            pump()
            return
        }
        if channel == .message || channel == .messageData,
           let position = messages.firstIndex(where: { $0.id.rawValue == id && $0.delivered }) {
            messages.remove(at: position)
            output.events.append(.messageFailed(SessionMessageID(rawValue: id), error))
            return
        }
        violation(.unexpectedError, "ERROR \(channel) #\(id) (\(known.map(\.description) ?? "code \(code)")) for nothing this side is sending or waiting for")
    }

    /// A CANCEL from the peer: drop what was received of the item.
    mutating func handlePeerCancel(channel: SessionChannel, id: UInt32, peerIndex index: Int) {
        guard let lane = Lane(channel: channel) else { return }
        if link?.binding?.partials[lane.rawValue]?.id == id { link?.binding?.partials[lane.rawValue] = nil }
        if lane == .file, let file = durable.peers[index].inboundFile, file.id == id {
            output.fileOperations.append(.discardIncomingFile(durable.peers[index].identity, FileTransferID(rawValue: id)))
            durable.peers[index].inboundFile = nil
            output.dirty = true
        }
    }
}
