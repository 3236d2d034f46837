import CaptureKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// A trace as a stream: the engine hands each event to a sink as it is made, a trace file is
// written a buffer at a time and read a line at a time, so replay, its checks and its baseline
// comparison run in memory that does not grow with the capture (docs/replay-engine.md).

/// Where a replay's trace events go, one at a time, in trace order.
public protocol TraceSink {
    /// The next event of the trace.
    mutating func write(_ event: TraceEvent)
}

/// An array collects the whole trace (tests, short captures).
extension Array: TraceSink where Element == TraceEvent {
    public mutating func write(_ event: TraceEvent) { append(event) }
}

/// Writes trace events to a file as JSON Lines, exactly the bytes of ``TraceFile/encodeBytes(_:)``,
/// through a fixed-size buffer.
///
/// Opened on a plain path (``init(path:)``), it writes there; opened with ``replacing(_:)``, it
/// writes a temporary file beside the path and ``commit()`` syncs it and renames it over the
/// path, so a reader sees the old file or the new one, never half of one. A failed write is kept
/// and thrown by ``close()`` / ``commit()``; later events are dropped.
public final class TraceFileWriter: TraceSink {
    /// The file being written (the temporary one when replacing).
    public let path: String
    /// The file ``commit()`` renames onto, when replacing.
    public let destination: String?
    /// Events written so far.
    public private(set) var events = 0
    /// Bytes handed to the file so far (the buffer included).
    public private(set) var bytes: UInt64 = 0
    private var descriptor: Int32
    private var buffer = TraceJSONBytes()
    private var failure: TraceFileError?
    /// Folders ``replacing(_:)`` made for the destination, outermost first: removed again (when
    /// still empty) unless the file is committed, so a failed run leaves no empty folder behind.
    private var createdFolders: [String] = []
    private var committed = false
    /// Flushed to the file when this full: large enough that `write(2)` costs nothing per event.
    static let bufferSize = 256 * 1024
    /// The index written beside the trace, when ``recordLineIndex()`` asked for one.
    private var lineIndex: BaselineIndex.StreamingWriter?

    /// Writes a ``BaselineIndex`` of the trace beside it (`<file>.index`), entry by entry as
    /// events are written, put in place by ``commit()`` after the trace. Call before the first event.
    /// - Throws: ``TraceFileError`` when the index's temporary file cannot be created.
    public func recordLineIndex() throws(TraceFileError) {
        precondition(events == 0, "TraceFileWriter.recordLineIndex() after \(events) events")
        lineIndex = try BaselineIndex.StreamingWriter(forTrace: destination ?? path)
    }

    /// Creates (or truncates) the file at `path` and writes there.
    /// - Throws: ``TraceFileError`` when it cannot be created.
    public convenience init(path: String) throws(TraceFileError) {
        try self.init(path: path, destination: nil)
    }

    private init(path: String, destination: String?) throws(TraceFileError) {
        self.path = path
        self.destination = destination
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw TraceFileError(path: path, operation: "create trace file", reason: FileSystem.errnoText()) }
        buffer.bytes.reserveCapacity(Self.bufferSize + 4096)
    }

    /// Writes a temporary file beside `path` (creating `path`'s folder if needed); ``commit()``
    /// puts it in place.
    /// - Throws: ``TraceFileError`` when the folder or the file cannot be created.
    public static func replacing(_ path: String) throws(TraceFileError) -> TraceFileWriter {
        let (folder, name) = FileSystem.split(path)
        var created: [String] = []
        do throws(FileSystemError) {
            try FileSystem.makeDirectories(folder, created: &created)
        } catch {
            removeEmptyFolders(created)
            guard case .io(let failed, let operation, let reason) = error else {
                throw TraceFileError(path: folder, operation: "create folder", reason: error.description)
            }
            throw TraceFileError(path: failed, operation: operation, reason: reason)
        }
        do {
            let writer = try TraceFileWriter(path: FileSystem.temporarySibling(of: FileSystem.join(folder, name), purpose: "tmp"), destination: path)
            writer.createdFolders = created
            return writer
        } catch {
            removeEmptyFolders(created)
            throw error
        }
    }

    deinit {
        if descriptor >= 0 {
            _ = systemClose(descriptor)
            if destination != nil { unlink(path) }
        }
        if !committed { Self.removeEmptyFolders(createdFolders) }
    }

    public func write(_ event: TraceEvent) {
        guard failure == nil else { return }
        let lineStart = buffer.bytes.count
        buffer.appendEvent(event)
        buffer.bytes.append(0x0A)
        lineIndex?.append(lineLength: UInt32(truncatingIfNeeded: buffer.bytes.count - lineStart), digest: event.stableDigest)
        events += 1
        if buffer.bytes.count >= Self.bufferSize { flush() }
    }

    /// Hands the buffer to the file.
    private func flush() {
        guard failure == nil, descriptor >= 0 else { return }
        var offset = 0
        let count = buffer.bytes.count
        while offset < count {
            let n = buffer.bytes.withUnsafeBytes { raw in
                systemWrite(descriptor, raw.baseAddress! + offset, count - offset)
            }
            if n < 0 {
                if errno == EINTR { continue }
                failure = TraceFileError(path: path, operation: "write trace file", reason: FileSystem.errnoText())
                return
            }
            offset += n
        }
        bytes += UInt64(count)
        if let lineIndex { buffer.bytes.withUnsafeBytes { lineIndex.traceBytesWritten($0) } }
        buffer.bytes.removeAll(keepingCapacity: true)
    }

    /// Writes what is buffered and closes the file.
    /// - Throws: the first write failure, or ``TraceFileError`` when closing fails.
    public func close() throws(TraceFileError) {
        flush()
        try finish(sync: false)
    }

    /// Writes what is buffered, syncs and closes the temporary file and renames it over the
    /// destination (then syncs the folder). On failure the temporary file is removed and the
    /// destination left as it was.
    /// - Throws: the first write failure, or ``TraceFileError`` naming the step that failed.
    public func commit() throws(TraceFileError) {
        flush()
        try finish(sync: true)
        guard let destination else {
            try lineIndex?.commit()
            lineIndex = nil
            return
        }
        guard rename(path, destination) == 0 else {
            let error = TraceFileError(path: destination, operation: "rename \(path) to", reason: FileSystem.errnoText())
            unlink(path)
            throw error
        }
        committed = true
        try lineIndex?.commit()
        lineIndex = nil
        let folder = FileSystem.split(destination).dir
        let fd = open(folder, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            _ = systemClose(fd)
        }
    }

    /// Closes the file and, when replacing, removes the temporary one and the folders made for it:
    /// the destination is left as it was.
    public func discard() {
        if descriptor >= 0 {
            _ = systemClose(descriptor)
            descriptor = -1
        }
        if destination != nil { unlink(path) }
        lineIndex?.discard()
        lineIndex = nil
        Self.removeEmptyFolders(createdFolders)
        createdFolders = []
        failure = failure ?? TraceFileError(path: path, operation: "write trace file", reason: "discarded")
    }

    private func finish(sync: Bool) throws(TraceFileError) {
        guard descriptor >= 0 else {
            throw failure ?? TraceFileError(path: path, operation: "write trace file", reason: "already closed")
        }
        var error = failure
        if error == nil, sync, fsync(descriptor) != 0 {
            error = TraceFileError(path: path, operation: "sync trace file", reason: FileSystem.errnoText())
        }
        if systemClose(descriptor) != 0, error == nil {
            error = TraceFileError(path: path, operation: "close trace file", reason: FileSystem.errnoText())
        }
        descriptor = -1
        if let error {
            if destination != nil { unlink(path) }
            failure = error
            throw error
        }
    }

    /// Removes `folders`, innermost first, each only if empty (`rmdir(2)` refuses otherwise).
    static func removeEmptyFolders(_ folders: [String]) {
        for folder in folders.reversed() { _ = rmdir(folder) }
    }
}

/// `close(2)`, named apart from ``TraceFileWriter/close()``.
private func systemClose(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #elseif canImport(Musl)
    Musl.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}

/// `write(2)`, named apart from ``TraceFileWriter/write(_:)``.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, buffer, count)
    #elseif canImport(Musl)
    Musl.write(descriptor, buffer, count)
    #else
    Darwin.write(descriptor, buffer, count)
    #endif
}

/// Reads a trace file one event at a time, through a fixed-size buffer: the events of
/// ``TraceFile/read(_:)``, with the same errors, in memory that does not grow with the file.
public final class TraceFileReader {
    /// The file read; errors name it.
    public let path: String
    /// 1-based number of the line the next event is read from.
    public private(set) var lineNumber = 1
    private var descriptor: Int32
    /// Bytes read from the file and not yet parsed; `start` is the first of them.
    private var pending: [UInt8] = []
    private var start = 0
    private var endOfFile = false
    static let chunkSize = 256 * 1024
    /// What ``fill()`` appends before reading into it: an array appends an array as one copy,
    /// where `repeatElement` goes element by element in an unoptimised build (half of a debug
    /// replay's time with a large baseline).
    private static let emptyChunk = [UInt8](repeating: 0, count: chunkSize)

    /// Opens the trace file at `path`.
    /// - Throws: ``TraceFileError`` when it cannot be read, worded as ``TraceFile/read(_:)`` words it.
    public init(path: String) throws(TraceFileError) {
        self.path = path
        switch TraceFileError.openForReading(path) {
        case .success(let fd): descriptor = fd
        case .failure(let error): throw error
        }
    }

    /// Opens the trace file at `path` to read from byte `offset`, the start of line `lineNumber`
    /// (what a ``BaselineIndex`` knows), so errors name the right line.
    /// - Throws: ``TraceFileError`` when it cannot be read or the offset cannot be reached.
    public convenience init(path: String, offset: UInt64, lineNumber: Int) throws(TraceFileError) {
        try self.init(path: path)
        guard lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else {
            throw TraceFileError(path: path, operation: "seek to byte \(offset) of trace file", reason: FileSystem.errnoText())
        }
        self.lineNumber = lineNumber
    }

    deinit {
        if descriptor >= 0 { _ = systemClose(descriptor) }
    }

    /// The next event, or `nil` at the end of the file. Blank lines are skipped.
    /// - Throws: ``TraceFormatError`` for a malformed line (file, line, column, as
    ///   ``TraceFile/decode(_:file:)`` reports it); ``TraceFileError`` when reading fails.
    public func next() throws -> TraceEvent? {
        while true {
            guard let range = try nextLine() else { return nil }
            defer { lineNumber += 1 }
            if pending[range].allSatisfy(TraceJSONParser.isWhitespace) { continue }
            var parser = TraceJSONParser(bytes: Array(pending[range]), line: lineNumber, file: path)
            return try parser.parseEvent()
        }
    }

    /// What the next line of the file is, measured against the bytes of an expected line.
    public enum LineComparison {
        /// The next line is exactly the expected bytes: the event they encode, not parsed.
        case identical
        /// The next line differs from them: the event it holds, parsed.
        case event(TraceEvent)
        /// The file has no more events.
        case end
    }

    /// The next event compared with `expected`, the event the caller expects: when the next line
    /// is exactly what ``TraceEvent/jsonLine()`` writes for it, the line is passed over without
    /// being parsed (``LineComparison/identical``), which is what makes a baseline that agrees
    /// with its replay cheap to read. An inline `datapoint` is checked by walking the line
    /// against its values; any other event is written into `scratch` and compared byte for byte.
    /// Blank lines are skipped, as ``next()`` skips them.
    /// - Throws: what ``next()`` throws.
    public func next(comparingWith expected: TraceEvent, scratch: inout [UInt8]) throws -> LineComparison {
        var written = false
        while true {
            guard let range = try nextLine() else { return .end }
            defer { lineNumber += 1 }
            var same = range.isEmpty ? false : pending.withUnsafeBytes { file in
                TraceLineMatch.dataPoint(expected, line: UnsafeRawBufferPointer(rebasing: file[range]), scratch: &numberScratch)
            }
            if same == nil {
                if !written {
                    expected.encodeJSONLine(into: &scratch)
                    written = true
                }
                same = range.count == scratch.count && (range.isEmpty || pending.withUnsafeBytes { file in
                    scratch.withUnsafeBytes { line in
                        memcmp(file.baseAddress! + range.lowerBound, line.baseAddress!, range.count) == 0
                    }
                })
            }
            if same == true { return .identical }
            if pending[range].allSatisfy(TraceJSONParser.isWhitespace) { continue }
            var parser = TraceJSONParser(bytes: Array(pending[range]), line: lineNumber, file: path)
            return .event(try parser.parseEvent())
        }
    }

    /// Where the bytes of the next line (without its `\n`) are in `pending`, valid until the
    /// next read; the text after the last `\n` counts as a
    /// line (empty when the file ends with one), as ``TraceFile/decode(_:file:)`` splits.
    private func nextLine() throws -> Range<Int>? {
        var scanned = start
        let limit = maximumLineBytes
        while true {
            if let newline = Self.firstNewline(in: pending, from: scanned) {
                if newline - start > limit { throw TraceLimits.lineTooLong(file: path, line: lineNumber) }
                let line = start..<newline
                start = newline + 1
                return line
            }
            if endOfFile {
                if finished { return nil }
                finished = true
                if pending.count - start > limit { throw TraceLimits.lineTooLong(file: path, line: lineNumber) }
                let line = start..<pending.count
                start = pending.count
                return line
            }
            // No newline yet: a line longer than the limit is refused as soon as the limit is
            // passed, before the rest of it is read, so a 100 MB line costs at most the limit.
            if pending.count - start > limit { throw TraceLimits.lineTooLong(file: path, line: lineNumber) }
            // `fill` moves the unparsed bytes to the front: what was scanned stays scanned.
            let alreadyScanned = pending.count - start
            try fill()
            scanned = alreadyScanned
        }
    }

    /// The index of the first `\n` in `bytes` at or after `from`: `memchr`, which an unoptimised
    /// build does not turn a generic search into.
    private static func firstNewline(in bytes: [UInt8], from: Int) -> Int? {
        guard from < bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw -> Int? in
            guard let found = memchr(raw.baseAddress! + from, 0x0A, raw.count - from) else { return nil }
            return UnsafeRawPointer(found) - raw.baseAddress!
        }
    }

    /// Where ``next(comparingWith:scratch:)`` writes a double's digits; kept to reuse its storage.
    private var numberScratch = TraceJSONBytes()

    private var finished = false
    /// ``TraceLimits/maximumLineBytes`` when the file was opened (the environment is read once).
    private let maximumLineBytes = TraceLimits.maximumLineBytes

    /// Reads the next chunk of the file, keeping the unparsed bytes.
    private func fill() throws(TraceFileError) {
        if start > 0 {
            pending.removeFirst(start)
            start = 0
        }
        let old = pending.count
        // No reserveCapacity here: reserving exactly old + chunk on every fill reallocates (and
        // copies the whole pending line) each time, which made long lines quadratic; `append`
        // grows the buffer geometrically.
        pending.append(contentsOf: Self.emptyChunk)
        while true {
            let n = pending.withUnsafeMutableBytes { raw in read(descriptor, raw.baseAddress! + old, Self.chunkSize) }
            if n < 0 {
                if errno == EINTR { continue }
                let error = TraceFileError(path: path, operation: "read trace file", reason: FileSystem.errnoText())
                pending.removeLast(Self.chunkSize)
                throw error
            }
            pending.removeLast(Self.chunkSize - n)
            if n == 0 {
                endOfFile = true
                _ = systemClose(descriptor)
                descriptor = -1
            }
            return
        }
    }
}
