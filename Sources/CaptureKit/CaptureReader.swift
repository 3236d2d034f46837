/// A streaming reader of one capture file, in constant memory whatever the file's size.
///
/// Read with ``next()`` until it returns `nil`; then ``warnings`` says whether the file ended early.
/// ``interfaces`` grows as a pcapng file describes new interfaces, and always covers every frame
/// returned so far.
public protocol CaptureReader: AnyObject {
    /// The file's format.
    var format: CaptureFormat { get }
    /// The file's path as given, for messages.
    var path: String { get }
    /// Every interface described so far.
    var interfaces: [CaptureInterface] { get }
    /// Warnings so far (a truncated tail is reported here when ``next()`` returns `nil`).
    var warnings: [CaptureWarning] { get }
    /// Bytes consumed so far, for progress display.
    var bytesRead: UInt64 { get }
    /// The next frame, or `nil` at the end of the file (or at a truncated tail).
    /// - Throws: ``CaptureError`` for damage other than a truncated tail.
    func next() throws(CaptureError) -> CaptureFrame?
    /// The next frame's header and a view of its bytes that is valid only during `body`, with no
    /// allocation per frame: the fast path for scanning large files. Returns `false` at the end.
    func withNextFrame(_ body: (FrameView) throws -> Void) throws -> Bool
}

/// A frame whose bytes are borrowed from the reader's buffer; see ``CaptureReader/withNextFrame(_:)``.
public struct FrameView {
    /// 1-based position in the file, as ``CaptureFrame/number``.
    public var number: Int
    /// Index into the reader's ``CaptureReader/interfaces``.
    public var interfaceIndex: Int
    /// Capture time, nanoseconds since the Unix epoch.
    public var timestampNs: Int64
    /// Length on the wire; `data.count` is the captured length.
    public var originalLength: Int
    /// Valid only inside the closure given to ``CaptureReader/withNextFrame(_:)``.
    public var data: UnsafeRawBufferPointer
    /// The pcapng `epb_flags`, as ``CaptureFrame/flags`` (`nil` when the block has none or the
    /// format has no such field). A reader whose ``CaptureReader/next()`` gives flags gives them
    /// here too: replay dissects borrowed frames, and LINKTYPE 187 takes its direction from them.
    public var flags: UInt32?

    /// A view over borrowed bytes; see ``CaptureReader/withNextFrame(_:)``.
    public init(number: Int, interfaceIndex: Int, timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer, flags: UInt32? = nil) {
        self.number = number
        self.interfaceIndex = interfaceIndex
        self.timestampNs = timestampNs
        self.originalLength = originalLength
        self.data = data
        self.flags = flags
    }
}

extension CaptureReader {
    /// ``withNextFrame(_:)`` with a `body` that cannot throw, so that anything thrown is the
    /// file's damage, typed: a reader's own ``CaptureError`` as it is, anything else as an I/O
    /// error naming frame `framesRead + 1` when `framesRead` is given. Returns `false` at the end.
    public func withNextFrameView(framesRead: Int? = nil, _ body: (FrameView) -> Void) throws(CaptureError) -> Bool {
        do {
            return try withNextFrame(body)
        } catch let error as CaptureError {
            throw error
        } catch {
            throw CaptureError(kind: .io, file: path, offset: bytesRead, recordNumber: framesRead.map { $0 + 1 },
                               expected: "a readable frame", found: "\(error)", hint: "Check the file with `tether inspect`.")
        }
    }

    /// Hands every remaining frame to `body` as a borrowed view, to the end of the file: a scan
    /// that reads each frame once and keeps what it needs.
    public func forEachFrameView(_ body: (FrameView) -> Void) throws(CaptureError) {
        var framesRead = 0
        while try withNextFrameView(framesRead: framesRead, body) { framesRead += 1 }
    }
}
