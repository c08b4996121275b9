import Agent
import CheckedInput
public import Foundation
import StoreModel

/// `orderlive orders` and `orderlive journal`: reading the configured store, either engine.
extension OperatorCommands {

    /// Reads the configured store (nil when there is no SQLite file yet), the error naming what could
    /// not be read.
    func read<T: Sendable>(_ body: @escaping @Sendable (any OrderReader) async throws -> T) async throws -> T? {
        do {
            return try await ConfiguredStore.withReader(configuration, logger: quietLogger(), body)
        } catch {
            throw CommandFailure("cannot read the order database: \(error)")
        }
    }

    /// `orders list`: the stored orders, sorted by id, optionally of one status.
    public func orders(status: String?, json: Bool) async throws {
        let orders = try await read { try await $0.orders(status: status) } ?? []
        console.list(
            orders, json: json, empty: "No orders" + (status.map { " with status \($0)" } ?? "") + ".",
            document: OrderOutput.listJSON, lines: OrderOutput.listLines)
    }

    /// `orders show ID`: one stored order, readable or exactly as the backend sent it.
    public func order(id: String, json: Bool) async throws {
        guard let order = try await read({ try await $0.order(id: id) }) ?? nil else {
            throw CommandFailure("no order \(id) in the local store")
        }
        if json {
            console.write(order.body)
        } else {
            for line in OrderOutput.showLines(order) { console.write(line) }
        }
    }

    /// `journal list`: at most `limit` pending jobs from the head of the journal.
    public func journal(limit: Int, json: Bool, now: Double = Date().timeIntervalSince1970) async throws {
        let jobs = try await read { try await $0.pendingJobs(limit: limit) } ?? []
        console.list(
            jobs, json: json, empty: "The journal is empty: nothing waits to be applied.",
            document: { FailureOutput.journalJSON($0, now: now) }, lines: { FailureOutput.journalLines($0, now: now) })
    }

    /// `dead-letters list`: what the agent gave up on, oldest first.
    public func deadLetters(json: Bool) async throws {
        let letters = try await read { try await $0.deadLetters() } ?? []
        console.list(letters, json: json, empty: "No dead letters.", document: FailureOutput.listJSON, lines: FailureOutput.listLines)
    }

    /// `dead-letters show ID`: why one failed and what it carried.
    public func deadLetter(id: String, json: Bool) async throws {
        let number = try Self.deadLetterID(id)
        guard let letter = try await read({ try await $0.deadLetter(id: number) }) ?? nil else {
            throw CommandFailure("no dead letter \(id) in the local store; `orderlive dead-letters list` shows the ids")
        }
        if json {
            console.write(FailureOutput.json(letter, raw: true))
        } else {
            for line in FailureOutput.showLines(letter) { console.write(line) }
        }
    }

    /// The journal's `--limit`: 1 to 1,000,000.
    public static func checkJournalLimit(_ limit: Int) throws(CommandUsageError) {
        guard (1...1_000_000).contains(limit) else { throw CommandUsageError("--limit must be between 1 and 1000000, got \(limit)") }
    }
}
