import Agent
import CheckedInput
import Logging
import StoreModel

/// `orderlive dead-letters retry|drop`: repairs of what the agent gave up on.
extension OperatorCommands {

    /// The repair asked for.
    public enum Repair: String, Sendable {
        /// Back in the journal with no attempts made.
        case retry
        /// Removed for good, each logged.
        case drop
    }

    /// A dead letter id: a positive whole number.
    public static func deadLetterID(_ text: String) throws(CommandUsageError) -> Int64 {
        guard let id = Checked.int64(decimal: text), id > 0 else {
            throw CommandUsageError("'\(text)' is not a dead letter id: ids are positive whole numbers (see `orderlive dead-letters list`)")
        }
        return id
    }

    /// The ids a repair is for, or nil for `--all`; the message says what is wrong with the choice.
    public static func chosenDeadLetters(ids: [String], all: Bool, repair: Repair) throws(CommandUsageError) -> [Int64]? {
        if all == !ids.isEmpty {
            throw CommandUsageError(all ? "give ids or --all, not both" : "name the dead letters to \(repair.rawValue) (ids), or --all")
        }
        var numbers: [Int64] = []
        for id in ids { numbers.append(try deadLetterID(id)) }
        return all ? nil : numbers
    }

    /// Runs one repair on the configured store: asks first for every dead letter (`ids` nil) on a
    /// terminal unless `confirmed`, names unknown ids (nothing changed, a failure), and logs one notice
    /// per dead letter it acted on.
    public func repairDeadLetters(_ repair: Repair, ids: [Int64]?, confirmed: Bool) async throws {
        if ids == nil, !confirmed, console.canAsk {
            let count = try await read { try await $0.deadLetters().count } ?? 0
            console.write("\(repair == .retry ? "Retry all" : "Drop all") \(count) dead letters? [y/N] ")
            guard let answer = console.readAnswer(), ["y", "yes"].contains(answer.lowercased()) else {
                console.write("Nothing changed.")
                return
            }
        }
        let outcome: DeadLetterChange?
        do {
            outcome = try await ConfiguredStore.withRepairs(configuration, logger: quietLogger()) { store in
                switch repair {
                case .retry: try await store.retryDeadLetters(ids)
                case .drop: try await store.dropDeadLetters(ids)
                }
            }
        } catch {
            throw CommandFailure("cannot change the order database: \(error)")
        }
        switch outcome ?? .done([]) {
        case .unknown(let unknown):
            throw CommandFailure("no dead letter \(unknown.map(String.init).joined(separator: ", ")) in the local store; "
                + "nothing was changed; `orderlive dead-letters list` shows the ids")
        case .done(let letters):
            // Notice lines: what the repair did, one line per dead letter.
            for letter in letters {
                var metadata: Logger.Metadata = [
                    "dead_letter.id": "\(letter.id ?? 0)", "dead_letter.kind": "\(letter.kind)",
                    "order_id": "\(letter.orderID ?? "-")",
                ]
                if repair == .retry { metadata["job.kind"] = "\(letter.retryJob().kind.rawValue)" }
                notices.notice("dead letter \(repair == .retry ? "retried" : "dropped")", metadata: metadata)
            }
            let noun = "dead letter\(letters.count == 1 ? "" : "s")"
            console.write(repair == .retry
                ? "Retried \(letters.count) \(noun): back in the journal with no attempts made."
                : "Dropped \(letters.count) \(noun).")
        }
    }
}
