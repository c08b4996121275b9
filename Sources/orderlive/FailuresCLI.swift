import Agent
import ArgumentParser
import CheckedInput
import Foundation
import StoreModel

/// `orderlive dead-letters`: what the agent gave up on, and why.
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "See what the agent gave up on (jobs that failed sync.max_attempts times, data it could not read) and why.",
        subcommands: [List.self, Show.self]
    )

    /// `orderlive dead-letters list`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the dead letters, oldest first.")

        @OptionGroup var config: ConfigOption

        @Flag(help: "A JSON array: id, kind, order_id, attempts, last_error, first_attempt_at, dead_at, version.")
        var json = false

        func run() async throws {
            let letters = try await readStore(config) { try await $0.deadLetters() } ?? []
            if json {
                LineWriter.standardOutput.write(line: FailureOutput.listJSON(letters))
            } else if letters.isEmpty {
                LineWriter.standardOutput.write(line: "No dead letters.")
            } else {
                for line in FailureOutput.listLines(letters) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }

    /// `orderlive dead-letters show ID`
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one dead letter: why it failed and what it carried.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The dead letter's id (`orderlive dead-letters list` shows them).")
        var id: String

        @Flag(help: "A JSON object, with what it carried as `raw`.")
        var json = false

        func validate() throws {
            guard Checked.int64(decimal: id).map({ $0 > 0 }) == true else {
                throw ValidationError("'\(id)' is not a dead letter id: ids are positive whole numbers (see `orderlive dead-letters list`)")
            }
        }

        func run() async throws {
            let number = Checked.int64(decimal: id) ?? 0
            guard let letter = try await readStore(config, { try await $0.deadLetter(id: number) }) ?? nil else {
                throw RuntimeFailure(description: "no dead letter \(id) in the local store; `orderlive dead-letters list` shows the ids")
            }
            if json {
                LineWriter.standardOutput.write(line: FailureOutput.json(letter, raw: true))
            } else {
                for line in FailureOutput.showLines(letter) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }
}

/// `orderlive journal`: the jobs waiting to be applied.
struct Journal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "See the jobs waiting in the journal, in the order the agent will apply them.",
        subcommands: [List.self]
    )

    /// `orderlive journal list`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the pending jobs: kind, order, attempts, next attempt, age.")

        @OptionGroup var config: ConfigOption

        @Option(help: "At most this many jobs, from the head of the journal.")
        var limit = 1_000

        @Flag(help: "A JSON array: id, kind, order_id, version, attempts, next_attempt_at, age_s, last_error, source.")
        var json = false

        func validate() throws {
            guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 1000000, got \(limit)") }
        }

        func run() async throws {
            let limit = self.limit
            let jobs = try await readStore(config) { try await $0.pendingJobs(limit: limit) } ?? []
            let now = Date().timeIntervalSince1970
            if json {
                LineWriter.standardOutput.write(line: FailureOutput.journalJSON(jobs, now: now))
            } else if jobs.isEmpty {
                LineWriter.standardOutput.write(line: "The journal is empty: nothing waits to be applied.")
            } else {
                for line in FailureOutput.journalLines(jobs, now: now) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }
}

/// Reads the configured store (either engine; nil when there is no SQLite file yet), the error
/// naming what could not be read.
private func readStore<T: Sendable>(
    _ config: ConfigOption, _ body: @escaping @Sendable (any OrderReader) async throws -> T
) async throws -> T? {
    let configuration = try await config.load()
    do {
        return try await ConfiguredStore.withReader(configuration, logger: authCommandLogger(), body)
    } catch {
        throw RuntimeFailure(description: "cannot read the order database: \(error)")
    }
}
