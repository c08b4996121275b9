import AsyncSignals
import Hummingbird
import Logging
import TestKit

/// A server on 127.0.0.1 answering `GET /<name>` with a document the test sets (a JWKS for the JWT
/// tests), counting the requests.
public final class DocumentServer: Sendable {
    private let state = Locked<(document: String, status: Int, requests: Int)>(("", 200, 0))

    /// Serves `document` from now on, with `status`.
    public func serve(_ document: String, status: Int = 200) {
        state.withLock { $0.document = document; $0.status = status }
    }

    /// How many requests came.
    public var requests: Int { state.withLock { $0.requests } }

    /// Runs a server for `body`, given the document's URL.
    public static func withRunning<T: Sendable>(path: String, _ body: (DocumentServer, String) async throws -> T) async throws -> T {
        let server = DocumentServer()
        let router = Router()
        router.get(RouterPath(path)) { _, _ -> Response in
            let (document, status) = server.state.withLock { state in
                state.requests += 1
                return (state.document, state.status)
            }
            var response = Response(status: .init(code: status), body: .init(byteBuffer: .init(string: document)))
            response.headers[.contentType] = "application/json"
            return response
        }
        let port = OneShot<Int?>()
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in _ = port.give(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "document-server", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await withGracefulServing(ReportingServer(run: { try await app.run() }, ended: { _ = port.give(nil) })) {
            guard let bound = await port.value else { throw ReceiverFailure(description: "the document server could not listen") }
            return try await body(server, "http://127.0.0.1:\(bound)/\(path)")
        }
    }
}
