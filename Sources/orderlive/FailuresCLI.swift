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
    struct List: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "List the dead letters, oldest first.")

        @OptionGroup var config: ConfigOption

        @Flag(help: "A JSON array: id, kind, order_id, attempts, last_error, first_attempt_at, dead_at, version.")
        var json = false

        func perform(_ commands: OperatorCommands) async throws { try await commands.deadLetters(json: json) }
    }

    /// `orderlive dead-letters show ID`
    struct Show: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "Show one dead letter: why it failed and what it carried.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The dead letter's id (`orderlive dead-letters list` shows them).") var id: String

        @Flag(help: "A JSON object, with what it carried as `raw`.") var json = false

        func validate() throws {
            try usage(OperatorCommands.deadLetterID(id))
        }

        func perform(_ commands: OperatorCommands) async throws { try await commands.deadLetter(id: id, json: json) }
    }

    /// `orderlive dead-letters retry ID… | --all`
    struct Retry: DeadLetterRepairCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put dead letters back in the journal with no attempts made; a running agent applies them within a second.")
        static let repair = OperatorCommands.Repair.retry
        @OptionGroup var chosen: ChosenDeadLetters
    }

    /// `orderlive dead-letters drop ID… | --all`
    struct Drop: DeadLetterRepairCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove dead letters for good, each logged (id, kind, order); --all asks first on a terminal.")
        static let repair = OperatorCommands.Repair.drop
        @OptionGroup var chosen: ChosenDeadLetters
    }

    /// The configuration and the dead letters a repair is for: ids, or `--all`.
    struct ChosenDeadLetters: ParsableArguments {
        @OptionGroup var config: ConfigOption

        @Argument(help: "The dead letters' ids (`orderlive dead-letters list` shows them).") var ids: [String] = []

        @Flag(help: "Every dead letter.") var all = false

        @Flag(help: "With --all, do not ask on a terminal.") var yes = false
    }
}

/// `orderlive dead-letters retry|drop`: one rule for choosing the dead letters (ids or `--all`, not
/// both, not neither) and one call that repairs them.
protocol DeadLetterRepairCommand: OperatorCommand {
    /// What the command does to the chosen dead letters.
    static var repair: OperatorCommands.Repair { get }
    /// The configuration and the chosen dead letters.
    var chosen: DeadLetters.ChosenDeadLetters { get }
}

extension DeadLetterRepairCommand {
    var config: ConfigOption { chosen.config }

    func validate() throws {
        try usage(OperatorCommands.chosenDeadLetters(ids: chosen.ids, all: chosen.all, repair: Self.repair))
    }

    func perform(_ commands: OperatorCommands) async throws {
        let wanted = try OperatorCommands.chosenDeadLetters(ids: chosen.ids, all: chosen.all, repair: Self.repair)
        try await commands.repairDeadLetters(Self.repair, ids: wanted, confirmed: chosen.yes)
    }
}

/// `orderlive journal`: the jobs waiting to be applied.
struct Journal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "See the jobs waiting in the journal, in the order the agent will apply them.",
        subcommands: [List.self]
    )

    /// `orderlive journal list`
    struct List: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "List the pending jobs: kind, order, attempts, next attempt, age.")

        @OptionGroup var config: ConfigOption

        @Option(help: "At most this many jobs, from the head of the journal.") var limit = 1_000

        @Flag(help: "A JSON array: id, kind, order_id, version, attempts, next_attempt_at, age_s, last_error, source.")
        var json = false

        func validate() throws {
            try usage(OperatorCommands.checkJournalLimit(limit))
        }

        func perform(_ commands: OperatorCommands) async throws { try await commands.journal(limit: limit, json: json) }
    }
}
