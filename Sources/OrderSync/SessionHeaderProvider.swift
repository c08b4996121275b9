public import AuthSession
public import CurlHTTP
public import EventStream

/// Gives the event stream a fresh bearer token before every attempt (FIELD-NOTES 17), and tells the
/// session when the backend rejected one.
public struct SessionHeaderProvider: EventStreamHeaderProvider {
    private let session: Session

    /// Creates a provider over a session.
    public init(session: Session) {
        self.session = session
    }

    /// `Authorization: Bearer <token>`; a session that cannot supply one makes the attempt fail and retry.
    public func headers() async throws -> HTTPHeaders {
        do {
            let token = try await session.accessToken()
            return ["Authorization": "Bearer \(token)"]
        } catch {
            throw HeaderProviderFailure(message: error.message)
        }
    }

    /// Reports a 401 for the token those headers carried.
    public func unauthorized(_ headers: HTTPHeaders) async {
        guard let value = headers["Authorization"], value.hasPrefix("Bearer ") else { return }
        await session.tokenRejected(String(value.dropFirst(7)))
    }
}
