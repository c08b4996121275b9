import Agent
import ArgumentParser
import CheckedInput
import Foundation
import Logging
import StoreModel

#if canImport(Glibc)
import Glibc
#endif

/// `orderlive dead-letters`: what the agent gave up on, and why.
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "See what the agent gave up on (jobs that failed sync.max_attempts times, data it could not read) and why.",
        subcommands: [List.self, Show.self, Retry.self, Drop.self]
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

extension DeadLetters {
    /// `orderlive dead-letters retry ID… | --all`
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the journal with no attempts made; a running agent applies them within a second.")

        @OptionGroup var config: ConfigOption
        @OptionGroup var chosen: ChosenDeadLetters

        func validate() throws { try chosen.validate(verb: "retry") }

        func run() async throws {
            try await repair(config, chosen, verb: "retry", confirm: "Retry all") { try await $0.retryDeadLetters($1) }
        }
    }

    /// `orderlive dead-letters drop ID… | --all`
    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove dead letters for good, each logged (id, kind, order); --all asks first on a terminal.")

        @OptionGroup var config: ConfigOption
        @OptionGroup var chosen: ChosenDeadLetters

        func validate() throws { try chosen.validate(verb: "drop") }

        func run() async throws {
            try await repair(config, chosen, verb: "drop", confirm: "Drop all") { try await $0.dropDeadLetters($1) }
        }
    }

    /// The dead letters a repair is for: ids, or `--all`.
    struct ChosenDeadLetters: ParsableArguments {
        @Argument(help: "The dead letters' ids (`orderlive dead-letters list` shows them).")
        var ids: [String] = []

        @Flag(help: "Every dead letter.")
        var all = false

        @Flag(help: "With --all, do not ask on a terminal.")
        var yes = false

        func validate(verb: String) throws {
            if all == !ids.isEmpty {
                throw ValidationError(all ? "give ids or --all, not both" : "name the dead letters to \(verb) (ids), or --all")
            }
            for id in ids where Checked.int64(decimal: id).map({ $0 > 0 }) != true {
                throw ValidationError("'\(id)' is not a dead letter id: ids are positive whole numbers (see `orderlive dead-letters list`)")
            }
        }

        /// The ids, or nil for every one.
        var wanted: [Int64]? { all ? nil : ids.compactMap { Checked.int64(decimal: $0) } }
    }

    /// Runs one repair on the configured store: asks first for `--all` on a terminal, names unknown ids
    /// (nothing changed, exit 1), and writes one notice line per dead letter it acted on.
    static func repair(
        _ config: ConfigOption, _ chosen: ChosenDeadLetters, verb: String, confirm: String,
        _ change: @escaping @Sendable (any DeadLetterRepair, [Int64]?) async throws -> DeadLetterChange
    ) async throws {
        let configuration = try await config.load()
        let wanted = chosen.wanted
        if chosen.all, !chosen.yes, isatty(0) == 1 {
            let count = try await readStore(config) { try await $0.deadLetters().count } ?? 0
            LineWriter.standardOutput.write(line: "\(confirm) \(count) dead letters? [y/N] ")
            guard let answer = readLine(strippingNewline: true), ["y", "yes"].contains(answer.lowercased()) else {
                LineWriter.standardOutput.write(line: "Nothing changed.")
                return
            }
        }
        let outcome: DeadLetterChange?
        do {
            outcome = try await ConfiguredStore.withRepairs(configuration, logger: authCommandLogger()) { store in
                try await change(store, wanted)
            }
        } catch {
            throw RuntimeFailure(description: "cannot change the order database: \(error)")
        }
        switch outcome ?? .done([]) {
        case .unknown(let unknown):
            throw RuntimeFailure(description: "no dead letter \(unknown.map(String.init).joined(separator: ", ")) in the local store; "
                + "nothing was changed; `orderlive dead-letters list` shows the ids")
        case .done(let letters):
            // Notice lines on stderr: what the repair did, one line per dead letter.
            let logger = commandLogger("orderlive", level: .notice)
            let done = verb == "retry" ? "retried" : "dropped"
            for letter in letters {
                var metadata: Logger.Metadata = [
                    "dead_letter.id": "\(letter.id ?? 0)", "dead_letter.kind": "\(letter.kind)",
                    "order_id": "\(letter.orderID ?? "-")",
                ]
                if verb == "retry" { metadata["job.kind"] = "\(letter.retryJob().kind.rawValue)" }
                logger.notice("dead letter \(done)", metadata: metadata)
            }
            let noun = "dead letter\(letters.count == 1 ? "" : "s")"
            LineWriter.standardOutput.write(line: verb == "retry"
                ? "Retried \(letters.count) \(noun): back in the journal with no attempts made."
                : "Dropped \(letters.count) \(noun).")
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
