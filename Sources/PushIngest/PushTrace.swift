import HTTPTypes
import StoreModel
import Tracing

/// One push request's spans (DESIGN §14): a server span that continues the sender's W3C
/// `traceparent`/`tracestate` (a malformed one is ignored and a new trace starts), named and
/// attributed by the HTTP semantic conventions, and a child span for the journal commit that decides
/// the answer. Without a tracer (telemetry off) every call is a no-op and nothing is allocated.
///
/// A push whose trace is not sampled costs no more than it must: its context still goes to its jobs
/// and changes (W3C: an unsampled trace is propagated, so a webhook receiver can decide alike), but no
/// commit span is made and no attribute is built for spans nobody records.
struct PushTrace: Sendable {
    /// The request's span; nil when tracing is off.
    let span: (any Span)?
    /// When the request began (the latency metric).
    let started: ContinuousClock.Instant

    /// Starts the request span under the context `headers` carry.
    init(_ tracer: (any Tracer)?, headers: HTTPFields, started: ContinuousClock.Instant = .now) {
        self.started = started
        guard let tracer else {
            span = nil
            return
        }
        var context = ServiceContext.topLevel
        tracer.extract(PropagationFields(headers), into: &context, using: PropagationFieldsExtractor())
        let span = tracer.startSpan("POST /api/push", context: context, ofKind: .server)
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["http.request.method"] = "POST"
                attributes["http.route"] = "/api/push"
                attributes["url.path"] = "/api/push"
            }
        }
        self.span = span
    }

    /// Starts the journal commit's span, a child of the request's, and writes its context into every
    /// job of `push`, so that a job's apply, however long it waits, joins this trace. When the trace is
    /// not sampled there is no commit span (nil) and the jobs keep the request's context.
    func commit(tracer: (any Tracer)?, _ push: inout PreparedPush) -> (any Span)? {
        guard let tracer, let span else { return nil }
        var commit: (any Span)?
        if span.isRecording {
            let started = tracer.startSpan("journal commit", context: span.context, ofKind: .internal)
            started.updateAttributes { attributes in
                attributes["orderlive.push.notifications"] = push.notifications
                attributes["orderlive.jobs"] = push.jobs
            }
            commit = started
        }
        var fields: [String: String] = [:]
        tracer.inject(commit?.context ?? span.context, into: &fields, using: TraceFieldsInjector())
        if let stored = StoredTraceContext.text(fields) {
            for part in push.submission.parts.indices {
                for job in push.submission.parts[part].jobs.indices { push.submission.parts[part].jobs[job].traceContext = stored }
            }
        }
        return commit
    }

    /// Ends the request's span with the answer's status and outcome.
    func end(_ answer: PushAnswer) {
        guard let span else { return }
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["http.response.status_code"] = Int(answer.status.code)
                attributes["orderlive.push.outcome"] = answer.outcome.rawValue
            }
            if answer.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
        }
        span.end()
    }
}

/// The W3C propagation headers of a request, and nothing else of it: the carrier the tracer reads.
/// swift-otel writes the whole carrier into its warning when it cannot parse a `traceparent`; given
/// the request's fields it would log an `Authorization: Bearer` secret beside it.
struct PropagationFields: CustomStringConvertible {
    private static let traceparentName = HTTPField.Name("traceparent")
    private static let tracestateName = HTTPField.Name("tracestate")

    let traceparent: String?
    let tracestate: String?

    init(_ headers: HTTPFields) {
        traceparent = Self.traceparentName.flatMap { headers[$0] }
        tracestate = Self.tracestateName.flatMap { headers[$0] }
    }

    var description: String {
        "traceparent: \(traceparent ?? "(none)"), tracestate: \(tracestate ?? "(none)")"
    }
}

/// Reads `traceparent` and `tracestate` from a request's ``PropagationFields``.
struct PropagationFieldsExtractor: Extractor {
    func extract(key: String, from carrier: PropagationFields) -> String? {
        switch key {
        case "traceparent": carrier.traceparent
        case "tracestate": carrier.tracestate
        default: nil
        }
    }
}

/// Writes propagation fields into the dictionary a job's trace context is stored from.
struct TraceFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
