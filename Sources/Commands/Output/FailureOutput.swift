import Agent
import Foundation
import JSONToolkit
public import StoreModel

/// `dead-letters list|show` and `journal list`: what failed and what waits, as aligned lines or JSON.
/// Times are RFC 3339 UTC. What a dead letter keeps is what the agent was given (an order body, an
/// event's text), never a token or a secret: those are never in a job.
public enum FailureOutput {
    /// One dead letter as a JSON object: `id`, `kind`, `order_id` (null when not about one order),
    /// `attempts`, `last_error`, `first_attempt_at` (null when it never was a job), `dead_at`,
    /// `version`, and with `raw` what it carried.
    public static func json(_ letter: DeadLetterRecord, raw: Bool = false) -> String {
        var fields = [
            "\"id\":\(letter.id.map(String.init) ?? "null")",
            "\"kind\":\(JSONText.string(letter.kind))",
            "\"order_id\":\(letter.orderID.map(JSONText.string) ?? "null")",
            "\"attempts\":\(letter.attempts)",
            "\"last_error\":\(JSONText.string(letter.reason))",
            "\"first_attempt_at\":\(letter.firstAttemptAt.map { JSONText.string(StatusDocument.rfc3339($0)) } ?? "null")",
            "\"dead_at\":\(JSONText.string(StatusDocument.rfc3339(letter.createdAt)))",
            "\"version\":\(letter.version.map(String.init) ?? "null")",
        ]
        if raw { fields.append("\"raw\":\(JSONText.string(letter.raw))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `dead-letters list --json`: an array, oldest first.
    public static func listJSON(_ letters: [DeadLetterRecord]) -> String {
        "[" + letters.map { json($0) }.joined(separator: ",") + "]"
    }

    /// `dead-letters list`: one aligned line per dead letter.
    public static func listLines(_ letters: [DeadLetterRecord]) -> [String] {
        table(["ID", "KIND", "ORDER", "ATTEMPTS", "DEAD AT", "LAST ERROR"], letters.map { letter in
            [letter.id.map(String.init) ?? "-", letter.kind, letter.orderID ?? "-", "\(letter.attempts)",
             StatusDocument.rfc3339(letter.createdAt), oneLine(letter.reason)]
        })
    }

    /// `dead-letters show`: its fields, one per line, then what it carried.
    public static func showLines(_ letter: DeadLetterRecord) -> [String] {
        [
            "id:               \(letter.id.map(String.init) ?? "-")",
            "kind:             \(letter.kind)",
            "order:            \(letter.orderID ?? "-")",
            "version:          \(letter.version.map(String.init) ?? "-")",
            "attempts:         \(letter.attempts)",
            "first attempt at: \(letter.firstAttemptAt.map(StatusDocument.rfc3339) ?? "-")",
            "dead at:          \(StatusDocument.rfc3339(letter.createdAt))",
            "last error:       \(oneLine(letter.reason))",
            "raw:              \(letter.raw.isEmpty ? "-" : oneLine(letter.raw))",
        ]
    }

    /// One pending job as a JSON object: `id`, `kind`, `order_id`, `version`, `attempts`,
    /// `next_attempt_at` (null when due now), `age_s` at `now`, `last_error`, `source`.
    public static func json(_ job: JobRecord, now: Double) -> String {
        let fields = [
            "\"id\":\(job.id.map(String.init) ?? "null")",
            "\"kind\":\(JSONText.string(job.kind.rawValue))",
            "\"order_id\":\(job.orderID.map(JSONText.string) ?? "null")",
            "\"version\":\(job.version.map(String.init) ?? "null")",
            "\"attempts\":\(job.attempts)",
            "\"next_attempt_at\":\(job.notBefore > now ? JSONText.string(StatusDocument.rfc3339(job.notBefore)) : "null")",
            "\"age_s\":\(Int64(max(0, (now - job.createdAt).rounded(.down))))",
            "\"last_error\":\(job.lastError.map(JSONText.string) ?? "null")",
            "\"source\":\(JSONText.string(job.source))",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `journal list --json`: an array in the order the jobs will be applied.
    public static func journalJSON(_ jobs: [JobRecord], now: Double) -> String {
        "[" + jobs.map { json($0, now: now) }.joined(separator: ",") + "]"
    }

    /// `journal list`: one aligned line per pending job.
    public static func journalLines(_ jobs: [JobRecord], now: Double) -> [String] {
        table(["ID", "KIND", "ORDER", "ATTEMPTS", "NEXT ATTEMPT", "AGE"], jobs.map { job in
            [job.id.map(String.init) ?? "-", job.kind.rawValue, job.orderID ?? "-", "\(job.attempts)",
             job.notBefore > now ? StatusDocument.rfc3339(job.notBefore) : "now",
             "\(Int64(max(0, (now - job.createdAt).rounded(.down)))) s"]
        })
    }

    static func oneLine(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\r", with: " ")
        return flat.count > 200 ? String(flat.prefix(200)) + "…" : flat
    }

    static func table(_ header: [String], _ rows: [[String]]) -> [String] {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
