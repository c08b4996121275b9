import CurlHTTP
import EventStream
import Testing

@Suite(.timeLimit(.minutes(3))) struct BackoffTests {
    @Test func growsExponentiallyToTheMaximum() {
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), resetAfter: .seconds(60))
        let delays = (0..<8).map { _ in backoff.nextDelay(unit: 1) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
    }

    @Test func jitterStaysWithinHalfToFull() {
        var low = Backoff(initial: .seconds(8), maximum: .seconds(30), resetAfter: .seconds(60))
        var high = low
        #expect(low.nextDelay(unit: 0) == .seconds(4))
        #expect(high.nextDelay(unit: 1) == .seconds(8))
        var middle = Backoff(initial: .seconds(8), maximum: .seconds(30), resetAfter: .seconds(60))
        #expect(middle.nextDelay(unit: 0.5) == .seconds(6))
    }

    @Test func zeroInitialDelayMeansImmediateRetries() {
        var backoff = Backoff(initial: .zero, maximum: .seconds(30), resetAfter: .seconds(60))
        #expect((0..<5).map { _ in backoff.nextDelay(unit: 1) } == Array(repeating: .zero, count: 5))
    }

    @Test func longConnectionResetsAndShortOneDoesNot() {
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), resetAfter: .seconds(60))
        _ = backoff.nextDelay(unit: 1)
        _ = backoff.nextDelay(unit: 1)
        backoff.connectionEnded(uptime: .seconds(59))
        #expect(backoff.nextDelay(unit: 1) == .seconds(4))
        backoff.connectionEnded(uptime: .seconds(60))
        #expect(backoff.nextDelay(unit: 1) == .seconds(1))
    }

    @Test func serverRetrySetsTheBaseAndRetryAfterIsAFloor() {
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), resetAfter: .seconds(60))
        backoff.serverRequested(milliseconds: 250)
        #expect(backoff.nextDelay(unit: 1) == .milliseconds(250))
        #expect(backoff.nextDelay(unit: 1, retryAfter: .seconds(7)) == .seconds(7))
    }
}

@Suite(.timeLimit(.minutes(3))) struct ResponsePolicyTests {
    private func head(_ status: Int, _ headers: HTTPHeaders = [:]) -> HTTPResponseHead {
        HTTPResponseHead(status: status, headers: headers, url: "http://x")
    }

    @Test func classifiesStatusesAndMediaTypes() {
        #expect(ResponseDecision.classify(head(200, ["Content-Type": "text/event-stream"]), now: 0) == .open)
        #expect(ResponseDecision.classify(head(200, ["Content-Type": "Text/Event-Stream; charset=utf-8"]), now: 0) == .open)
        #expect(ResponseDecision.classify(head(204), now: 0) == .stop)
        #expect(ResponseDecision.classify(head(401), now: 0) == .unauthorized)
        #expect(ResponseDecision.classify(head(200, ["Content-Type": "text/x-bogus"]), now: 0)
            == .retry(reason: "expected text/event-stream, got Content-Type text/x-bogus", retryAfter: nil))
        #expect(ResponseDecision.classify(head(404), now: 0) == .retry(reason: "HTTP 404", retryAfter: nil))
        #expect(ResponseDecision.classify(head(429, ["Retry-After": "12"]), now: 0)
            == .retry(reason: "HTTP 429", retryAfter: .seconds(12)))
        // Retry-After only counts on 429 and 503.
        #expect(ResponseDecision.classify(head(500, ["Retry-After": "12"]), now: 0)
            == .retry(reason: "HTTP 500", retryAfter: nil))
    }

    @Test func parsesRetryAfterForms() {
        // 1994-11-06T08:49:37Z is Unix 784111777.
        #expect(ResponseDecision.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_767) == .seconds(10))
        #expect(ResponseDecision.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800) == .zero)
        #expect(ResponseDecision.parseRetryAfter(" 30 ", now: 0) == .seconds(30))
        #expect(ResponseDecision.parseRetryAfter("99999999999999999999", now: 0) == .seconds(86_400))
        #expect(ResponseDecision.parseRetryAfter("soon", now: 0) == nil)
        #expect(ResponseDecision.parseRetryAfter("-5", now: 0) == nil)
    }
}

/// Issue 11: `Retry-After` and `retry:` from a server are clamped, never trapped on.
@Suite(.timeLimit(.minutes(3))) struct RetryAfterBoundsTests {
    @Test(arguments: [
        "99999999999999999999", "9223372036854775807", "18446744073709551616", "86401",
        "Fri, 31 Dec 9999 23:59:59 GMT", "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",
    ])
    func absurdValuesAreClampedToTheReconnectMaximum(_ value: String) {
        #expect(ResponseDecision.parseRetryAfter(value, now: 784_111_767, maximum: .seconds(30))
            == (value.contains("99999999999999999999 08") ? nil : .seconds(30)))
    }

    @Test(arguments: [
        "-9223372036854775808", "1e308", "-0", "NaN", "", " ", "0x10", "+5", "Sun, 06 Nov -1 08:49:37 GMT",
        "Sun, 06 Nov 1994 99:49:37 GMT", "Sun, 99 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1969 08:49:37 GMT",
    ])
    func malformedValuesAreIgnored(_ value: String) {
        #expect(ResponseDecision.parseRetryAfter(value, now: 0, maximum: .seconds(30)) == nil)
    }

    @Test func aDateInThePastIsZeroAndTheWallClockAtItsEndsDoesNotTrap() {
        #expect(ResponseDecision.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: .max, maximum: .seconds(30)) == .zero)
        #expect(ResponseDecision.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: .min, maximum: .seconds(30))
            == .seconds(30))
        #expect(ResponseDecision.parseRetryAfter("12", now: .min, maximum: .seconds(30)) == .seconds(12))
    }

    @Test func a503RetryAfterIsClampedToTheConfiguredMaximum() {
        let head = HTTPResponseHead(status: 503, headers: ["Retry-After": "9223372036854775807"], url: "http://x")
        #expect(ResponseDecision.classify(head, now: 0, maximum: .seconds(5))
            == .retry(reason: "HTTP 503", retryAfter: .seconds(5)))
    }

    @Test func aServerRetryIsClampedToTheMaximumDelay() {
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), resetAfter: .seconds(60))
        backoff.serverRequested(milliseconds: .max)
        #expect(backoff.base == .seconds(30))
        #expect(backoff.nextDelay(unit: 1) == .seconds(30))
        backoff.serverRequested(milliseconds: 250)
        #expect(backoff.base == .milliseconds(250))
    }
}
