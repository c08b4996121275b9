public import AuthSession
public import CurlHTTP
public import Foundation
public import Logging
public import Sandbox

extension Session {
    /// A session for the Sandbox's demo user at `baseURL`, its credentials kept in `directory`, its
    /// wall clock `now` (so a test moves token expiry) and its retries not waiting; `password` nil
    /// makes a session that cannot log in again by itself. Each test used to
    /// build this by hand.
    public static func sandboxed(
        loop: CurlLoop, baseURL: String, directory: String, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        password: String? = SandboxUser.demo.password, refreshAhead: Duration = .seconds(60), logger: Logger
    ) -> Session {
        Session(
            dependencies: Session.Dependencies(
                client: AuthClient(loop: loop, endpoints: .init(baseURL: baseURL), now: now),
                store: CredentialStore(directory: directory, now: now),
                identifier: SandboxUser.demo.identifier, password: { password },
                refreshAhead: refreshAhead, now: now, sleep: { _ in }),
            logger: logger)
    }
}
