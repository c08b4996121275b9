import AuthSession
import CurlHTTP
import Foundation
import Logging
import Sandbox
import Synchronization
import TestKit
import Testing

/// Everything one auth test needs: a Sandbox sharing the test's wall clock, a curl loop, a fresh
/// state directory, captured logs, and a way to make sessions.
struct AuthHarness {
    let sandbox: Sandbox
    let loop: CurlLoop
    let clock: WallClock
    let directory: String
    let logs: CapturedLogs
    let baseURL: String

    static let password = "orderlive-demo"
    static let identifier = "courier@example.com"

    static func run(
        lifetime: Duration = .seconds(900), requiresAuthentication: Bool = false,
        _ body: (AuthHarness) async throws -> Void
    ) async throws {
        let clock = WallClock()
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(
                accessTokenLifetime: lifetime, requiresAuthentication: requiresAuthentication, now: { clock.now }))
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("orderlive-auth-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logs = CapturedLogs()
        try await Sandbox.withRunning(configuration) { sandbox in
            let baseURL = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: logs.logger(level: .trace)) { loop in
                let harness = AuthHarness(sandbox: sandbox, loop: loop, clock: clock, directory: directory, logs: logs,
                                          baseURL: baseURL)
                try await body(harness)
                harness.expectNoSecretsLogged()
            }
        }
    }

    var store: CredentialStore { CredentialStore(directory: directory, now: { [clock] in clock.now }) }

    func session(password: String? = nil, store: CredentialStore? = nil, refreshAhead: Duration = .seconds(60)) -> Session {
        let clock = self.clock
        let client = AuthClient(loop: loop, endpoints: .init(baseURL: baseURL), now: { clock.now })
        return Session(
            dependencies: Session.Dependencies(
                client: client, store: store ?? self.store, identifier: Self.identifier, password: { password },
                refreshAhead: refreshAhead, now: { clock.now }, sleep: { _ in }, random: { 0.5 }),
            logger: logs.logger(level: .trace))
    }

    /// Every token the Sandbox issued and every password stays out of the logs, at every level.
    func expectNoSecretsLogged(sourceLocation: SourceLocation = #_sourceLocation) {
        let text = logs.text
        #expect(!text.contains(Self.password), "the password reached a log", sourceLocation: sourceLocation)
        #expect(!text.contains("at-"), "an access token reached a log", sourceLocation: sourceLocation)
        #expect(!text.contains("rt-"), "a refresh token reached a log", sourceLocation: sourceLocation)
    }
}

@Suite(.timeLimit(.minutes(3))) struct SessionTests {
    @Test func hundredConcurrentCallersShareExactlyOneRefresh() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            let first = try await session.accessToken()
            harness.clock.advance(by: 1_000)  // past the 900 s lifetime
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 { group.addTask { try await session.accessToken() } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(tokens.count == 100)
            #expect(Set(tokens).count == 1)
            #expect(tokens.first != first)
            #expect(harness.sandbox.authCounters.refreshes == 1)
        }
    }

    @Test func tokenInsideTheRefreshAheadWindowIsRefreshedAndAFreshOneIsNot() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session(refreshAhead: .seconds(60))
            try await session.login(password: AuthHarness.password)
            let first = try await session.accessToken()
            harness.clock.advance(by: 900 - 30)  // expires in 30 s: inside the 60 s window
            let second = try await session.accessToken()
            #expect(second != first)
            #expect(harness.sandbox.authCounters.refreshes == 1)
            harness.clock.advance(by: 10)  // the new token has ~890 s left
            #expect(try await session.accessToken() == second)
            #expect(harness.sandbox.authCounters.refreshes == 1)
        }
    }

    @Test func rotatedRefreshTokenIsOnDiskBeforeTheCallerGetsTheAccessToken() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            harness.clock.advance(by: 1_000)
            let fresh = try await session.accessToken()
            guard case .loaded(let stored) = harness.store.load() else {
                Issue.record("no credentials on disk")
                return
            }
            #expect(stored.accessToken == fresh)
            // A new process (a new session on the same directory) refreshes with the stored token.
            let restarted = harness.session()
            harness.clock.advance(by: 1_000)
            let again = try await restarted.accessToken()
            #expect(again != fresh)
            #expect(harness.sandbox.authCounters.refreshes == 2)
        }
    }

    @Test func revokedRefreshTokenLogsInAgainWithThePassword() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session(password: AuthHarness.password)
            _ = try await session.accessToken()  // no session yet: logs in by itself
            harness.sandbox.revokeAllRefreshTokens()
            harness.clock.advance(by: 1_000)
            _ = try await session.accessToken()
            #expect(harness.sandbox.authCounters.logins == 2)
            #expect(await session.snapshot.state == .authenticated)
        }
    }

    @Test func revokedWithoutAPasswordIsUnauthenticatedAndAsksNoMore() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            harness.sandbox.revokeAllRefreshTokens()
            harness.clock.advance(by: 1_000)
            let error = await #expect(throws: AuthError.self) { try await session.accessToken() }
            #expect(error?.kind == .rejected)
            #expect(await session.snapshot.state == .unauthenticated)
            for _ in 0..<20 {
                let again = await #expect(throws: AuthError.self) { try await session.accessToken() }
                #expect(again?.kind == .unauthenticated)
            }
            let counters = harness.sandbox.authCounters
            #expect(counters.refreshes == 1)
            #expect(counters.logins == 1)
        }
    }

    @Test func twoTransientFailuresThenSuccessKeepTheSession() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            harness.sandbox.failRefreshes(503, 503)
            harness.clock.advance(by: 1_000)
            _ = try await session.accessToken()
            #expect(harness.sandbox.authCounters.refreshes == 3)
            #expect(await session.snapshot.state == .authenticated)
        }
    }

    @Test func fiveTransientFailuresAreAnErrorButTheSessionAndFileStay() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            guard case .loaded(let before) = harness.store.load() else {
                Issue.record("no credentials on disk")
                return
            }
            harness.sandbox.failRefreshes(503, 503, 503, 503, 503)
            harness.clock.advance(by: 1_000)
            let error = await #expect(throws: AuthError.self) { try await session.accessToken() }
            #expect(error?.kind == .transient)
            #expect(harness.sandbox.authCounters.refreshes == 1 + Session.transientRetries)
            #expect(await session.snapshot.state == .authenticated)
            #expect(harness.store.load() == .loaded(before))
            // The fifth 503 is still queued; the next call gets it and then succeeds with the kept token.
            _ = try await session.accessToken()
        }
    }

    @Test func rejectionOfAnOldTokenCausesNoRefresh() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            let old = try await session.accessToken()
            harness.clock.advance(by: 1_000)
            let current = try await session.accessToken()
            await session.tokenRejected(old)
            #expect(try await session.accessToken() == current)
            #expect(harness.sandbox.authCounters.refreshes == 1)
            // A 401 for the current token does force one.
            await session.tokenRejected(current)
            #expect(try await session.accessToken() != current)
            #expect(harness.sandbox.authCounters.refreshes == 2)
        }
    }

    @Test func wrongPasswordIsRejectedClearly() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            let error = await #expect(throws: AuthError.self) { try await session.login(password: "not-the-password") }
            #expect(error?.kind == .rejected)
            #expect(await session.snapshot.state == .unauthenticated)
            #expect(!harness.logs.text.contains("not-the-password"))
        }
    }

    @Test func logoutRevokesUpstreamAndDeletesLocalCredentials() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            #expect(await session.logout(timeout: .seconds(10)))
            #expect(harness.store.load() == .none)
            #expect(await session.snapshot.state == .unauthenticated)
            #expect(harness.sandbox.authCounters.logouts == 1)
        }
    }

    @Test func concurrentCallersWithoutASessionShareOneLogin() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session(password: AuthHarness.password)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await session.accessToken() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens.count == 1)
            #expect(harness.sandbox.authCounters.logins == 1)
        }
    }

    @Test func stateChangesAreStreamedToTheRestOfTheProgram() async throws {
        try await AuthHarness.run { harness in
            let session = harness.session()
            var changes = session.changes.makeAsyncIterator()
            try await session.login(password: AuthHarness.password)
            harness.clock.advance(by: 1_000)
            _ = try await session.accessToken()
            _ = await session.logout(timeout: .seconds(2))
            var seen: [Session.State] = []
            for _ in 0..<6 { if let state = await changes.next() { seen.append(state) } }
            #expect(seen == [.unauthenticated, .refreshing, .authenticated, .refreshing, .authenticated, .unauthenticated])
        }
    }

    @Test func loginRetriesTransientFailuresAndFaultKnobsWorkOverHTTP() async throws {
        try await AuthHarness.run { harness in
            // Arm the knob the way a person would, over HTTP.
            let armed = try await harness.loop.perform(HTTPRequest(
                url: harness.baseURL + "/sandbox/faults/login?status=503&times=2", method: "POST", body: []))
            #expect(armed.status == 200)
            let session = harness.session()
            try await session.login(password: AuthHarness.password)
            #expect(harness.sandbox.authCounters.logins == 3)
            #expect(await session.snapshot.state == .authenticated)
        }
    }
}
