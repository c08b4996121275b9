import CheckedInput
import StoreModel

extension OperatorCommands {
    /// Where a replay starts: a change id, or the changes applied from an RFC 3339 time.
    public enum ReplayStart: Sendable, Equatable {
        /// The changes after this change id (seq).
        case after(Int64)
        /// The changes applied from this time (Unix seconds).
        case since(Double)

        /// Reads `--since`: a whole number or an RFC 3339 time.
        public init(_ text: String) throws(CommandUsageError) {
            if let number = Checked.nonNegative(decimal: text) {
                self = .after(number)
            } else if let at = Checked.rfc3339(text) {
                self = .since(at)
            } else {
                throw CommandUsageError(
                    "--since takes a change id (a whole number) or an RFC 3339 time such as 2026-11-26T09:00:00Z, not '\(text)'")
            }
        }
    }

    /// Sends an endpoint again what the change log still holds from `start`: its cursor is rewound, and
    /// a running agent starts within a second. Refused, with nothing changed, when the log no longer
    /// holds the changes after that point.
    public func replayWebhook(_ id: Int64, from start: ReplayStart, named: String) async throws {
        let from = try await withOutbox { store -> Int64 in
            guard try await store.webhookEndpoints().contains(where: { $0.id == id }) else { throw Self.unknownWebhook(id) }
            let seq: Int64
            switch start {
            case .after(let number):
                seq = number
            case .since(let at):
                guard let before = try await store.lastChange(before: at) else {
                    throw CommandFailure("the change log holds no changes to replay")
                }
                seq = before
            }
            if case .reset(let reason) = try await store.changes(after: seq, limit: 1) {
                throw CommandFailure("cannot replay from \(named): \(reason); nothing was changed")
            }
            guard try await store.rewindWebhookEndpoint(id: id, to: seq) else { throw Self.unknownWebhook(id) }
            return seq
        }
        console.write("Webhook endpoint \(id) is sent the changes after \(from) again (a running agent starts within a second).")
    }
}
