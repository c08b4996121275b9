import Commands
import Foundation
import StoreModel
import Testing

/// What `webhooks add|update` accept as delivery options (issue 59): each option within its bounds,
/// headers that cannot break the signature or the framing, files that exist, and an update that
/// changes only what it names.
@Suite(.timeLimit(.minutes(1))) struct WebhookOptionsInputTests {
    static func refusal(_ input: WebhookOptionsInput, to options: WebhookDeliveryOptions = WebhookDeliveryOptions()) -> String? {
        do {
            _ = try input.applied(to: options)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func valuesOutsideTheirBoundsAreRefusedNamingTheOption() {
        #expect(Self.refusal(WebhookOptionsInput(maxInFlight: "0"))
            == "--max-in-flight takes a whole number from 1 to 256, not '0'")
        #expect(Self.refusal(WebhookOptionsInput(maxInFlight: "99999999999999999999999"))?.hasPrefix("--max-in-flight") == true)
        #expect(Self.refusal(WebhookOptionsInput(batchSize: "1001"))?.hasPrefix("--batch-size takes a whole number from 1 to 1000") == true)
        #expect(Self.refusal(WebhookOptionsInput(batchMilliseconds: "-1"))?.hasPrefix("--batch-ms") == true)
        #expect(Self.refusal(WebhookOptionsInput(rate: "nan"))?.hasPrefix("--rate takes requests per second") == true)
        #expect(Self.refusal(WebhookOptionsInput(rate: "1e9"))?.hasPrefix("--rate") == true)
        #expect(Self.refusal(WebhookOptionsInput(maxInFlight: "32", batchSize: "100", batchMilliseconds: "250", rate: "0.5")) == nil)
    }

    @Test func headersThatWouldBreakTheSignatureOrTheFramingAreRefused() {
        for reserved in ["webhook-signature=x", "Content-Type=text/plain", "Host=evil", "traceparent=00-x"] {
            #expect(Self.refusal(WebhookOptionsInput(headers: [reserved]))?.contains("set by orderlive itself") == true, "\(reserved)")
        }
        #expect(Self.refusal(WebhookOptionsInput(headers: ["X-Bad Name=1"]))?.contains("is not a header name") == true)
        #expect(Self.refusal(WebhookOptionsInput(headers: ["novalue"])) == "--header takes NAME=VALUE, not 'novalue'")
        #expect(Self.refusal(WebhookOptionsInput(headers: ["X-A=line\r\nX-Injected: 1"]))?.contains("one line") == true)
        #expect(Self.refusal(WebhookOptionsInput(headerFiles: ["X-Key=/no/such/file"]))?.contains("cannot read /no/such/file") == true)
        #expect(Self.refusal(WebhookOptionsInput(clientCertificate: "/no/such.pem"))?.contains("--client-certificate: cannot read") == true)
    }

    @Test func anUpdateChangesOnlyWhatItNames() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-header-\(UUID().uuidString)").path
        try "secret".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let start = try WebhookOptionsInput(maxInFlight: "8", headers: ["X-A=1", "X-B=2"]).applied(to: WebhookDeliveryOptions())
        let updated = try WebhookOptionsInput(batchSize: "50", headers: ["x-a=3"], headerFiles: ["X-Key=\(file)"], removedHeaders: ["X-B"])
            .applied(to: start)
        #expect(updated.maxInFlight == 8 && updated.batchSize == 50)
        #expect(updated.headers == [WebhookHeader(name: "x-a", value: "3"), WebhookHeader(name: "X-Key", file: file)])
        #expect(WebhookOptionsInput().isEmpty && !WebhookOptionsInput(rate: "1").isEmpty)
    }
}
