import AsyncSignals
import CurlHTTP
import EventStream
import Logging
import Sandbox
import ServerSentEvents
import TestKit
import Testing

/// The stream against a port where nothing listens yet, then a Sandbox that appears there.
@Suite(.timeLimit(.minutes(3))) struct EventSourceStartupTests {
    @Test func refusedAtStartThenTheServerAppears() async throws {
        // Learn a free port by binding one and letting it go.
        let port = try await Sandbox.withRunning { await $0.port }
        try await CurlLoop.withLoop(logger: quietLogger) { loop in
            let clock = ManualClock()
            let source = EventSource(
                configuration: EventSourceConfiguration(url: "http://127.0.0.1:\(port)/v1/events", idleTimeout: nil),
                loop: loop, clock: clock, random: { 1.0 }, logger: quietLogger)
            let sandbox = Sandbox(configuration: SandboxConfiguration(port: port),
                                  logger: quietLogger)
            sandbox.enqueue(.stream("data: hello\n\n", then: [.hold]))
            try await withThrowingTaskGroup(of: Void.self) { group in
                var kinds: [EventSourceError.Kind] = []
                var received: [String] = []
                _ = try await source.run { update in
                    switch update {
                    case .connectionLost(let error, let delay?):
                        kinds.append(error.kind)
                        if kinds.count == 1 {
                            group.addTask { try await sandbox.run() }
                            _ = await sandbox.port
                        }
                        clock.advance(by: delay)
                    case .event(let event):
                        received.append(event.data)
                        source.stop()
                    default:
                        break
                    }
                }
                await sandbox.stop()  // not a cancel: that can trap in swift-nio (SandboxStopTests)
                try await group.waitForAll()
                #expect(kinds == [.transport(.couldNotConnect)])
                #expect(received == ["hello"])
            }
        }
    }
}
