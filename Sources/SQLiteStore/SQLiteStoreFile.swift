import Foundation
import GRDB
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

/// The store's file as a whole (`orderlive store backup|restore|check`, DESIGN §13): a consistent,
/// standalone copy of a store an agent is writing, and the checks a file must pass before it is
/// trusted. Neither opens the file through ``SQLiteOrderStore``, which would migrate it: a check never
/// writes what it checks.
public enum SQLiteStoreFile {
    /// The migrations this build knows, oldest first: a file with one beyond them was written by a
    /// newer orderlive.
    public static var knownMigrations: [String] { SQLiteOrderStore.migrator.migrations }

    /// Copies the SQLite store at `source` to `destination` with SQLite's online backup, in one read
    /// transaction, so the copy is the store as of one commit however much is written meanwhile (WAL
    /// readers do not block the writer). The copy is written beside `destination`, switched to the
    /// rollback journal (one file, no `-wal` needed beside it), checked with `quick_check`, synced and
    /// renamed into place, so `destination` is never a torn file. `progress` hears the fraction copied.
    public static func backup(
        from source: String, to destination: String, replacing: Bool, progress: @escaping (Double) -> Void = { _ in }
    ) throws(StoreFileError) {
        if !replacing, FileManager.default.fileExists(atPath: destination) {
            throw StoreFileError("\(destination) already exists; choose another file, or --force to replace it")
        }
        let partial = destination + ".partial-\(getpid())"
        let descriptor = open(partial, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreFileError("cannot write \(destination): \(String(cString: strerror(errno))); choose a writable path")
        }
        close(descriptor)
        var finished = false
        defer { if !finished { unlink(partial) } }
        do {
            let from = try DatabaseQueue(path: source, configuration: readOnly)
            let copy = try DatabaseQueue(path: partial)
            try copy.writeWithoutTransaction { target in
                try from.read { db in
                    try db.backup(to: target, pagesPerStep: 1_024) { step in
                        let total = max(1, step.totalPageCount)
                        progress(Double(total - step.remainingPageCount) / Double(total))
                    }
                }
                try target.execute(sql: "PRAGMA journal_mode = DELETE")
                let verdict = try String.fetchAll(target, sql: "PRAGMA quick_check")
                guard verdict == ["ok"] else {
                    throw StoreFileError("the copy failed its check: \(verdict.prefix(3).joined(separator: "; "))")
                }
            }
            try copy.close()
            try from.close()
        } catch let error as StoreFileError {
            throw error
        } catch {
            throw StoreFileError("cannot copy \(source) to \(destination): \(error)")
        }
        try sync(partial)
        guard rename(partial, destination) == 0 else {
            throw StoreFileError("cannot move the copy to \(destination): \(String(cString: strerror(errno)))")
        }
        finished = true
        try sync(URL(fileURLWithPath: destination).deletingLastPathComponent().path)
    }

    /// Flushes `path` (a file or a directory) to the disk.
    static func sync(_ path: String) throws(StoreFileError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreFileError("cannot open \(path) to sync it: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StoreFileError("cannot sync \(path): \(String(cString: strerror(errno)))") }
    }

    static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        return configuration
    }
}

/// Why a store file could not be copied, checked or restored, in words that say what to do.
public struct StoreFileError: Error, Sendable, CustomStringConvertible {
    /// The one-line message.
    public var description: String

    /// Creates the error.
    public init(_ description: String) {
        self.description = description
    }
}
