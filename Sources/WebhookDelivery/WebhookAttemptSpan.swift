import CurlHTTP
import StoreModel
import Tracing

/// The span of one webhook attempt (DESIGN §14), a client span named by the HTTP semantic conventions,
/// in the trace of the push or event whose job made the change (the change keeps it), and whose W3C
/// `traceparent` goes out with the request, so an integrator's trace runs from its push through the
/// agent to the webhook it receives. Without a tracer nothing is made and no header is added.
enum WebhookAttemptSpan {
    /// Starts the span of `request` (change `seq` to endpoint `endpoint`, made under the stored
    /// `traceContext`) and adds its `traceparent`.
    static func start(
        _ tracer: (any Tracer)?, _ request: inout HTTPRequest, endpoint: Int64, seq: Int64, url: String, traceContext: String?
    ) -> (any Span)? {
        guard let tracer else { return nil }
        var context = ServiceContext.topLevel
        if traceContext != nil {
            tracer.extract(StoredTraceContext.fields(traceContext), into: &context, using: StoredFieldsExtractor())
        }
        let span = tracer.startSpan("POST", context: context, ofKind: .client)
        if span.isRecording {
            span.updateAttributes { attributes in
                attributes["http.request.method"] = "POST"
                attributes["url.full"] = url
                attributes["orderlive.webhook.endpoint"] = Int(endpoint)
                attributes["orderlive.change.seq"] = Int(seq)
            }
        }
        tracer.inject(span.context, into: &request.headers, using: HTTPHeadersInjector())
        return span
    }

    /// Ends `span` with the attempt's result (nil: the sequence stopped before sending it).
    static func end(_ span: (any Span)?, _ result: Result<HTTPResponse, CurlError>?) {
        guard let span else { return }
        guard span.isRecording else { return span.end() }
        switch result {
        case .success(let response)?:
            span.updateAttributes { $0["http.response.status_code"] = response.status }
            if !(200..<300).contains(response.status) { span.setStatus(SpanStatus(code: .error)) }
        case .failure(let error)?:
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        case nil:
            span.updateAttributes { $0["orderlive.webhook.outcome"] = "not_sent" }
        }
        span.end()
    }
}

/// Reads a change's stored propagation fields.
struct StoredFieldsExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

/// Writes propagation headers into a libcurl request's headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPHeaders) {
        carrier.add(name: key, value: value)
    }
}
