import Foundation

extension NSLock {
    /// Runs `body` holding the lock, carrying a typed error out (NSLock's own `withLock` rethrows
    /// untyped).
    func locked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
