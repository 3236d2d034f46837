#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Seconds on the monotonic clock: the benchmarks time wall-clock intervals, never dates.
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// The process's peak resident set size in kB (`VmHWM` in /proc/self/status), or 0 where the
/// kernel does not provide it. Printed with every result, so a script needs no `/usr/bin/time`.
func peakResidentKB() -> Int {
    guard let f = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), f) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmHWM:") {
            return Int(text.dropFirst(6).filter(\.isNumber)) ?? 0
        }
    }
    return 0
}

/// A command-line mistake: printed with the usage, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// The arguments after the subcommand: positionals, and `--name value` / `--flag` options.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: String] = [:]
    private var flags: Set<String> = []

    /// `valued` names the options that take a value; every other `--name` is a flag.
    init(_ args: ArraySlice<String>, valued: Set<String>) throws(UsageError) {
        var i = args.startIndex
        while i < args.endIndex {
            let a = args[i]
            if a.hasPrefix("--") {
                let name = String(a.dropFirst(2))
                if valued.contains(name) {
                    guard i + 1 < args.endIndex else { throw UsageError(description: "\(a) needs a value") }
                    options[name] = args[i + 1]
                    i += 2
                    continue
                }
                flags.insert(name)
            } else {
                positionals.append(a)
            }
            i += 1
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func string(_ name: String) -> String? { options[name] }

    func int(_ name: String, default value: Int) throws(UsageError) -> Int {
        guard let text = options[name] else { return value }
        guard let n = Int(text), n > 0 else { throw UsageError(description: "--\(name) wants a positive integer, not \(text)") }
        return n
    }

    func positional(_ i: Int, _ what: String) throws(UsageError) -> String {
        guard positionals.indices.contains(i) else { throw UsageError(description: "missing \(what)") }
        return positionals[i]
    }
}

/// Formats a Double with a fixed number of decimals (no Foundation in this target).
func fixed(_ value: Double, _ decimals: Int) -> String {
    var buffer = [CChar](repeating: 0, count: 64)
    _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.\(decimals)f", $0) }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Writes one result line of `key=value` pairs to standard output, the form the scripts parse.
func report(_ pairs: KeyValuePairs<String, String>) {
    print(pairs.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
}

/// A file's size, for reports.
enum FileSize {
    static func of(_ path: String) throws(UsageError) -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { throw UsageError(description: "cannot stat \(path)") }
        return Int(st.st_size)
    }
}

/// A line on standard error.
func printError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
