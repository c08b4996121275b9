import HTTPTypes
import Hummingbird
import NIOCore

extension Sandbox {
    /// Routes under `/sandbox/` that exercise an HTTP client: redirects, sizes and echoes.
    func addDiagnosticRoutes(to router: Router<BasicRequestContext>) {
        router.get("/sandbox/redirect/:count") { _, context in
            let count = context.parameters.get("count", as: Int.self) ?? 0
            var headers = HTTPFields()
            headers[.location] = count > 1 ? "/sandbox/redirect/\(count - 1)" : "/healthz"
            return Response(status: .found, headers: headers)
        }
        router.get("/sandbox/redirect-without-location") { _, _ in
            Response(status: .found)
        }
        router.get("/sandbox/bytes/:count") { _, context in
            let count = max(0, min(context.parameters.get("count", as: Int.self) ?? 0, 256 << 20))
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(repeating: 0x61, count: count)))
        }
        router.get("/sandbox/firehose/:blocks") { _, context in
            // One 64 KiB block of live-feed events, written `blocks` times as fast as the client reads:
            // a fast stream for transport benchmarks that holds 64 KiB, not the whole stream.
            let blocks = max(0, min(context.parameters.get("blocks", as: Int.self) ?? 0, 1 << 20))
            let block = ByteBuffer(bytes: OrderFeed.firehoseBlock)
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                for _ in 0..<blocks { try await writer.write(block) }
                try await writer.finish(nil)
            })
        }
        router.post("/sandbox/echo") { request, _ in
            var headers = HTTPFields()
            if let name = HTTPField.Name("X-Echo-Method") { headers[name] = request.method.rawValue }
            // The request's header names, and its `X-Value`, so a client's header handling can be checked.
            if let name = HTTPField.Name("X-Echo-Header-Names") {
                headers[name] = request.headers.map { $0.name.canonicalName }.sorted().joined(separator: ",")
            }
            if let name = HTTPField.Name("X-Echo-Value"), let value = HTTPField.Name("X-Value").flatMap({ request.headers[$0] }) {
                headers[name] = value
            }
            let body = try await request.body.collect(upTo: 16 << 20)
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
        }
    }
}

extension Sandbox {
    func addOrderRoutes(to router: Router<BasicRequestContext>) {
        let orders = self.orders
        router.get("/v1/orders") { [self] request, _ in
            if let denied = denyUnauthenticated(request) { return denied }
            let limit = max(1, min(request.uri.queryParameters.get("limit", as: Int.self) ?? 100, 10_000))
            return Self.answer(orders.page(limit: limit, cursor: request.uri.queryParameters.get("cursor")))
        }
        router.get("/v1/orders/:id") { [self] request, context in
            if let denied = denyUnauthenticated(request) { return denied }
            guard let id = context.parameters.get("id", as: Int.self) else { return Self.json(404, #"{"error":"not_found"}"#) }
            if let delay = orders.takeFetchDelay() { try await Task.sleep(for: delay) }
            return Self.answer(orders.fetch(id))
        }
    }

    private func denyUnauthenticated(_ request: Request) -> Response? {
        guard configuration.auth.requiresAuthentication else { return nil }
        if Self.bearerToken(request).flatMap({ authority.validate(accessToken: $0) }) != nil { return nil }
        return Self.json(401, #"{"error":"invalid_token"}"#)
    }

    private static func answer(_ answer: OrderBook.Answer) -> Response {
        switch answer {
        case .json(let body): json(200, body)
        case .status(let status): json(status, #"{"error":"sandbox fault or not found"}"#)
        }
    }

    func orderBookStream(after lastEventID: String?) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        let orders = self.orders
        let start = Self.sequence(lastEventID)
        let budget = orders.takeDropBudget()
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // Watch before reading, so an event appended in between is not missed.
            let (signals, stopWatching) = orders.watch()
            defer { stopWatching() }
            let cuts = orders.cuts
            var remaining = budget ?? Int.max
            func send(_ text: String) async throws {
                var bytes = Array(text.utf8)
                if bytes.count > remaining {
                    // A scheduled drop: the connection breaks here, usually in the middle of an event.
                    bytes = Array(bytes.prefix(remaining))
                    if !bytes.isEmpty { try await writer.write(ByteBuffer(bytes: bytes)) }
                    throw SandboxDrop()
                }
                remaining -= bytes.count
                try await writer.write(ByteBuffer(bytes: bytes))
            }
            var (wire, seen) = orders.events(after: start)
            try await send(": orderlive sandbox order book\n\n" + wire)
            for await _ in signals {
                if orders.cuts != cuts { throw SandboxDrop() }
                (wire, seen) = orders.events(after: seen)
                if !wire.isEmpty { try await send(wire) }
            }
            try await writer.finish(nil)
        })
    }
}

/// Thrown by a script's `.drop` step to break the connection mid-body.
