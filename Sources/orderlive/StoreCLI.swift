import ArgumentParser
import Commands
import Foundation

/// `orderlive store`: the SQLite store as a file — a backup of a running agent's store, a restore
/// with the agent stopped, a check. PostgreSQL has its own tools, which these name.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Back the order store up, restore it, or check it (SQLite; PostgreSQL has pg_dump and pg_restore).",
        subcommands: [Backup.self, Restore.self, Check.self]
    )

    /// `orderlive store backup FILE`
    struct Backup: OperatorCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the store to FILE, consistent as of one commit, while the agent runs or not.",
            discussion: "The copy is one standalone SQLite file (no -wal beside it), checked before it is put in place.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "Where to write the backup.") var file: String

        @Flag(help: "Replace FILE if it exists.") var force = false

        func perform(_ commands: OperatorCommands) async throws {
            try commands.backupStore(to: file, replacing: force)
        }
    }

    /// `orderlive store restore FILE`
    struct Restore: OperatorCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the backup FILE the store, with the agent stopped; the replaced store is kept beside it.",
            discussion: "FILE is checked first (integrity, schema, invariants); the next start resumes from its stream cursor.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The backup to restore.") var file: String

        func perform(_ commands: OperatorCommands) async throws { try commands.restoreStore(from: file) }
    }

    /// `orderlive store check [FILE]`
    struct Check: OperatorCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check the store (or a backup FILE): SQLite's integrity check and the store's own invariants.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "A store file to check instead of the configured one (a backup, before restoring it).")
        var file: String?

        func perform(_ commands: OperatorCommands) async throws { try commands.checkStore(file) }
    }
}
