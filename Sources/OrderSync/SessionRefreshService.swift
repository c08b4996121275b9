public import AuthSession
public import ServiceLifecycle

/// Keeps the session's access token fresh while the agent runs (DESIGN §8 refresh ahead): a stream
/// that stays open for hours meets its next reconnect, and every fetch, with a token that is still
/// good, and the refresh token never idles out. Stops at graceful shutdown.
public struct SessionRefreshService: Service {
    let session: Session

    /// Creates the service over a session.
    public init(session: Session) {
        self.session = session
    }

    /// Refreshes ahead of expiry until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await session.keepFresh()
        }
    }
}
