// The budget's second reference for push ingest on PostgreSQL (DESIGN §9, issue 61): pgbench at the
// same 50 clients running the agent's own per-push transaction — the statements the fenced leader
// runs for a batch applied in place (`PostgresOrderStore.inPlaceBatchStatements`, the store's own SQL
// text, not a copy), for one whole-order push per transaction, each a new order. The agent's pushes
// should reach at least as many per second: it shares one transaction among the pushes that arrive
// together, where pgbench commits each alone.

import Foundation
import PostgresStore

/// The account pgbench's pushes are applied to; a leadership row is made for it, so the epoch's
/// read under the fence's share lock finds one, as the leader's does.
let pgbenchPushAccount = "pgbench-push"

/// The pgbench script (`-M simple`): `BEGIN`, the leader's statements for one push with their `$n`
/// parameters written as literals of one new order `:n`, `COMMIT`. Throws when a statement names a
/// parameter this script does not know (the store's statements changed: extend the table below).
func pgbenchPushScript() throws -> String {
    let account = "'\(pgbenchPushAccount)'"
    let id = "(:n)::text"
    let body = #"'{"id":' || :n || ',"status":"picked_up","version":1,"store_id":1,"courier_id":7}'"#
    let keys = "ARRAY['notification:pgbench-' || :n]"
    let response = #"ARRAY['{"counts":1,"success":"ok","logs":[]}']"#
    // Each statement's parameters, in `PostgresOrderStore.inPlaceBatchStatements`' order.
    let parameters: [[Int: String]] = [
        [1: account],
        [1: account, 2: "10000000", 3: keys, 4: "0"],
        [1: account, 2: "ARRAY[\(id)]"],
        [
            1: account, 2: "1700000000", 3: keys, 4: response,
            // The order: id, status, store, courier, version, updated_at (null: mask 1 | 2 | 4),
            // body, applied_at, mask; no delete, no tombstone.
            5: "ARRAY[\(id)]", 6: "ARRAY['picked_up']", 7: "ARRAY['1']", 8: "ARRAY['7']", 9: "ARRAY[1]",
            10: "ARRAY['']", 11: "ARRAY[\(body)]", 12: "ARRAY[1700000000]", 13: "ARRAY[7]", 14: "'{}'",
            15: "'{}'", 16: "'{}'", 17: "'{}'", 18: "'{}'", 19: "'{}'", 20: "'{}'",
            // Its change: upserted, version, body, status, store, courier (mask 1 | 2 | 4 | 8 | 16).
            21: "ARRAY[\(id)]", 22: "ARRAY['upserted']", 23: "ARRAY[1]", 24: "ARRAY[\(body)]",
            25: "ARRAY['picked_up']", 26: "ARRAY['1']", 27: "ARRAY['7']", 28: "ARRAY['']", 29: "ARRAY['']",
            30: "ARRAY['']", 31: "ARRAY['']", 32: "ARRAY[31]", 33: "'\(PostgresOrderStore.changeChannel)'",
        ],
    ]
    let statements = PostgresOrderStore.inPlaceBatchStatements
    guard statements.count == parameters.count else {
        throw BenchFailure("the leader's push transaction has \(statements.count) statements; the pgbench script knows \(parameters.count)")
    }
    var script = "\\set n random(1, 1000000000000)\nBEGIN;\n"
    for (statement, values) in zip(statements, parameters) {
        script += try substituting(values, into: statement) + ";\n"
    }
    return script + "COMMIT;\n"
}

/// `sql` with each `$n` replaced by `values[n]`.
private func substituting(_ values: [Int: String], into sql: String) throws -> String {
    var result = ""
    var index = sql.startIndex
    while index < sql.endIndex {
        let character = sql[index]
        index = sql.index(after: index)
        guard character == "$" else {
            result.append(character)
            continue
        }
        let digits = sql[index...].prefix(while: \.isNumber)
        guard let number = Int(digits), let value = values[number] else {
            throw BenchFailure("the pgbench script has no value for $\(digits) in: \(sql)")
        }
        result += value
        index = digits.endIndex
    }
    return result
}
