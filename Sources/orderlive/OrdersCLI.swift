import ArgumentParser
import Commands

/// `orderlive orders`
struct Orders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the local order store.",
        subcommands: [List.self, Show.self]
    )

    /// `orderlive orders list`
    struct List: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "List stored orders, sorted by id.")

        @OptionGroup var config: ConfigOption

        @Option(help: "Only orders with this status.") var status: String?

        @Flag(help: "A JSON array of the orders exactly as the backend sent them.") var json = false

        func perform(_ commands: OperatorCommands) async throws {
            try await commands.orders(status: status, json: json)
        }
    }

    /// `orderlive orders show ID`
    struct Show: OperatorCommand {
        static let configuration = CommandConfiguration(abstract: "Show one stored order.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The order id.") var id: String

        @Flag(help: "The order exactly as the backend sent it.") var json = false

        func perform(_ commands: OperatorCommands) async throws { try await commands.order(id: id, json: json) }
    }
}
