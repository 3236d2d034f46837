import CaptureKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a baseline trace file keeps beside it (`<file>.index`, e.g. `baseline/ingest.jsonl.index`)
/// so a replay that agrees with its baseline is checked without reading the baseline's lines: a
/// fingerprint of the trace file it indexes (``ContentFingerprint``), and for each line its length and the
/// ``TraceEventDigest`` of its event. A replayed event whose digest is the next entry's is that
/// line's event; the line is neither read nor parsed.
///
/// The JSON Lines file stays the source of truth: an index whose recorded fingerprint is not the
/// trace file's (the trace was edited, or written by something else) is not used, and the
/// comparison reads the trace as it would without one. The first event whose digest differs
/// sends the comparison back to the trace file at that line, so a difference is reported exactly
/// as without an index. `tether replay --update-baseline` writes both.
///
/// Layout (all integers little-endian):
/// - the 24 bytes `TETHER-BASELINE-INDEX 1\n`;
/// - the trace file's fingerprint as 16 lower-case hex digits, then `\n`;
/// - the number of entries, u64;
/// - per entry (one per trace line, in order): the line's length in bytes with its newline, u32,
///   then the event's digest, u64.
public struct BaselineIndex: Sendable, Equatable {
    /// What an index file's name adds to its trace file's.
    public static let fileSuffix = ".index"
    static let magic = Array("TETHER-BASELINE-INDEX 1\n".utf8)
    static let headerBytes = magic.count + 17 + 8
    static let entryBytes = 12

    /// The ``ContentFingerprint`` of the trace file indexed.
    public var traceFingerprint: UInt64
    /// Each line's length in bytes, its newline included.
    public var lineLengths: [UInt32]
    /// Each line's event digest.
    public var digests: [UInt64]

    /// `value` as 16 lower-case hex digits.
    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The index file of the trace file at `tracePath`.
    public static func path(forTrace tracePath: String) -> String { tracePath + fileSuffix }

    /// An index of the lines described.
    public init(traceFingerprint: UInt64, lineLengths: [UInt32], digests: [UInt64]) {
        self.traceFingerprint = traceFingerprint
        self.lineLengths = lineLengths
        self.digests = digests
    }

    /// The index file's bytes.
    public func encoded() -> [UInt8] {
        var bytes = Self.header(traceFingerprint: traceFingerprint, count: UInt64(digests.count))
        bytes.reserveCapacity(Self.headerBytes + Self.entryBytes * digests.count)
        for (length, digest) in zip(lineLengths, digests) { Self.appendEntry(length, digest, to: &bytes) }
        return bytes
    }

    /// The ``headerBytes`` an index file starts with.
    static func header(traceFingerprint: UInt64, count: UInt64) -> [UInt8] {
        var bytes = magic + Array(hex(traceFingerprint).utf8) + [0x0A]
        withUnsafeBytes(of: count.littleEndian) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// One entry: the line's length, then its event's digest.
    static func appendEntry(_ lineLength: UInt32, _ digest: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: lineLength.littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: digest.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Why an index file cannot be used.
    public struct Unusable: Error, Sendable, Equatable, CustomStringConvertible {
        /// The index file.
        public var path: String
        /// What is wrong with it.
        public var reason: String
        /// `path: reason`.
        public var description: String { "\(path): \(reason)" }
    }

    /// The fingerprint and entry count of an index's header (its first ``headerBytes`` bytes).
    static func header(_ bytes: [UInt8], path: String) throws(Unusable) -> (fingerprint: UInt64, count: UInt64) {
        guard bytes.count >= headerBytes, bytes.starts(with: magic) else {
            throw Unusable(path: path, reason: "not a baseline index (it does not start with \"TETHER-BASELINE-INDEX 1\")")
        }
        let hex = bytes[magic.count..<(magic.count + 16)]
        guard hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }), bytes[magic.count + 16] == 0x0A,
              let fingerprint = UInt64(String(decoding: hex, as: UTF8.self), radix: 16) else {
            throw Unusable(path: path, reason: "byte \(magic.count): expected the trace's fingerprint as 16 lower-case hex digits and a newline")
        }
        let count = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: magic.count + 17, as: UInt64.self)) }
        return (fingerprint, count)
    }

    /// Reads index bytes, checked whole: the header, and exactly as many entries as it says.
    public static func decode(_ bytes: [UInt8], path: String) throws(Unusable) -> BaselineIndex {
        let (fingerprint, count) = try header(bytes, path: path)
        guard (bytes.count - headerBytes) % entryBytes == 0, count == UInt64((bytes.count - headerBytes) / entryBytes) else {
            throw Unusable(path: path, reason: "the header says \(count) entries, the file holds \(bytes.count - headerBytes) bytes of entries (\(entryBytes) each)")
        }
        var lengths: [UInt32] = []
        var digests: [UInt64] = []
        lengths.reserveCapacity(Int(count))
        digests.reserveCapacity(Int(count))
        bytes.withUnsafeBytes { raw in
            var offset = headerBytes
            for _ in 0..<Int(count) {
                lengths.append(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                digests.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt64.self)))
                offset += entryBytes
            }
        }
        return BaselineIndex(traceFingerprint: fingerprint, lineLengths: lengths, digests: digests)
    }

    /// What ``lookUp(forTrace:)`` found.
    public enum Lookup: Sendable, Equatable {
        /// The index is there, describes the trace file as it is, and lists this many lines.
        case current(lines: Int)
        /// The trace file has no index beside it.
        case absent
        /// There is one, and it cannot be used (why): the trace is read without it.
        case unusable(Unusable)
    }

    /// The index beside the trace file at `tracePath`, checked against the file's fingerprint,
    /// and, when it is current, a reader of its entries (which reads them a block at a time: an
    /// index of ten hours of events is tens of MB, and a replay's memory must not grow with them).
    public static func lookUp(forTrace tracePath: String) -> (lookup: Lookup, entries: EntryReader?) {
        let indexPath = path(forTrace: tracePath)
        guard FileSystem.exists(indexPath) else { return (.absent, nil) }
        let reader: EntryReader
        do {
            reader = try EntryReader(path: indexPath)
        } catch {
            return (.unusable(error), nil)
        }
        let fingerprint: UInt64
        do {
            fingerprint = try ContentFingerprint.of(file: tracePath)
        } catch {
            return (.unusable(Unusable(path: indexPath, reason: "its trace file cannot be read: \(error)")), nil)
        }
        guard fingerprint == reader.traceFingerprint else {
            return (.unusable(Unusable(path: indexPath, reason: "it indexes another version of \(tracePath) (fingerprint \(hex(reader.traceFingerprint)), the file's is \(hex(fingerprint))); `tether replay --update-baseline` writes both anew")), nil)
        }
        return (.current(lines: reader.count), reader)
    }

    /// Reads an index file's entries in order, a block at a time, after checking its header and
    /// that its size is exactly the header and the entries it announces.
    public final class EntryReader {
        /// The index file.
        public let path: String
        /// The fingerprint of the trace file the index was written for.
        public let traceFingerprint: UInt64
        /// Entries in the file.
        public let count: Int
        private let descriptor: Int32
        private var block: [UInt8] = []
        private var blockStart = 0
        private var delivered = 0
        static let entriesPerBlock = 8192

        init(path: String) throws(Unusable) {
            self.path = path
            let fd: Int32
            do {
                fd = try FileSystem.openRegular(path)
            } catch {
                throw Unusable(path: path, reason: "it cannot be read: \(error)")
            }
            var header = [UInt8](repeating: 0, count: BaselineIndex.headerBytes)
            let got = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            let size = FileSystem.size(path) ?? 0
            func refuse(_ reason: String) -> Unusable {
                _ = close(fd)
                return Unusable(path: path, reason: reason)
            }
            guard got == header.count else { throw refuse("it is \(size) bytes, shorter than an index's \(BaselineIndex.headerBytes)-byte header") }
            let parsed: (fingerprint: UInt64, count: UInt64)
            do {
                parsed = try BaselineIndex.header(header, path: path)
            } catch {
                throw refuse(error.reason)
            }
            let expected = UInt64(BaselineIndex.headerBytes) + parsed.count * UInt64(BaselineIndex.entryBytes)
            guard parsed.count <= UInt64(Int.max / BaselineIndex.entryBytes), size == expected else {
                throw refuse("the header says \(parsed.count) entries (\(expected) bytes in all), the file is \(size) bytes")
            }
            descriptor = fd
            traceFingerprint = parsed.fingerprint
            count = Int(parsed.count)
        }

        deinit { _ = close(descriptor) }

        /// The next entry (the line's length and its event's digest); nil after the last one, or
        /// when the file can no longer be read (the caller then reads the trace itself).
        public func next() -> (lineLength: UInt32, digest: UInt64)? {
            guard delivered < count else { return nil }
            if blockStart >= block.count {
                let entries = min(Self.entriesPerBlock, count - delivered)
                block = [UInt8](repeating: 0, count: entries * BaselineIndex.entryBytes)
                var filled = 0
                while filled < block.count {
                    let got = block.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
                    if got < 0, errno == EINTR { continue }
                    guard got > 0 else { return nil }
                    filled += got
                }
                blockStart = 0
            }
            let entry = block.withUnsafeBytes { bytes in
                (UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: blockStart, as: UInt32.self)),
                 UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: blockStart + 4, as: UInt64.self)))
            }
            blockStart += BaselineIndex.entryBytes
            delivered += 1
            return entry
        }
    }

    /// Writes an index as its trace file is written, entry by entry, into a temporary file beside
    /// it (so memory does not grow with the trace), then puts the header in front and the file in
    /// place once the trace is (``commit()``).
    final class StreamingWriter {
        /// The trace file indexed, where it will be once committed.
        let tracePath: String
        private let temporaryPath: String
        private var descriptor: Int32
        private var buffer: [UInt8] = []
        private var count: UInt64 = 0
        private var failure: TraceFileError?
        /// The fingerprint of the trace's bytes as they are written (``traceBytesWritten(_:)``), so
        /// the trace is not read back for its header.
        private var traceFingerprint = ContentFingerprint()

        init(forTrace tracePath: String) throws(TraceFileError) {
            self.tracePath = tracePath
            let (folder, name) = FileSystem.split(BaselineIndex.path(forTrace: tracePath))
            temporaryPath = FileSystem.temporarySibling(of: FileSystem.join(folder, name), purpose: "tmp")
            descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw TraceFileError(path: temporaryPath, operation: "create baseline index", reason: FileSystem.errnoText())
            }
            // Room for the header, written last, when the trace's fingerprint is known.
            buffer = [UInt8](repeating: 0, count: BaselineIndex.headerBytes)
        }

        deinit { discard() }

        /// The trace's next bytes, as its writer hands them to the file.
        func traceBytesWritten(_ bytes: UnsafeRawBufferPointer) {
            traceFingerprint.update(bytes)
        }

        func append(lineLength: UInt32, digest: UInt64) {
            BaselineIndex.appendEntry(lineLength, digest, to: &buffer)
            count += 1
            if buffer.count >= 1 << 16 { flush() }
        }

        private func flush() {
            guard failure == nil, descriptor >= 0 else { return }
            if !writeAll(buffer) {
                failure = TraceFileError(path: temporaryPath, operation: "write baseline index", reason: FileSystem.errnoText())
            }
            buffer.removeAll(keepingCapacity: true)
        }

        private func writeAll(_ bytes: [UInt8], at offset: off_t? = nil) -> Bool {
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { raw in
                    if let offset {
                        return pwrite(descriptor, raw.baseAddress! + done, raw.count - done, offset + off_t(done))
                    }
                    return write(descriptor, raw.baseAddress! + done, raw.count - done)
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                done += n
            }
            return true
        }

        /// Writes the header (the fingerprint of every trace byte written), syncs the index and
        /// renames it beside the trace (now in place at ``tracePath``).
        func commit() throws(TraceFileError) {
            flush()
            let indexPath = BaselineIndex.path(forTrace: tracePath)
            func fail(_ error: TraceFileError) -> TraceFileError {
                discard()
                return error
            }
            if let failure { throw fail(failure) }
            guard writeAll(BaselineIndex.header(traceFingerprint: traceFingerprint.value, count: count), at: 0) else {
                throw fail(TraceFileError(path: temporaryPath, operation: "write baseline index", reason: FileSystem.errnoText()))
            }
            guard fsync(descriptor) == 0, close(descriptor) == 0 else {
                let error = TraceFileError(path: temporaryPath, operation: "sync baseline index", reason: FileSystem.errnoText())
                descriptor = -1
                throw fail(error)
            }
            descriptor = -1
            guard rename(temporaryPath, indexPath) == 0 else {
                throw fail(TraceFileError(path: indexPath, operation: "rename \(temporaryPath) to", reason: FileSystem.errnoText()))
            }
        }

        /// Closes and removes the temporary file; the index in place, if any, is left as it was.
        func discard() {
            if descriptor >= 0 {
                _ = close(descriptor)
                descriptor = -1
                unlink(temporaryPath)
            } else if FileSystem.exists(temporaryPath) {
                unlink(temporaryPath)
            }
        }
    }
}
