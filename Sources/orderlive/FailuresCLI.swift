import ArgumentParser
import Commands

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
            try await config.commands().deadLetters(json: json)
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
            try usage(OperatorCommands.deadLetterID(id))
        }

        func run() async throws {
            try await config.commands().deadLetter(id: id, json: json)
        }
    }

    /// `orderlive dead-letters retry ID… | --all`
    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the journal with no attempts made; a running agent applies them within a second.")

        @OptionGroup var config: ConfigOption
        @OptionGroup var chosen: ChosenDeadLetters

        func validate() throws { try chosen.validate(.retry) }

        func run() async throws { try await chosen.run(.retry, config) }
    }

    /// `orderlive dead-letters drop ID… | --all`
    struct Drop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove dead letters for good, each logged (id, kind, order); --all asks first on a terminal.")

        @OptionGroup var config: ConfigOption
        @OptionGroup var chosen: ChosenDeadLetters

        func validate() throws { try chosen.validate(.drop) }

        func run() async throws { try await chosen.run(.drop, config) }
    }

    /// The dead letters a repair is for: ids, or `--all`.
    struct ChosenDeadLetters: ParsableArguments {
        @Argument(help: "The dead letters' ids (`orderlive dead-letters list` shows them).")
        var ids: [String] = []

        @Flag(help: "Every dead letter.")
        var all = false

        @Flag(help: "With --all, do not ask on a terminal.")
        var yes = false

        func validate(_ repair: OperatorCommands.Repair) throws {
            try usage(OperatorCommands.chosenDeadLetters(ids: ids, all: all, repair: repair))
        }

        func run(_ repair: OperatorCommands.Repair, _ config: ConfigOption) async throws {
            let wanted = try OperatorCommands.chosenDeadLetters(ids: ids, all: all, repair: repair)
            try await config.commands().repairDeadLetters(repair, ids: wanted, confirmed: yes)
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
            try usage(OperatorCommands.checkJournalLimit(limit))
        }

        func run() async throws {
            try await config.commands().journal(limit: limit, json: json)
        }
    }
}
