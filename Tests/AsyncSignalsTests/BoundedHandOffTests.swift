import AsyncSignals
import Testing

/// The full sync's hand-off between its stages: order, bounds, the end, errors and cancellation.
@Suite(.timeLimit(.minutes(3))) struct BoundedHandOffTests {
    struct Failed: Error, Equatable {}

    /// Waits (yielding, with a deadline) until `condition` holds.
    private func until(_ condition: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition(), ContinuousClock.now < deadline { await Task.yield() }
    }

    /// A hand-off of one, full with 1, and a send of 2 waiting for room.
    private func fullWithASendWaiting() async throws -> (BoundedHandOff<Int>, Task<Void, any Error>) {
        let handOff = BoundedHandOff<Int>(capacity: 1)
        try await handOff.send(1)
        let waiting = Task { try await handOff.send(2) }
        await until { handOff.pending == 2 }
        return (handOff, waiting)
    }

    @Test func everyElementArrivesInOrderThenTheEnd() async throws {
        let handOff = BoundedHandOff<Int>(capacity: 2)
        async let produced: Void = {
            for value in 0..<200 { try await handOff.send(value) }
            handOff.finish()
        }()
        var received: [Int] = []
        while let value = try await handOff.receive() {
            received.append(value)
            #expect(handOff.pending <= 3, "at most the capacity and one waiting send are held")
        }
        try await produced
        #expect(received == Array(0..<200))
        #expect(try await handOff.receive() == nil, "the end stays the end")
    }

    @Test func aSendWaitsWhileTheQueueIsFullAndGoesOnWhenOneIsReceived() async throws {
        let handOff = BoundedHandOff<String>(capacity: 1)
        try await handOff.send("first")
        let second = Task { try await handOff.send("second") }
        await until { handOff.pending == 2 }
        #expect(handOff.pending == 2, "the second send must wait, holding its element")
        #expect(try await handOff.receive() == "first")
        try await second.value
        #expect(try await handOff.receive() == "second")
        #expect(handOff.pending == 0)
    }

    @Test func theProducersErrorComesAfterWhatWasSent() async throws {
        let handOff = BoundedHandOff<Int>(capacity: 4)
        try await handOff.send(1)
        handOff.finish(throwing: Failed())
        handOff.finish()
        #expect(try await handOff.receive() == 1)
        await #expect(throws: Failed.self) { try await handOff.receive() }
        await #expect(throws: CancellationError.self) { try await handOff.send(2) }
    }

    @Test func aReceiverWaitingForTheEndHearsIt() async throws {
        let handOff = BoundedHandOff<Int>(capacity: 1)
        let waiting = Task { try await handOff.receive() }
        handOff.finish(throwing: Failed())
        await #expect(throws: Failed.self) { try await waiting.value }
    }

    @Test func closingRefusesAWaitingAndEveryLaterSend() async throws {
        let (handOff, waiting) = try await fullWithASendWaiting()
        handOff.close()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        await #expect(throws: CancellationError.self) { try await handOff.send(3) }
        #expect(handOff.pending == 0)
    }

    @Test func cancelledWaitsEndWithCancellation() async throws {
        let (full, sender) = try await fullWithASendWaiting()
        sender.cancel()
        await #expect(throws: CancellationError.self) { try await sender.value }
        #expect(full.pending == 1, "the cancelled send's element is dropped")

        let empty = BoundedHandOff<Int>(capacity: 1)
        let receiver = Task { try await empty.receive() }
        receiver.cancel()
        await #expect(throws: CancellationError.self) { try await receiver.value }
        await #expect(throws: CancellationError.self) { try await empty.send(1) }
    }
}
