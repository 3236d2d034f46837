#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

private func posixClose(_ fd: Int32) -> Int32 { close(fd) }

/// A buffered sink for writers: a file (bytes reach the OS with write(2) when the buffer fills or on
/// `flush`) or memory (every byte kept until the writer is dropped).
///
/// The buffer is raw memory rather than an array so that appending a field is a bounds check and a
/// store; hot fields are `@exclusivity(unchecked)`, as in ``ByteInput``, to keep the runtime checks
/// off that path: a writer is used by one thread at a time (LiveCapture's `Recorder` holds a lock)
/// and none of its methods calls back into it while one of its fields is being changed.
final class ByteOutput {
    let name: String
    private let fd: Int32
    let isMemory: Bool
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var count = 0
    private let flushThreshold: Int
    @exclusivity(unchecked) private var closed = false
    /// Bytes written so far, including pending ones.
    @exclusivity(unchecked) private(set) var offset: UInt64 = 0

    init(path: String, flushThreshold: Int = 1 << 20) throws(CaptureError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 {
            let reason = String(cString: strerror(errno))
            throw CaptureError(
                kind: .io, file: path, offset: 0, expected: "to create the file", found: reason,
                hint: "Check that the folder exists and is writable.")
        }
        name = path
        self.fd = fd
        isMemory = false
        self.flushThreshold = flushThreshold
        capacity = flushThreshold + 65536
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    init(name: String = "<memory>") {
        self.name = name
        fd = -1
        isMemory = true
        flushThreshold = Int.max
        capacity = 4096
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        if !isMemory && !closed {
            // Best effort only: a writer dropped without close() still hands over what it buffered.
            _ = try? flush(sync: false)
            _ = posixClose(fd)
        }
        storage.deallocate()
    }

    /// Every byte written, for a memory sink (pending bytes for a file sink).
    var buffer: [UInt8] { Array(UnsafeRawBufferPointer(start: storage, count: count)) }

    func checkOpen() throws(CaptureError) {
        if closed {
            throw CaptureError(
                kind: .misuse, file: name, offset: offset, expected: "an open writer", found: "a closed writer",
                hint: "Do not write after close(); create a new writer.")
        }
    }

    @inline(__always)
    private func room(_ n: Int) -> UnsafeMutableRawPointer {
        if count &+ n > capacity { grow(count &+ n) }
        let p = storage + count
        count &+= n
        offset &+= UInt64(n)
        return p
    }

    private func grow(_ needed: Int) {
        let newCapacity = max(needed, capacity &* 2)
        let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        newStorage.copyMemory(from: storage, byteCount: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    @inline(__always) func u8(_ v: UInt8) { room(1).storeBytes(of: v, as: UInt8.self) }
    @inline(__always) func u16(_ v: UInt16) { room(2).storeBytes(of: v.littleEndian, as: UInt16.self) }
    @inline(__always) func u32(_ v: UInt32) { room(4).storeBytes(of: v.littleEndian, as: UInt32.self) }
    @inline(__always) func u64(_ v: UInt64) { room(8).storeBytes(of: v.littleEndian, as: UInt64.self) }
    @inline(__always) func u32BE(_ v: UInt32) { room(4).storeBytes(of: v.bigEndian, as: UInt32.self) }
    @inline(__always) func u64BE(_ v: UInt64) { room(8).storeBytes(of: v.bigEndian, as: UInt64.self) }
    @inline(__always) func bytes(_ b: UnsafeRawBufferPointer) {
        guard let base = b.baseAddress, b.count > 0 else { return }
        room(b.count).copyMemory(from: base, byteCount: b.count)
    }
    func bytes(_ b: [UInt8]) { b.withUnsafeBytes { bytes($0) } }
    /// Zero bytes up to the next multiple of 4 after `length` bytes.
    @inline(__always) func pad(_ length: Int) {
        let n = (4 &- (length & 3)) & 3
        if n > 0 { room(n).initializeMemory(as: UInt8.self, repeating: 0, count: n) }
    }

    /// Hands buffered bytes to the OS once enough have gathered.
    @inline(__always)
    func flushIfFull() throws(CaptureError) {
        if count >= flushThreshold { try flush(sync: false) }
    }

    func flush(sync: Bool) throws(CaptureError) {
        if isMemory { return }
        try checkOpen()
        var written = 0
        while written < count {
            let n = write(fd, storage + written, count &- written)
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                // Keep what was not written, so a later flush can retry it.
                storage.copyMemory(from: storage + written, byteCount: count &- written)
                count &-= written
                throw CaptureError(
                    kind: .io, file: name, offset: offset &- UInt64(count), expected: "to write the file",
                    found: reason, hint: "Check free disk space and that the file is still writable.")
            }
            written &+= n
        }
        count = 0
        if sync && fsync(fd) != 0 {
            throw CaptureError(
                kind: .io, file: name, offset: offset, expected: "to sync the file to disk",
                found: String(cString: strerror(errno)), hint: "Check the disk.")
        }
    }

    func close() throws(CaptureError) {
        if closed { return }
        if isMemory { closed = true; return }
        try flush(sync: false)
        closed = true
        if posixClose(fd) != 0 {
            throw CaptureError(
                kind: .io, file: name, offset: offset, expected: "to close the file", found: String(cString: strerror(errno)),
                hint: "The data may not all be on disk; check the disk and the file.")
        }
    }
}

/// `bytes.withUnsafeBytes`, keeping the typed error (the standard library's version rethrows `any Error`).
@inline(__always)
func withBorrowedBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(CaptureError) -> R) throws(CaptureError) -> R {
    let result: Result<R, CaptureError> = bytes.withUnsafeBytes { p in
        Result { () throws(CaptureError) -> R in try body(p) }
    }
    return try result.get()
}
