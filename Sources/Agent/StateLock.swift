import AsyncSignals
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The state directory's lock file, `orderlive.lock` (DESIGN §13): a running agent holds it shared for
/// its whole life, and `orderlive store restore` holds it exclusively while it swaps the database, so
/// a restore never replaces a store under a running agent and an agent never opens a store that is
/// being replaced. `flock(2)` locks belong to the open file: the kernel releases them when the
/// process ends, however it ends, so a crashed agent leaves no stale lock behind.
public final class StateLock: Sendable {
    /// The descriptor of the open lock file, -1 once closed; closing it releases the lock.
    private let descriptor: Locked<Int32>

    private init(descriptor: Int32) {
        self.descriptor = Locked(descriptor)
    }

    deinit { release() }

    /// Releases the lock (closes the file); later calls do nothing.
    public func release() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    /// The lock file's path in `directory`.
    public static func path(in directory: StateDirectory) -> String { directory.path + "/orderlive.lock" }

    /// Takes the lock shared (the running agent) or exclusive (a restore), without waiting; nil when
    /// another process holds it the other way.
    public static func take(_ directory: StateDirectory, exclusive: Bool) throws(StoreFileLockError) -> StateLock? {
        let path = path(in: directory)
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreFileLockError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var result: Int32
        repeat {
            result = flock(descriptor, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB)
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let reason = errno
            close(descriptor)
            if reason == EWOULDBLOCK { return nil }
            throw StoreFileLockError(description: "cannot lock \(path): \(String(cString: strerror(reason)))")
        }
        return StateLock(descriptor: descriptor)
    }
}

/// The lock file could not be opened or locked (not: another process holds it).
public struct StoreFileLockError: Error, Sendable, CustomStringConvertible {
    /// The one-line message.
    public var description: String
}
