import AsyncSignals
import EventStream
import InMemoryTracing
import OrderSync
import Sandbox
import ServerSentEvents
import SQLiteStore
import StoreModel
import TestHarnesses
import TestKit
import Testing
import Tracing

/// DESIGN §14: each attempt of a job is a span with its kind, order and outcome, and a full sync is
/// one trace with a span per page, under swift-distributed-tracing's in-memory tracer.
@Suite(.timeLimit(.minutes(2))) struct SyncTracingTests {
    @Test func aFullSyncIsOneTraceWithASpanPerPage() async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            for _ in 0..<5 { harness.sandbox.orders.create(announce: .silent) }
            let client = OrdersClient(loop: harness.loop, session: harness.session, baseURL: await harness.sandbox.baseURL)
            let tracer = InMemoryTracer()
            let executor = SyncExecutor(
                store: harness.store, source: client, configuration: .init(pageSize: 2), tracer: tracer, logger: quietLogger)
            try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
            #expect(try await executor.runReadyJobs().completed == 1)

            let spans = tracer.finishedSpans
            let job = try #require(spans.first { $0.operationName == "sync apply full_sync" })
            #expect(job.attributes["orderlive.job.kind"]?.toSpanAttribute() == .string("full_sync"))
            #expect(job.attributes["orderlive.job.outcome"]?.toSpanAttribute() == .string("completed"))
            #expect(job.attributes["orderlive.pages"]?.toSpanAttribute() == .int64(3))
            #expect(job.parentSpanID == nil, "the full sync starts its trace")
            let pages = spans.filter { $0.operationName == "full sync page" }
            #expect(pages.map { $0.attributes["orderlive.page"]?.toSpanAttribute() } == [.int64(0), .int64(1), .int64(2)])
            #expect(pages.map { $0.attributes["orderlive.orders"]?.toSpanAttribute() } == [.int64(2), .int64(2), .int64(1)])
            #expect(pages.allSatisfy { $0.traceID == job.traceID && $0.parentSpanID == job.spanID })
        }
    }

    @Test func anAttemptThatFailsIsAnErrorSpanWithItsOrder() async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            let client = OrdersClient(loop: harness.loop, session: harness.session, baseURL: await harness.sandbox.baseURL)
            let tracer = InMemoryTracer()
            let refusing = FullSyncPipelineTests.ScriptedStore(harness.store) { _, _, _ in throw FullSyncPipelineTests.Refused() }
            let executor = SyncExecutor(
                store: refusing, source: client, configuration: .init(pageSize: 2), tracer: tracer, logger: quietLogger)
            let order = harness.sandbox.orders.create(announce: .silent)
            try await harness.store.journal([NewJob(kind: .fetch, orderID: "\(order)", source: "test")])
            #expect(try await executor.runReadyJobs().completed == 1)
            try await harness.store.journal([NewJob(kind: .fullSync, source: "test")])
            #expect(try await executor.runReadyJobs().failed == 1)

            let fetch = try #require(tracer.finishedSpans.first { $0.operationName == "sync apply fetch" })
            #expect(fetch.attributes["orderlive.order_id"]?.toSpanAttribute() == .string("\(order)"))
            #expect(fetch.attributes["orderlive.job.outcome"]?.toSpanAttribute() == .string("completed"))
            #expect(fetch.status == nil)
            let sync = try #require(tracer.finishedSpans.first { $0.operationName == "sync apply full_sync" })
            #expect(sync.attributes["orderlive.job.outcome"]?.toSpanAttribute() == .string("failed"))
            #expect(sync.status?.code == .error)
        }
    }

    /// A job keeps the trace of the push or event that journaled it: its attempt is a child of that
    /// span, however long it waited; a batch of whole-order jobs links to each job's trace.
    @Test func anAppliedJobJoinsTheTraceItWasJournaledUnder() async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            let client = OrdersClient(loop: harness.loop, session: harness.session, baseURL: await harness.sandbox.baseURL)
            let tracer = InMemoryTracer()
            let executor = SyncExecutor(
                store: harness.store, source: client, configuration: .init(pageSize: 2), tracer: tracer, logger: quietLogger)
            let push = tracer.startSpan("journal commit")
            var fields: [String: String] = [:]
            tracer.inject(push.context, into: &fields, using: FieldsInjector())
            let stored = try #require(StoredTraceContext.text(fields))
            push.end()
            let announced = harness.sandbox.orders.create(announce: .silent)
            try await harness.store.journal([NewJob(kind: .fetch, orderID: "\(announced)", source: "push", traceContext: stored)])
            #expect(try await executor.runReadyJobs().completed == 1)
            let fetch = try #require(tracer.finishedSpans.first { $0.operationName == "sync apply fetch" })
            #expect(fetch.traceID == push.traceID && fetch.parentSpanID == push.spanID)

            // Two whole orders applied together in one transaction.
            try await harness.store.journal([
                NewJob(kind: .upsert, order: try order(91, version: 1), source: "push", traceContext: stored),
                NewJob(kind: .upsert, order: try order(92, version: 1), source: "stream"),
            ])
            #expect(try await executor.runReadyJobs().completed == 2)
            let batch = try #require(tracer.finishedSpans.first { $0.operationName == "sync apply batch" })
            #expect(batch.parentSpanID == nil, "a batch of many pushes' jobs starts its own trace")
            #expect(batch.links.compactMap { $0.context.inMemorySpanContext?.traceID } == [push.traceID])
        }
    }
}

extension SyncTracingTests {
    /// A stream event that makes a job starts a trace (its id, type and order) with a `journal commit`
    /// child; its job's apply joins that trace, as a push's does. An event that makes no job has none.
    @Test func aStreamEventStartsATraceThroughTheJournalToTheApply() async throws {
        try await SyncHarness.run(pageSize: 2) { harness in
            let base = await harness.sandbox.baseURL
            let tracer = InMemoryTracer()
            let stream = StreamService(
                source: EventSourceConfiguration(url: base + "/v1/events"), loop: harness.loop, session: harness.session,
                store: harness.store, wake: WakeSignal(), tracer: tracer, logger: quietLogger)
            let announced = harness.sandbox.orders.create(announce: .silent)
            try await stream.journal(batch: [
                ServerSentEvent(type: "order.status_changed", data: #"{"order_id":\#(announced)}"#, lastEventID: "e-41"),
                ServerSentEvent(type: "courier.moved", data: "{}", lastEventID: "e-42"),
            ])
            let event = try #require(tracer.finishedSpans.first { $0.operationName == "stream event" })
            #expect(event.kind == .consumer && event.parentSpanID == nil)
            #expect(event.attributes["orderlive.event.id"]?.toSpanAttribute() == .string("e-41"))
            #expect(event.attributes["orderlive.event.type"]?.toSpanAttribute() == .string("order.status_changed"))
            #expect(event.attributes["orderlive.order_id"]?.toSpanAttribute() == .string("\(announced)"))
            #expect(tracer.finishedSpans.filter { $0.operationName == "stream event" }.count == 1, "no job, no span")
            let commit = try #require(tracer.finishedSpans.first { $0.operationName == "journal commit" })
            #expect(commit.traceID == event.traceID && commit.parentSpanID == event.spanID)

            let client = OrdersClient(loop: harness.loop, session: harness.session, baseURL: base)
            let executor = SyncExecutor(
                store: harness.store, source: client, configuration: .init(pageSize: 2), tracer: tracer, logger: quietLogger)
            #expect(try await executor.runReadyJobs().completed == 1)
            let apply = try #require(tracer.finishedSpans.first { $0.operationName == "sync apply fetch" })
            #expect(apply.traceID == event.traceID && apply.parentSpanID == commit.spanID)
        }
    }
}

/// Writes propagation fields into a dictionary, as the push endpoint stores them with a job.
private struct FieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
