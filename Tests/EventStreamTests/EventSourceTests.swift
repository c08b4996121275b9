import AsyncSignals
import CurlHTTP
import EventStream
import Logging
import Sandbox
import ServerSentEvents
import TestKit
import Testing

/// The reconnecting client against the real Sandbox, with time driven by the test.
@Suite(.timeLimit(.minutes(3))) struct EventSourceTests {
    @Test func cleanEndReconnectsWithLastEventID() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                .stream("id: 1\ndata: a\n\nid: 2\ndata: b\n\n"),
                .stream("id: 3\ndata: c\n\n", then: [.hold]))
            let source = harness.source()
            var updates: [EventSourceUpdate] = []
            let end = try await source.run { update in
                updates.append(update)
                if case .connectionLost(_, let delay?) = update { harness.clock.advance(by: delay) }
                if case .event(let event) = update, event.data == "c" { source.stop() }
            }
            #expect(end == .stopped)
            #expect(events(updates).map(\.data) == ["a", "b", "c"])
            #expect(events(updates).map(\.lastEventID) == ["1", "2", "3"])
            let losses = updates.filter(isLoss)
            #expect(losses == [.connectionLost(EventSourceError(kind: .streamEnded, message: "stream ended"),
                                               retryIn: .seconds(1))])
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            let first = await requests.next()
            let second = await requests.next()
            #expect(first?.header("last-event-id") == nil)
            #expect(second?.header("last-event-id") == "2")
            #expect(first?.header("accept") == "text/event-stream")
            #expect(first?.header("cache-control") == "no-cache")
            #expect(first?.header("user-agent")?.hasPrefix("orderlive/") == true)
        }
    }

    @Test(arguments: LineEnding.allCases)
    func idOnlyBlockIsSentOnReconnect(ending: LineEnding) async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("data: a\n\nid: 7\n\n", lineEnding: ending), .stream("", then: [.hold]))
            let source = harness.source()
            var opens = 0
            _ = try await source.run { update in
                if case .connectionLost(_, let delay?) = update { harness.clock.advance(by: delay) }
                if case .open = update {
                    opens += 1
                    if opens == 2 { source.stop() }
                }
            }
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "7")
        }
    }

    @Test func partialEventAtDropIsDiscardedAndItsIDUnused() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                StreamScript(steps: [.send(Array("id: 1\ndata: a\n\nid: 2\ndata: partial".utf8)), .drop]),
                .stream("", then: [.hold]))
            let source = harness.source()
            var updates: [EventSourceUpdate] = []
            _ = try await source.run { update in
                updates.append(update)
                if case .connectionLost(_, let delay?) = update { harness.clock.advance(by: delay) }
                if case .open = update, updates.filter(isLoss).count == 1 { source.stop() }
            }
            #expect(events(updates).map(\.data) == ["a"])
            guard case .connectionLost(let error, _)? = updates.first(where: isLoss) else {
                Issue.record("no loss reported")
                return
            }
            #expect(error.kind == .transport(.connectionLost))
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "1")
        }
    }

    @Test func noContentStopsAfterExactlyOneRequest() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.status(204))
            let source = harness.source()
            var updates: [EventSourceUpdate] = []
            let end = try await source.run { updates.append($0) }
            #expect(end == .serverRequestedStop)
            #expect(updates.isEmpty)
            #expect(harness.sandbox.streamRequestCount == 1)
        }
    }

    @Test func serviceUnavailableIsRetriedWithBackoffAndRetryAfter() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                .status(503), .status(503, headers: [("Retry-After", "5")]), .status(500),
                .stream("data: up\n\n", then: [.hold]))
            let source = harness.source { $0.initialDelay = .milliseconds(100) }
            var delays: [Duration] = []
            var kinds: [EventSourceError.Kind] = []
            _ = try await source.run { update in
                if case .connectionLost(let error, let delay?) = update {
                    delays.append(delay)
                    kinds.append(error.kind)
                    harness.clock.advance(by: delay)
                }
                if case .event = update { source.stop() }
            }
            // Exponential from 100 ms; the second wait honours Retry-After: 5.
            #expect(delays == [.milliseconds(100), .seconds(5), .milliseconds(400)])
            #expect(kinds == [.status(503), .status(503), .status(500)])
            #expect(harness.sandbox.streamRequestCount == 4)
        }
    }

    @Test func unauthorizedAsksTheProviderAgainAndSendsTheNewToken() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.status(401), .stream("data: ok\n\n", then: [.hold]))
            let provider = RotatingTokens()
            let logs = CapturedLogs()
            let source = harness.source(provider: provider, logger: logs.logger(level: .trace))
            _ = try await source.run { update in
                if case .connectionLost(let error, let delay?) = update {
                    #expect(error.kind == .unauthorized)
                    harness.clock.advance(by: delay)
                }
                if case .event = update { source.stop() }
            }
            #expect(provider.rejected == ["Bearer token-1"])
            #expect(!logs.text.isEmpty)
            #expect(!logs.text.contains("token-1") && !logs.text.contains("token-2"), "a bearer token reached the log")
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            #expect(await requests.next()?.header("authorization") == "Bearer token-1")
            #expect(await requests.next()?.header("authorization") == "Bearer token-2")
        }
    }

    @Test func idleConnectionIsDroppedAndReconnected() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("id: 1\ndata: a\n\n", then: [.hold]), .stream("data: b\n\n", then: [.hold]))
            let source = harness.source { $0.idleTimeout = .seconds(45) }
            var updates: [EventSourceUpdate] = []
            _ = try await source.run { update in
                updates.append(update)
                switch update {
                case .event(let event) where event.data == "a":
                    harness.clock.advance(by: .seconds(45))
                case .connectionLost(_, let delay?):
                    harness.clock.advance(by: delay)
                case .event(let event) where event.data == "b":
                    source.stop()
                default:
                    break
                }
            }
            let losses = updates.filter(isLoss)
            #expect(losses.count == 1)
            if case .connectionLost(let error, _)? = losses.first { #expect(error.kind == .idleTimeout) }
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "1")
        }
    }

    /// The idle watcher is cancelled at every reconnect, and a cancelled sleep keeps its memory
    /// until its deadline: it must never sleep the whole 45 s at once.
    @Test func idleWatcherSleepsAtMostASecondAtATime() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("data: a\n\n", then: [.hold]))
            let source = harness.source { $0.idleTimeout = .seconds(45) }
            var deadlines: [ManualClock.Instant] = []
            _ = try await source.run { update in
                guard case .event = update else { return }
                // The watcher starts beside the connection; wait for its sleep to be registered.
                while harness.clock.pendingDeadlines.isEmpty { await Task.yield() }
                deadlines = harness.clock.pendingDeadlines
                source.stop()
            }
            #expect(!deadlines.isEmpty)
            let latest = harness.clock.now.advanced(by: .seconds(1))
            #expect(deadlines.allSatisfy { $0 <= latest }, "\(deadlines) against \(latest)")
        }
    }

    @Test func serverRetryFieldSetsTheDelay() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("retry: 5000\ndata: x\n\n"), .status(503), .stream("", then: [.hold]))
            let source = harness.source()
            var delays: [Duration] = []
            _ = try await source.run { update in
                if case .connectionLost(_, let delay?) = update {
                    delays.append(delay)
                    harness.clock.advance(by: delay)
                }
                if case .open = update, delays.count == 2 { source.stop() }
            }
            #expect(delays == [.seconds(5), .seconds(10)])
        }
    }

    @Test func batchesCarryEveryItemInStreamOrderAndTheirRetryIsApplied() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                .stream(": hi\nretry: 5000\nid: 1\ndata: a\n\nid: 2\nevent: order.updated\ndata: b\n\n"),
                .status(503), .stream("", then: [.hold]))
            let source = harness.source { $0.reportsComments = true }
            var items: [ServerSentEventItem] = []
            var delays: [Duration] = []
            var opens = 0
            let end = try await source.runBatches { update in
                switch update {
                case .items(let batch):
                    items += batch
                    #expect(batch.nonEventPositions.allSatisfy {
                        if case .event = batch[$0] { false } else { true }
                    })
                case .connectionLost(_, let delay?):
                    delays.append(delay)
                    harness.clock.advance(by: delay)
                case .connectionLost:
                    break
                case .open:
                    opens += 1
                    if opens == 2 { source.stop() }
                }
            }
            #expect(end == .stopped)
            #expect(items == [
                .comment("hi"), .retry(5000),
                .event(ServerSentEvent(data: "a", lastEventID: "1")),
                .event(ServerSentEvent(type: "order.updated", data: "b", lastEventID: "2")),
            ])
            #expect(delays == [.seconds(5), .seconds(10)])
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "2")
        }
    }

    @Test func afterStopNoFurtherEventOfTheSameChunkIsHandedOn() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("data: a\n\ndata: b\n\ndata: c\n\n", then: [.hold]))
            let source = harness.source()
            var seen: [String] = []
            let end = try await source.run { update in
                if case .event(let event) = update {
                    seen.append(event.data)
                    source.stop()
                }
            }
            #expect(end == .stopped)
            #expect(seen == ["a"])
        }
    }

    @Test func restartReconnectsAtOnceWithoutAnError() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                .stream("id: 1\ndata: a\n\n", then: [.hold]), .stream("data: b\n\n", then: [.hold]))
            let source = harness.source()
            var updates: [EventSourceUpdate] = []
            _ = try await source.run { update in
                updates.append(update)
                if case .event(let event) = update {
                    if event.data == "a" { source.restart() } else { source.stop() }
                }
            }
            #expect(updates.filter(isLoss).isEmpty)
            #expect(events(updates).map(\.data) == ["a", "b"])
            var requests = harness.sandbox.streamRequests.makeAsyncIterator()
            _ = await requests.next()
            #expect(await requests.next()?.header("last-event-id") == "1")
        }
    }

    @Test func stopDuringBackoffEndsWithoutAnotherRequest() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.status(503))
            let source = harness.source()
            let end = try await source.run { update in
                if case .connectionLost = update { source.stop() }
            }
            #expect(end == .stopped)
            #expect(harness.sandbox.streamRequestCount == 1)
        }
    }

    @Test func cancellingTheTaskStops() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("data: a\n\n", then: [.hold]))
            let source = harness.source()
            let opened = AsyncStream.makeStream(of: Void.self)
            let task = Task {
                try await source.run { update in
                    if case .event = update { opened.continuation.yield() }
                }
            }
            var iterator = opened.stream.makeAsyncIterator()
            await iterator.next()
            task.cancel()
            let end = try await task.value
            #expect(end == .stopped)
        }
    }

    @Test func wrongContentTypeIsAnErrorAndRetried() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(
                StreamScript(headers: [("Content-Type", "text/plain")], steps: [.send(Array("data: x\n\n".utf8))]),
                .stream("data: y\n\n", then: [.hold]))
            let source = harness.source()
            var updates: [EventSourceUpdate] = []
            _ = try await source.run { update in
                updates.append(update)
                if case .connectionLost(_, let delay?) = update { harness.clock.advance(by: delay) }
                if case .event = update { source.stop() }
            }
            #expect(events(updates).map(\.data) == ["y"])
            if case .connectionLost(let error, _)? = updates.first(where: isLoss) {
                #expect(error.kind == .contentType)
                #expect(error.message.contains("text/plain"))
            } else {
                Issue.record("no loss reported")
            }
        }
    }

    @Test func withoutReconnectTheFirstLossEndsTheRun() async throws {
        try await Harness.run { harness in
            harness.sandbox.enqueue(.stream("data: a\n\n"))
            let source = harness.source { $0.reconnects = false }
            var updates: [EventSourceUpdate] = []
            let end = try await source.run { updates.append($0) }
            #expect(end == .connectionLost(EventSourceError(kind: .streamEnded, message: "stream ended")))
            #expect(updates.last == .connectionLost(EventSourceError(kind: .streamEnded, message: "stream ended"),
                                                    retryIn: nil))
            #expect(harness.sandbox.streamRequestCount == 1)
        }
    }

    @Test func fourteenMegabyteEventArrivesWhole() async throws {
        try await Harness.run { harness in
            let payload = String(repeating: "0123456789abcdef", count: 14 * 65_536)
            harness.sandbox.enqueue(.stream("id: big\ndata: \(payload)\n\n", then: [.hold]))
            let source = harness.source()
            var received: [ServerSentEvent] = []
            _ = try await source.run { update in
                if case .event(let event) = update {
                    received.append(event)
                    source.stop()
                }
            }
            #expect(received.count == 1)
            #expect(received.first?.data == payload)
            #expect(received.first?.lastEventID == "big")
        }
    }
}
