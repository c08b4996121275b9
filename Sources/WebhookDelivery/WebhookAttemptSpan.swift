import CurlHTTP
import Tracing

/// The span of one webhook attempt (DESIGN §14), a client span named by the HTTP semantic conventions,
/// whose W3C `traceparent` goes out with the request, so an integrator can join its own trace to the
/// attempt. Without a tracer nothing is made and no header is added.
enum WebhookAttemptSpan {
    /// Starts the span of `request` (change `seq` to endpoint `endpoint`) and adds its `traceparent`.
    static func start(
        _ tracer: (any Tracer)?, _ request: inout HTTPRequest, endpoint: Int64, seq: Int64, url: String
    ) -> (any Span)? {
        guard let tracer else { return nil }
        let span = tracer.startSpan("POST", context: .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = "POST"
        span.attributes["url.full"] = url
        span.attributes["orderlive.webhook.endpoint"] = Int(endpoint)
        span.attributes["orderlive.change.seq"] = Int(seq)
        tracer.inject(span.context, into: &request.headers, using: HTTPHeadersInjector())
        return span
    }

    /// Ends `span` with the attempt's result (nil: the sequence stopped before sending it).
    static func end(_ span: (any Span)?, _ result: Result<HTTPResponse, CurlError>?) {
        guard let span else { return }
        switch result {
        case .success(let response)?:
            span.attributes["http.response.status_code"] = response.status
            if !(200..<300).contains(response.status) { span.setStatus(SpanStatus(code: .error)) }
        case .failure(let error)?:
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
        case nil:
            span.attributes["orderlive.webhook.outcome"] = "not_sent"
        }
        span.end()
    }
}

/// Writes propagation headers into a libcurl request's headers.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPHeaders) {
        carrier.add(name: key, value: value)
    }
}
