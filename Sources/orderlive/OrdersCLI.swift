import Agent
import ArgumentParser
import OrderStore
import StoreModel

/// `orderlive orders`
struct Orders: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the local order store.",
        subcommands: [List.self, Show.self]
    )

    /// `orderlive orders list`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List stored orders, sorted by id.")

        @OptionGroup var config: ConfigOption

        @Option(help: "Only orders with this status.")
        var status: String?

        @Flag(help: "A JSON array of the orders exactly as the backend sent them.")
        var json = false

        func run() async throws {
            let status = self.status
            let orders = try await readStore(config) { try await $0.orders(status: status) } ?? []
            if json {
                LineWriter.standardOutput.write(line: OrderOutput.listJSON(orders))
            } else if orders.isEmpty {
                LineWriter.standardOutput.write(line: "No orders" + (status.map { " with status \($0)" } ?? "") + ".")
            } else {
                for line in OrderOutput.listLines(orders) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }

    /// `orderlive orders show ID`
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one stored order.")

        @OptionGroup var config: ConfigOption

        @Argument(help: "The order id.")
        var id: String

        @Flag(help: "The order exactly as the backend sent it.")
        var json = false

        func run() async throws {
            let id = self.id
            guard let order = try await readStore(config, { try await $0.order(id: id) }) ?? nil else {
                throw RuntimeFailure(description: "no order \(id) in the local store")
            }
            if json {
                LineWriter.standardOutput.write(line: order.body)
            } else {
                for line in OrderOutput.showLines(order) { LineWriter.standardOutput.write(line: line) }
            }
        }
    }
}
