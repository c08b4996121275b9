public import CurlHTTP

/// A small HTTP client for the agent's own endpoints.
public struct AgentHTTP: Sendable {
    public let loop: CurlLoop

    /// A client over `loop`.
    public init(loop: CurlLoop) {
        self.loop = loop
    }

    public func get(_ url: String) async throws -> (status: Int, body: String) {
        let response = try await loop.perform(HTTPRequest(url: url))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }
}
