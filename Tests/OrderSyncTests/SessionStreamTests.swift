import AuthSession
import CurlHTTP
import EventStream
import Foundation
import Logging
import OrderSync
import Sandbox
import TestHarnesses
import TestKit
import Testing
import ServerSentEvents

@Suite(.timeLimit(.minutes(3))) struct SessionStreamTests {
    @Test func streamKeepsGoingAcrossAccessTokenExpiriesWithAFreshTokenEachTime() async throws {
        let wall = WallClock()
        let logs = CapturedLogs()
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(accessTokenLifetime: .seconds(10), requiresAuthentication: true,
                                                    now: { wall.now }))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Sandbox.withRunning(configuration) { sandbox in
            for number in 1...4 { sandbox.enqueue(.stream("id: \(number)\ndata: \(number)\n\n")) }
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                let session = Session.sandboxed(
                    loop: loop, baseURL: base, directory: directory, now: { wall.now }, refreshAhead: .seconds(1),
                    logger: logs.logger(level: .trace))
                let clock = ManualClock()
                let source = EventSource(
                    configuration: EventSourceConfiguration(url: base + "/v1/events", idleTimeout: nil),
                    loop: loop, headerProvider: SessionHeaderProvider(session: session), clock: clock,
                    random: { 1 }, logger: logs.logger(level: .trace))
                var received: [String] = []
                _ = try await source.run { update in
                    switch update {
                    case .event(let event):
                        received.append(event.data)
                        wall.advance(by: 20)  // the token in use has now expired
                        if received.count == 4 { source.stop() }
                    case .connectionLost(_, let delay?):
                        clock.advance(by: delay)
                    default:
                        break
                    }
                }
                #expect(received == ["1", "2", "3", "4"])
                var tokens: [String] = []
                var requests = sandbox.streamRequests.makeAsyncIterator()
                for _ in 1...4 { tokens.append(await requests.next()?.header("authorization") ?? "") }
                #expect(Set(tokens).count == 4, "each reconnect must carry a fresh token")
                #expect(tokens.allSatisfy { $0.hasPrefix("Bearer at-") })
                let counters = sandbox.authCounters
                #expect(counters.logins == 1)
                #expect(counters.refreshes == 3)
                #expect(counters.rejectedStreams == 0)
                #expect(!logs.text.contains("at-") && !logs.text.contains("rt-") && !logs.text.contains(SandboxUser.demo.password))
            }
        }
    }

    @Test func revokedSessionWithoutAPasswordStopsReachingTheBackend() async throws {
        let wall = WallClock()
        let configuration = SandboxConfiguration(
            port: 0, auth: SandboxAuthConfiguration(requiresAuthentication: true, now: { wall.now }))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("orderlive-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Sandbox.withRunning(configuration) { sandbox in
            sandbox.enqueue(.stream("id: 1\ndata: 1\n\n"))
            let base = await sandbox.baseURL
            try await CurlLoop.withLoop(logger: quietLogger) { loop in
                let session = Session.sandboxed(
                    loop: loop, baseURL: base, directory: directory, now: { wall.now }, password: nil, logger: quietLogger)
                try await session.login(password: SandboxUser.demo.password)
                let clock = ManualClock()
                let source = EventSource(
                    configuration: EventSourceConfiguration(url: base + "/v1/events", idleTimeout: nil),
                    loop: loop, headerProvider: SessionHeaderProvider(session: session), clock: clock,
                    random: { 1 }, logger: quietLogger)
                var losses: [EventSourceError.Kind] = []
                _ = try await source.run { update in
                    switch update {
                    case .event:
                        sandbox.revokeAllRefreshTokens()
                        wall.advance(by: 10_000)  // the access token expires; its refresh will be refused
                    case .connectionLost(let error, let delay?):
                        losses.append(error.kind)
                        if losses.count == 12 { source.stop() }
                        clock.advance(by: delay)
                    default:
                        break
                    }
                }
                // One stream request with a token, one refused refresh, then nothing more upstream.
                #expect(sandbox.streamRequestCount == 1)
                #expect(sandbox.authCounters.refreshes == 1)
                #expect(sandbox.authCounters.logins == 1)
                #expect(losses.dropFirst().allSatisfy { $0 == .headers })
                #expect(await session.snapshot.state == .unauthenticated)
            }
        }
    }
}
