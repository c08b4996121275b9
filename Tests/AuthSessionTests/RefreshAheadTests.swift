import AuthSession
import CurlHTTP
import Foundation
import Sandbox
import Testing
import Logging
import TestKit

/// DESIGN §8 refresh ahead: while a long-lived consumer holds the session, nobody needs to ask for a
/// token for it to stay fresh. Time is the test's: the session's sleep advances the wall clock.
/// A keeper that never acts leaves its `for await` waiting: the time limit cancels the test, which
/// ends the iteration, so the test fails instead of hanging the suite.
@Suite(.timeLimit(.minutes(1))) struct RefreshAheadTests {
    /// A session whose sleeps move `clock` forward (virtual time), reporting each auth event.
    private func session(
        _ harness: AuthHarness, refreshAhead: Duration, events: AsyncStream<(AuthEvent, Double)>.Continuation
    ) -> Session {
        let clock = harness.clock
        return Session(
            dependencies: Session.Dependencies(
                client: AuthClient(loop: harness.loop, endpoints: .init(baseURL: harness.baseURL), now: { clock.now }),
                store: harness.store, identifier: AuthHarness.identifier, password: { AuthHarness.password },
                refreshAhead: refreshAhead, now: { clock.now },
                sleep: { duration in
                    try Task.checkCancellation()
                    clock.advance(by: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
                    await Task.yield()
                },
                random: { 0.5 }, observe: { events.yield(($0, clock.now)) }),
            logger: harness.logs.logger(level: .trace))
    }

    @Test func theTokenIsRefreshedAheadOfExpiryWithoutAnyoneAskingForIt() async throws {
        try await AuthHarness.run(lifetime: .seconds(900), requiresAuthentication: true) { harness in
            let (events, sink) = AsyncStream.makeStream(of: (AuthEvent, Double).self)
            let session = session(harness, refreshAhead: .seconds(60), events: sink)
            _ = try await session.accessToken()  // the login
            let loggedInAt = harness.clock.now
            let firstExpiry = try #require(await session.snapshot.accessExpiresAt)
            let keeper = Task { await session.keepFresh() }
            var refreshedAt: [Double] = []
            var expiries: [Double] = []
            // The expiry each refresh brought is the pair the Sandbox issued at that moment.
            for await (event, at) in events where event == .refreshSucceeded {
                refreshedAt.append(at)
                expiries.append(at + 900)
                if refreshedAt.count == 3 { break }
            }
            keeper.cancel()
            await keeper.value
            try #require(refreshedAt.count == 3, "the keeper did not refresh three times")
            // Each refresh happens 60 s before the token in hand expires, never after it.
            #expect(abs(refreshedAt[0] - (firstExpiry - 60)) < 1, "\(refreshedAt) vs \(firstExpiry)")
            #expect(abs(refreshedAt[1] - (expiries[0] - 60)) < 1)
            #expect(abs(refreshedAt[2] - (expiries[1] - 60)) < 1)
            #expect(refreshedAt[0] > loggedInAt)
            let counters = harness.sandbox.authCounters
            #expect(counters.logins == 1)
            #expect(counters.refreshes == 3)
            #expect(await session.snapshot.state == .authenticated)
        }
    }

    @Test func aShortLivedTokenIsRefreshedAtEightyPercentOfItsLife() async throws {
        try await AuthHarness.run(lifetime: .seconds(100), requiresAuthentication: true) { harness in
            let (events, sink) = AsyncStream.makeStream(of: (AuthEvent, Double).self)
            // refresh_ahead 60 s is more than a fifth of a 100 s life: 80 % of the life wins.
            let session = session(harness, refreshAhead: .seconds(60), events: sink)
            _ = try await session.accessToken()
            let loggedInAt = harness.clock.now
            let keeper = Task { await session.keepFresh() }
            var refreshedAt = 0.0
            for await (event, at) in events where event == .refreshSucceeded {
                refreshedAt = at
                break
            }
            keeper.cancel()
            await keeper.value
            try #require(refreshedAt > 0, "the keeper never refreshed")
            #expect(abs(refreshedAt - (loggedInAt + 80)) < 1, "refreshed \(refreshedAt - loggedInAt) s after login")
        }
    }

    @Test func aRejectedRefreshEndsTheSessionAndTheKeeperWaitsQuietly() async throws {
        try await AuthHarness.run(lifetime: .seconds(900), requiresAuthentication: true) { harness in
            let (events, sink) = AsyncStream.makeStream(of: AuthEvent.self)
            let clock = harness.clock
            // No password: after the rejection there is nothing to log in with.
            let session = Session(
                dependencies: Session.Dependencies(
                    client: AuthClient(loop: harness.loop, endpoints: .init(baseURL: harness.baseURL), now: { clock.now }),
                    store: harness.store, identifier: AuthHarness.identifier, password: { nil },
                    refreshAhead: .seconds(60), now: { clock.now },
                    sleep: { duration in
                        try Task.checkCancellation()
                        clock.advance(by: Double(duration.components.seconds))
                        await Task.yield()
                    },
                    random: { 0.5 }, observe: { sink.yield($0) }),
                logger: harness.logs.logger(level: .trace))
            try await session.login(password: AuthHarness.password)
            harness.sandbox.revokeAllRefreshTokens()
            let keeper = Task { await session.keepFresh() }
            var rejected = false
            for await event in events where event == .refreshRejected {
                rejected = true
                break
            }
            try #require(rejected, "the keeper never tried the revoked refresh token")
            // The session is over; the keeper keeps looking (for a later login) without refreshing.
            let refreshesSoFar = harness.sandbox.authCounters.refreshes
            let before = clock.now
            while clock.now < before + 600 { await Task.yield() }
            keeper.cancel()
            await keeper.value
            #expect(await session.snapshot.state == .unauthenticated)
            #expect(harness.sandbox.authCounters.refreshes == refreshesSoFar)
        }
    }
}
