import Agent
import ArgumentParser
import Foundation
import OrderStore

#if canImport(Glibc)
import Glibc
#endif

/// `orderlive store`: the SQLite store as a file — a backup of a running agent's store, a restore
/// with the agent stopped, a check. PostgreSQL has its own tools, which these name.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Back the order store up, restore it, or check it (SQLite; PostgreSQL has pg_dump and pg_restore).",
        subcommands: [Backup.self, Restore.self, Check.self]
    )

    /// The configured SQLite state directory, or an error that names PostgreSQL's own tool for `verb`.
    static func sqliteDirectory(_ config: ConfigOption, verb: String, tool: String) async throws -> StateDirectory {
        let configuration = try await config.load()
        guard configuration.store.backend == .sqlite else {
            throw RuntimeFailure(description: "store.backend is postgres: `orderlive store \(verb)` is for the SQLite store; "
                + "with PostgreSQL use \(tool)")
        }
        return StateDirectory(configuration.store.stateDirectory)
    }

    /// `orderlive store backup FILE`
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the store to FILE, consistent as of one commit, while the agent runs or not.",
            discussion: "The copy is one standalone SQLite file (no -wal beside it), checked before it is put in place.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "Where to write the backup.")
        var file: String

        @Flag(help: "Replace FILE if it exists.")
        var force = false

        func run() async throws {
            let directory = try await StoreCommand.sqliteDirectory(
                config, verb: "backup", tool: "pg_dump (for example `pg_dump --format=custom --file=orderlive.dump DBNAME`)")
            guard FileManager.default.fileExists(atPath: directory.databasePath) else {
                throw RuntimeFailure(description: "there is no store to back up at \(directory.databasePath) "
                    + "(store.state_dir); start the agent once, or point --config at its configuration")
            }
            let showing = isatty(2) == 1
            let started = Date()
            do {
                try OrderStoreFile.backup(from: directory.databasePath, to: file, replacing: force) { fraction in
                    if showing { FileHandle.standardError.write(Data("\rbacking up: \(Int(fraction * 100))%".utf8)) }
                }
            } catch {
                if showing { FileHandle.standardError.write(Data("\n".utf8)) }
                throw RuntimeFailure(description: "backup failed: \(error.description)")
            }
            if showing { FileHandle.standardError.write(Data("\n".utf8)) }
            let check = OrderStoreFile.check(file)
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
            let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
            LineWriter.standardOutput.write(line: "Backed up \(check.contents.isEmpty ? "the store" : check.contents) "
                + "to \(file) (\(size / 1024) KiB, \(seconds) s).")
        }
    }

    /// `orderlive store restore FILE`
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the backup FILE the store, with the agent stopped; the replaced store is kept beside it.",
            discussion: "FILE is checked first (integrity, schema, invariants); the next start resumes from its stream cursor.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The backup to restore.")
        var file: String

        func run() async throws {
            let directory = try await StoreCommand.sqliteDirectory(
                config, verb: "restore", tool: "pg_restore (for example `pg_restore --clean --dbname=DBNAME orderlive.dump`)")
            let restored: StateDirectory.Restored
            do {
                restored = try directory.restore(from: file)
            } catch {
                throw RuntimeFailure(description: "restore refused: \(error.description)")
            }
            LineWriter.standardOutput.write(line: "Restored \(restored.check.contents) from \(file) to \(directory.databasePath).")
            if let kept = restored.replacedPath {
                LineWriter.standardOutput.write(line: "The replaced store is kept as \(kept); remove it when the agent runs well.")
            }
            for note in restored.check.notes { LineWriter.standardOutput.write(line: "Note: \(note).") }
        }
    }

    /// `orderlive store check [FILE]`
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the store (or a backup FILE): SQLite's integrity check and the store's own invariants.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "A store file to check instead of the configured one (a backup, before restoring it).")
        var file: String?

        func run() async throws {
            let path: String
            if let file {
                path = file
            } else {
                path = try await StoreCommand.sqliteDirectory(
                    config, verb: "check", tool: "PostgreSQL's amcheck and pg_amcheck").databasePath
                guard FileManager.default.fileExists(atPath: path) else {
                    throw RuntimeFailure(description: "there is no store at \(path) (store.state_dir) to check")
                }
            }
            let check = OrderStoreFile.check(path)
            if file != nil, !FileManager.default.fileExists(atPath: path) {
                throw RuntimeFailure(description: "there is no file at \(path) to check")
            }
            guard check.isSound else {
                throw RuntimeFailure(description: "store check failed for \(path): \(check.problems.joined(separator: "; ")); "
                    + "restore a backup (`orderlive store restore FILE`) or, for the SQLite store, "
                    + "delete it and let the agent sync everything again")
            }
            let held = check.contents.isEmpty ? "" : ", \(check.contents)"
            let notes = check.notes.map { "; \($0)" }.joined()
            LineWriter.standardOutput.write(line: "ok: \(path): integrity ok\(held)\(notes)")
        }
    }
}
