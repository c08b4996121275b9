import CurlHTTP
import Foundation
import PushIngest
import Testing
import TestHarnesses
import HTTPTypes
import LocalHTTP

/// The OpenAPI document against the listener that serves it: every registered route is documented
/// and every documented operation is registered (DESIGN §4; issue 13 part 5), each answers on the real
/// listener with a documented status and content type, and what is not a route is a JSON 404 or 405.
@Suite(.timeLimit(.minutes(3))) struct OpenAPIDocumentTests {
    /// The document's `paths`: the one place the tests parse it.
    static func paths() throws -> [String: [String: Any]] {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        return try #require(document["paths"] as? [String: [String: Any]])
    }

    /// `METHOD /path` for every operation in the document.
    static func documentedOperations() throws -> Set<String> {
        var operations: Set<String> = []
        for (path, item) in try paths() {
            for method in item.keys where ["get", "put", "post", "delete", "patch", "head", "options", "trace"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// The statuses and content types the document gives one operation.
    static func responses(_ method: String, _ path: String) throws -> [String: Set<String>] {
        let operation = try #require(try paths()[path]?[method.lowercased()] as? [String: Any])
        let responses = try #require(operation["responses"] as? [String: [String: Any]])
        return responses.mapValues { Set(($0["content"] as? [String: Any])?.keys.map { $0 } ?? []) }
    }

    @Test func everyRegisteredRouteIsDocumentedAndTheReverse() async throws {
        try await PushServerHarness.with { harness in
            let registered = Set(harness.server.routes.map { "\($0.method.rawValue) \($0.path)" })
            let documented = try Self.documentedOperations()
            #expect(registered.subtracting(documented).isEmpty, "registered but not in the document: \(registered.subtracting(documented).sorted())")
            #expect(documented.subtracting(registered).isEmpty, "documented but not registered: \(documented.subtracting(registered).sorted())")
            #expect(registered.count == harness.server.routes.count, "a route is registered twice")
        }
    }

    @Test func everyDocumentedOperationAnswersWithADocumentedStatusAndType() async throws {
        try await PushServerHarness.with { harness in
            for operation in try Self.documentedOperations().sorted() {
                let parts = operation.split(separator: " ", maxSplits: 1).map(String.init)
                let (method, path) = (parts[0], parts[1])
                let body: [UInt8]? = method == "POST" ? Array(#"{"notifications":[{"tokens":["t"],"platform":2}]}"#.utf8) : nil
                let response = try await harness.loop.perform(HTTPRequest(
                    url: "http://127.0.0.1:\(harness.port)\(path)", method: method,
                    headers: body == nil ? [:] : ["Content-Type": "application/json"], body: body))
                let documented = try Self.responses(method, path)
                let types = try #require(documented["\(response.status)"], "\(operation) answered \(response.status), which is not documented")
                let contentType = response.head.headers["Content-Type"].map { String($0.prefix { $0 != ";" }) }
                #expect(types.contains(contentType ?? ""), "\(operation): \(contentType ?? "no type") is not documented for \(response.status)")
            }
            let served = try await harness.get("/openapi.json")
            #expect(served.status == 200 && served.text == OpenAPIDocument.json)
        }
    }

    @Test func aKnownPathWithAnotherMethodIs405WithAllow() async throws {
        try await PushServerHarness.with { harness in
            for (method, path, allow) in [("GET", "/api/push", "POST"), ("DELETE", "/healthz", "GET, HEAD"), ("PUT", "/openapi.json", "GET, HEAD")] {
                let response = try await harness.loop.perform(HTTPRequest(url: "http://127.0.0.1:\(harness.port)\(path)", method: method))
                #expect(response.status == 405, "\(method) \(path)")
                #expect(response.head.headers["Allow"] == allow)
                #expect(response.text == #"{"code":405,"message":"\#(path) takes \#(allow), not \#(method)"}"#)
            }
            // A GET route answers HEAD: the GET's status and headers, no body (RFC 9110 §9.1).
            for path in ["/healthz", "/openapi.json"] {
                let head = try await harness.loop.perform(HTTPRequest(url: "http://127.0.0.1:\(harness.port)\(path)", method: "HEAD"))
                let get = try await harness.get(path)
                #expect(head.status == 200 && head.body.isEmpty && head.head.headers["Content-Length"] == "\(get.text.utf8.count)", "HEAD \(path)")
            }
            let missing = try await harness.get("/api/pushes")
            #expect(missing.status == 404)
            #expect(missing.text.hasPrefix(#"{"code":404,"message":"no such route: /api/pushes"#))
            #expect(try harness.jobs().isEmpty)
        }
    }
}
