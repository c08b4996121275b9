// `orderlive-instructions WORKLOAD COUNT PREPARED`: prepares the input of PREPARED units of one
// workload, does the first COUNT of them, and exits. Scripts/bench-instructions.sh runs it under
// `valgrind --tool=callgrind` with COUNT = N and 2N and the same PREPARED = 2N: start-up and
// preparation are the same in both runs and cancel out of the difference, so the difference divided
// by N is the instructions of one unit of work. Instruction counts do not depend on the machine's
// load, so they show a regression or an improvement that wall-clock figures on a shared machine hide.
//
// Synchronous throughout: valgrind 3.19 (Debian 12) stops with an internal error on any program that
// starts Swift concurrency, so the async paths (the stream service's journal call, the executor's
// loop, the push server) are not counted here; the synchronous calls they make are.
//
// - `parse`: one realistic order event (about 500 bytes) through ServerSentEventParser in memory,
//   in 16 KiB chunks, its data made a `String` (`parse(_:emit:)`).
// - `parse-batched`: the same into one batch per chunk, the data left as bytes, as EventSource parses.
// - `store`: one full-order event, already parsed, committed and applied into SQLite as the agent
//   does it: translated (EventTranslator) and journaled with its cursor in batches of 100 (one
//   transaction each, as the stream service's group commit), then applied by the executor's one
//   transaction per run of whole-order jobs.
// - `store-unlaned`: `store` without the per-order lanes' walk (JobLanes), the executor's choice
//   before issue 54: the difference is the walk's cost per event.
// - `push`: one push request as `make bench`'s ingest benchmark sends it (one notification carrying
//   a whole order, about 200 bytes), on the server side after its body has arrived: parsed as Gorush
//   (`GorushRequest.parse`), translated (`PushTranslator`), and accepted into SQLite in a group commit
//   of its own, applied in that transaction (one write per push) — what `PushEndpoint` does between
//   reading the body and answering. Hummingbird, NIO and the task hand-offs around it are not counted.
// - `push-keyed`: the same with a `notif_id` and a `webhook-id`, each stored with the fingerprint of
//   its content (the notification's bytes, the whole body), as PushEndpoint does.
// - `page`: one order of a cold start: pages of 500 orders decoded (`OrdersClient.decodePage`) and
//   applied into an empty store (`applyPage`), then the full sync's end (`completeFullSync`).
// - `page-again`: one order of a second full sync of the same, unchanged orders (its pages' applies).

import Foundation
import SQLiteStore
import StoreModel
import OrderSync
import PushIngest
import Sandbox
import ServerSentEvents

struct Usage: Error, CustomStringConvertible {
    var description: String
}

/// `count` realistic order events on the wire, and where each one ends.
func events(_ count: Int) -> (bytes: [UInt8], ends: [Int]) {
    let feed = OrderFeed(orderCount: 50)
    var bytes: [UInt8] = []
    var ends: [Int] = []
    for sequence in 1...max(1, count) {
        bytes += Array(feed.wireEvent(sequence: sequence).utf8)
        ends.append(bytes.count)
    }
    return (bytes, ends)
}

func parse(_ bytes: ArraySlice<UInt8>, chunk: Int, _ each: (ServerSentEvent) -> Void) {
    var parser = ServerSentEventParser()
    var start = bytes.startIndex
    while start < bytes.endIndex {
        let end = min(start + chunk, bytes.endIndex)
        bytes[start..<end].withUnsafeBytes { raw in
            parser.parse(raw) { item in
                if case .event(let event) = item { each(event) }
            }
        }
        start = end
    }
}

func run(_ workload: String, count: Int, prepared: Int) throws {
    let (bytes, ends) = events(prepared)
    switch workload {
    case "parse":
        // The input is cut where the COUNT-th event ends.
        let length = count == 0 ? 0 : ends[min(count, ends.count) - 1]
        var parsed = 0
        parse(bytes[..<length], chunk: 16 * 1_024) { _ in parsed += 1 }
        guard parsed == count else { throw Usage(description: "parsed \(parsed) of \(count)") }
    case "parse-batched":
        let length = count == 0 ? 0 : ends[min(count, ends.count) - 1]
        var parser = ServerSentEventParser()
        var parsed = 0
        var start = 0
        while start < length {
            let end = min(start + 16 * 1_024, length)
            var batch = ServerSentEventBatch(reservingBytes: end - start, items: (end - start) / 128 + 4)
            bytes[start..<end].withUnsafeBytes { raw in parser.parse(raw, into: &batch) }
            for item in batch {
                if case .event = item { parsed += 1 }
            }
            start = end
        }
        guard parsed == count else { throw Usage(description: "parsed \(parsed) of \(count)") }
    case "store", "store-at-once", "store-unlaned":
        // `store`: journaled, then applied by the executor's batch, chosen by the per-order lanes'
        // rule (JobLanes) as the executor chooses it; `store-unlaned`: the same batch without the
        // lanes' walk (the executor before issue 54), so the difference is the walk's cost;
        // `store-at-once`: as `orderlive run` stores whole orders into an empty journal, applied in
        // the transaction that journals them.
        let atOnce = workload == "store-at-once"
        let laned = workload == "store"
        var all: [ServerSentEvent] = []
        parse(bytes[...], chunk: 16 * 1_024) { all.append($0) }
        let directory = NSTemporaryDirectory() + "orderlive-instructions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite", immediateApply: atOnce ? ImmediateApply() : nil)
        var start = 0
        while start < count {
            let end = min(start + 100, count)
            var jobs: [NewJob] = []
            var cursor: String?
            for event in all[start..<end] {
                jobs += EventTranslator.translate(event, now: 1_000).jobs
                if !event.lastEventID.isEmpty { cursor = event.lastEventID }
            }
            try store.journal(jobs, cursor: cursor)
            if !atOnce { try applyHead(of: store, laned: laned) }
            start = end
        }
        let counts = try store.counts()
        guard counts.journalDepth == 0, counts.orders > 0 else { throw Usage(description: "not applied: \(counts)") }
    case "push", "push-keyed":
        // The bodies of the ingest benchmark's wrk script, each order with its own id; `push-keyed`
        // adds a notif_id to each, and a webhook-id to each request, as a signing sender does: both
        // keys are stored with their content's fingerprint (issue 35).
        let keyed = workload == "push-keyed"
        let bodies = (1...max(1, prepared)).map { id in
            Array(("{\"notifications\":[{\"tokens\":[\"device-token-1\"],\"platform\":2,\"content_available\":true,"
                + (keyed ? "\"notif_id\":\"n-\(id)\"," : "")
                + "\"data\":{\"type\":\"order.status_changed\",\"order\":{\"id\":\(id),\"status\":\"picked_up\",\"version\":1,"
                + "\"store_id\":1,\"courier_id\":7}}}]}").utf8)
        }
        let directory = NSTemporaryDirectory() + "orderlive-instructions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite", immediateApply: ImmediateApply())
        let policy = SubmissionPolicy(dedupeSince: 0, highWaterJobs: 10_000_000)
        for body in bodies.prefix(count) {
            let request: GorushRequest
            switch GorushRequest.parse(body, maximumNotifications: 100) {
            case .success(let parsed): request = parsed
            case .failure(let error): throw Usage(description: "refused: \(error.message)")
            }
            let submission = IdempotentSubmission(
                requestKey: keyed ? "msg-\(request.notifications.first?.notifID ?? "")" : nil,
                requestFingerprint: keyed ? ContentFingerprint.of(body) : nil,
                parts: request.notifications.map {
                    IdempotentSubmission.Part(key: $0.notifID, fingerprint: $0.fingerprint, jobs: PushTranslator.jobs(for: $0, now: 1_000))
                },
                response: request.successBody)
            let outcomes: [SubmissionOutcome] = store.accept([submission], policy: policy)
            guard outcomes == [.accepted(jobs: 1, duplicateParts: 0, applied: 1)] else {
                throw Usage(description: "not applied at once: \(outcomes)")
            }
        }
        guard try store.counts().orders == count else { throw Usage(description: "stored \(try store.counts().orders) of \(count)") }
    case "page", "page-again":
        try applyPages(count: count, prepared: prepared, again: workload == "page-again")
    default:
        throw Usage(description: "unknown workload \(workload): parse, parse-batched, store, store-at-once, push, push-keyed, page or page-again")
    }
}

/// The `page` workload: pages of 500 orders as the Sandbox serves `GET /v1/orders` (DESIGN §3),
/// decoded and applied into an empty store as a cold start does, then the full sync's end. With
/// `again` (`page-again`), every prepared page is applied first and the counted pages are a second
/// full sync of the same orders, unchanged (its pages' applies; not its end): what a resync after a
/// lost cursor costs.
/// The executor's run of whole-order jobs from the journal's head: chosen by the per-order lanes
/// (`laned`), or the head as it is (the executor before issue 54).
func applyHead(of store: SQLiteOrderStore, laned: Bool) throws {
    let head = try store.headJobs(limit: 512)
    guard laned else {
        try store.applyInOneTransaction(head)
        return
    }
    var lanes = JobLanes(now: 2_000, paused: false, probeDue: false)
    lanes.consider(head)
    switch lanes.choice {
    case .batch(let jobs): try store.applyInOneTransaction(jobs)
    case .single(let job, _): try store.applyInOneTransaction([job])
    case .nothing: throw Usage(description: "the lanes chose nothing of \(head.count) jobs")
    }
}

func applyPages(count: Int, prepared: Int, again: Bool) throws {
    let pageSize = 500
    guard count % pageSize == 0, prepared % pageSize == 0 else { throw Usage(description: "page counts are whole pages of \(pageSize)") }
    let statuses = ["created", "assigned", "picked_up", "delivered"]
    let bodies = stride(from: 0, to: max(pageSize, prepared), by: pageSize).map { first in
        let orders = (first..<(first + pageSize)).map { id in
            "{\"id\":\(id + 1),\"status\":\"\(statuses[id % 4])\",\"version\":1,\"store_id\":\(id % 7),"
                + "\"courier_id\":\(id % 13),\"updated_at\":\"2026-11-26T10:00:00Z\",\"items\":[{\"sku\":\"sku-\(id % 50)\",\"qty\":1}],"
                + "\"customer\":{\"name\":\"Customer \(id)\"}}"
        }
        return Array(("{\"orders\":[" + orders.joined(separator: ",") + "],\"next_cursor\":\"c\(first + pageSize)\"}").utf8)
    }
    let directory = NSTemporaryDirectory() + "orderlive-instructions-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try SQLiteOrderStore(path: directory + "/orderlive.sqlite")
    if again {
        for body in bodies { try store.applyPage(try OrdersClient.decodePage(body, appliedAt: 1_000).orders) }
    }
    var kept = Set<String>()
    for body in bodies.prefix(count / pageSize) {
        let page = try OrdersClient.decodePage(body, appliedAt: 1_000)
        for order in page.orders { kept.insert(order.id) }
        try store.applyPage(page.orders)
    }
    // The second sync's end is left out: it would delete the orders of the pages not counted.
    if !again { _ = try store.completeFullSync(keeping: kept, completing: nil) }
    let expected = again ? max(pageSize, prepared) : count
    guard try store.counts().orders == expected else { throw Usage(description: "stored \(try store.counts().orders) of \(expected)") }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[2]), let prepared = Int(arguments[3]), count >= 0, prepared >= count else {
    FileHandle.standardError.write(Data("usage: orderlive-instructions parse|parse-batched|store|store-at-once|push|push-keyed|page|page-again COUNT PREPARED (PREPARED ≥ COUNT)\n".utf8))
    exit(2)
}
do {
    try run(arguments[1], count: count, prepared: prepared)
} catch {
    FileHandle.standardError.write(Data("orderlive-instructions: \(error)\n".utf8))
    exit(1)
}
