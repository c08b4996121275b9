import HTTPTypes
import Hummingbird
import LocalHTTP
import NIOCore
import StoreModel

/// One answer of the push endpoint, whichever side serves it: the outcome it counts as, the status,
/// the JSON body, `Retry-After` and whether the connection closes once it is written.
struct PushAnswer: Sendable {
    var outcome: PushMetrics.Outcome
    var status: HTTPResponse.Status
    var body: String
    var retryAfter: Int?
    var close = false

    /// A JSON body answered with `status`.
    init(_ outcome: PushMetrics.Outcome, status: HTTPResponse.Status, body: String) {
        self.outcome = outcome
        self.status = status
        self.body = body
    }

    /// A refusal in Gorush's `{"code": N, "message": "..."}` shape.
    init(_ outcome: PushMetrics.Outcome, _ refusal: JSONError) {
        self.init(outcome, status: refusal.status, body: refusal.body)
        retryAfter = refusal.retryAfter
        close = refusal.close
    }

    /// The answer as the router returns it.
    var response: Response {
        Response.json(status, body, retryAfter: retryAfter, close: close)
    }

    /// The answer's head as the router's server writes it (`Server`, `Date`, the type and length).
    func head(date: String) -> HTTPResponse {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.utf8.count)
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if close { headers[.connection] = "close" }
        headers[.server] = "orderlive"
        headers[.date] = date
        return HTTPResponse(status: status, headerFields: headers)
    }
}

/// A push ready for the journal: its submission and what its answer needs.
struct PreparedPush: Sendable {
    var submission: IdempotentSubmission
    var notifications: Int
    var successBody: String

    /// The jobs the submission journals, for the commit's span.
    var jobs: Int { submission.parts.reduce(0) { $0 + $1.jobs.count } }
}

/// What a step of the push endpoint decided: go on with a value, or answer with a refusal.
enum Decided<Value> {
    case proceed(Value)
    case refused(PushAnswer)
}
