import ServerSentEvents
import StoreModel
import Tracing

/// One stream event's spans (DESIGN §14): a consumer span that starts the event's trace (its id, type,
/// order and jobs) and a `journal commit` child for the transaction that makes its jobs durable. Its
/// jobs keep the commit's context (``StoredTraceContext``), so their apply joins this trace as a push's
/// does. Only events that make jobs are traced; without a tracer nothing is made.
struct StreamEventTrace: Sendable {
    let event: any Span
    let commit: any Span

    /// Starts the spans of `event`, whose translation made `jobs`, and stamps the commit's context on them.
    init(_ tracer: any Tracer, event source: ServerSentEvent, jobs: inout [NewJob]) {
        event = tracer.startSpan("stream event", context: .topLevel, ofKind: .consumer)
        commit = tracer.startSpan("journal commit", context: event.context, ofKind: .internal)
        if event.isRecording {
            let order = jobs.first?.orderID ?? jobs.first?.order?.id
            event.updateAttributes { [count = jobs.count] attributes in
                attributes["orderlive.event.type"] = source.type
                if !source.lastEventID.isEmpty { attributes["orderlive.event.id"] = source.lastEventID }
                if let order { attributes["orderlive.order_id"] = order }
                attributes["orderlive.jobs"] = count
            }
            commit.updateAttributes { [count = jobs.count] in $0["orderlive.jobs"] = count }
        }
        var fields: [String: String] = [:]
        tracer.inject(commit.context, into: &fields, using: TraceFieldsInjector())
        guard let stored = StoredTraceContext.text(fields) else { return }
        for index in jobs.indices { jobs[index].traceContext = stored }
    }

    /// Ends both spans once the batch's transaction has committed, or failed with `error`.
    func end(_ error: (any Error)?) {
        for span in [commit, event] {
            if let error {
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error))
            }
            span.end()
        }
    }
}

/// Writes propagation fields into the dictionary a job's trace context is stored from.
struct TraceFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}

/// Reads propagation fields from a job's stored trace context.
struct TraceFieldsExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
