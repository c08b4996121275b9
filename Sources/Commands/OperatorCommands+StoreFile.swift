import Agent
import Foundation
import SQLiteStore

/// `orderlive store backup|restore|check`: the SQLite store as a file — a backup of a running agent's
/// store, a restore with the agent stopped, a check. PostgreSQL has its own tools, which these name.
extension OperatorCommands {

    /// The configured SQLite state directory, or a failure that names PostgreSQL's own tool for `verb`.
    func sqliteDirectory(verb: String, tool: String) throws(CommandFailure) -> StateDirectory {
        guard configuration.store.backend == .sqlite else {
            throw CommandFailure("store.backend is postgres: `orderlive store \(verb)` is for the SQLite store; "
                + "with PostgreSQL use \(tool)")
        }
        return StateDirectory(configuration.store.stateDirectory)
    }

    /// Copies the store to `file`, consistent as of one commit, while the agent runs or not; the
    /// progress redrawn on standard error when it is a terminal.
    public func backupStore(to file: String, replacing: Bool) throws {
        let showsProgress = console.showsProgress
        let directory = try sqliteDirectory(
            verb: "backup", tool: "pg_dump (for example `pg_dump --format=custom --file=orderlive.dump DBNAME`)")
        guard FileManager.default.fileExists(atPath: directory.databasePath) else {
            throw CommandFailure("there is no store to back up at \(directory.databasePath) "
                + "(store.state_dir); start the agent once, or point --config at its configuration")
        }
        let started = Date()
        do {
            try SQLiteStoreFile.backup(from: directory.databasePath, to: file, replacing: replacing) { fraction in
                if showsProgress { FileHandle.standardError.write(Data("\rbacking up: \(Int(fraction * 100))%".utf8)) }
            }
        } catch {
            if showsProgress { FileHandle.standardError.write(Data("\n".utf8)) }
            throw CommandFailure("backup failed: \(error.description)")
        }
        if showsProgress { FileHandle.standardError.write(Data("\n".utf8)) }
        let check = SQLiteStoreFile.check(file)
        let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
        console.write("Backed up \(check.contents.isEmpty ? "the store" : check.contents) "
            + "to \(file) (\(size / 1024) KiB, \(seconds) s).")
    }

    /// Makes the backup `file` the store, with the agent stopped; the replaced store is kept beside it.
    public func restoreStore(from file: String) throws {
        let directory = try sqliteDirectory(
            verb: "restore", tool: "pg_restore (for example `pg_restore --clean --dbname=DBNAME orderlive.dump`)")
        let restored: StateDirectory.Restored
        do {
            restored = try directory.restore(from: file)
        } catch {
            throw CommandFailure("restore refused: \(error.description)")
        }
        console.write("Restored \(restored.check.contents) from \(file) to \(directory.databasePath).")
        if let kept = restored.replacedPath {
            console.write("The replaced store is kept as \(kept); remove it when the agent runs well.")
        }
        for note in restored.check.notes { console.write("Note: \(note).") }
    }

    /// Checks the store (or a backup `file`): SQLite's integrity check and the store's own invariants.
    public func checkStore(_ file: String?) throws {
        let path: String
        if let file {
            path = file
        } else {
            path = try sqliteDirectory(verb: "check", tool: "PostgreSQL's amcheck and pg_amcheck").databasePath
            guard FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure("there is no store at \(path) (store.state_dir) to check")
            }
        }
        let check = SQLiteStoreFile.check(path)
        if file != nil, !FileManager.default.fileExists(atPath: path) {
            throw CommandFailure("there is no file at \(path) to check")
        }
        guard check.isSound else {
            throw CommandFailure("store check failed for \(path): \(check.problems.joined(separator: "; ")); "
                + "restore a backup (`orderlive store restore FILE`) or, for the SQLite store, "
                + "delete it and let the agent sync everything again")
        }
        let held = check.contents.isEmpty ? "" : ", \(check.contents)"
        let notes = check.notes.map { "; \($0)" }.joined()
        console.write("ok: \(path): integrity ok\(held)\(notes)")
    }
}
