public import Agent
public import Foundation
public import SQLiteStore

#if canImport(Glibc)
import Glibc
#endif

/// `orderlive store restore FILE` (DESIGN §13): a backup becomes the store, with the agent stopped.
extension StateDirectory {
    /// What a restore did.
    public struct Restored: Sendable, Hashable {
        /// Where the replaced store was kept (its `-wal` beside it), nil when there was none.
        public var replacedPath: String?
        /// The restored file's check.
        public var check: StoreFileCheck
    }

    /// Replaces the order database with the backup at `file`: refused while an agent holds the store,
    /// and refused when `file` fails ``SQLiteStoreFile/check(_:)``; nothing changes then. The backup is
    /// copied (never moved: the operator's file stays theirs) beside the store, then the current
    /// database and its `-wal` are renamed to `orderlive.sqlite.replaced-<time>` and the copy takes its
    /// place. The next start opens it, migrates it if it is older, and resumes its stream cursor.
    public func restore(from file: String, now: Date = Date()) throws(StoreFileError) -> Restored {
        let lock: StateLock?
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            lock = try StateLock.take(self, exclusive: true)
        } catch let error as StoreFileLockError {
            throw StoreFileError(error.description)
        } catch {
            throw StoreFileError("cannot use the state directory \(path): \(error.localizedDescription)")
        }
        guard let lock else {
            throw StoreFileError("an agent is running on \(path) (it holds \(StateLock.path(in: self))); "
                + "stop it first (for example `systemctl stop orderlive`), then restore; nothing was changed")
        }
        defer { withExtendedLifetime(lock) {} }
        let check = SQLiteStoreFile.check(file)
        guard check.isSound else {
            throw StoreFileError("\(file) cannot be restored: \(check.problems.joined(separator: "; ")); nothing was changed")
        }
        let incoming = databasePath + ".restoring"
        unlink(incoming)
        try SQLiteStoreFile.backup(from: file, to: incoming, replacing: true)
        var replaced: String?
        if FileManager.default.fileExists(atPath: databasePath) {
            let kept = databasePath + ".replaced-" + Self.stamp(now)
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
                guard rename(databasePath + suffix, kept + suffix) == 0 else {
                    throw StoreFileError("cannot keep the current store as \(kept + suffix): \(String(cString: strerror(errno)))")
                }
            }
            unlink(databasePath + "-shm")
            replaced = kept
        }
        guard rename(incoming, databasePath) == 0 else {
            throw StoreFileError("cannot put the restored store in place at \(databasePath): \(String(cString: strerror(errno)))")
        }
        return Restored(replacedPath: replaced, check: check)
    }

    /// A file-name-safe UTC time: `20261126T031500Z`.
    static func stamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }
}
