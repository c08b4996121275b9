import AsyncSignals
import Testing

@Suite(.timeLimit(.minutes(1))) struct BackpressureChannelTests {
    struct Broken: Error, Equatable {}

    @Test func theProducerPausesAtTheHighWaterMarkAndIsResumedOnceBelowTheLowOne() async throws {
        let resumes = Locked(0)
        let channel = BackpressureChannel<Int>(highWater: 10, lowWater: 4) { resumes.withLock { $0 += 1 } }
        #expect(!channel.shouldPause())
        channel.push(contentsOf: [1, 2], cost: 6)
        #expect(!channel.shouldPause(), "6 of 10: the producer goes on")
        channel.push(contentsOf: [3], cost: 5)
        #expect(channel.shouldPause(), "11 of 10: the producer pauses")
        #expect(channel.shouldPause(), "and stays paused until the consumer reads")
        #expect(channel.consumerIsBehind)
        #expect(try await channel.nextBatch() == [1, 2, 3])
        #expect(resumes.withLock { $0 } == 1, "draining to the low-water mark resumes the producer once")
        #expect(!channel.shouldPause())
        channel.push(contentsOf: [4], cost: 1)
        #expect(try await channel.nextBatch() == [4])
        #expect(resumes.withLock { $0 } == 1, "a producer that never paused is not resumed")
    }

    @Test func theConsumerWaitsForTheProducerThenSeesTheEnd() async throws {
        let channel = BackpressureChannel<Int>(highWater: 100) {}
        async let batch = channel.nextBatch()
        channel.push(contentsOf: [7], cost: 1)
        #expect(try await batch == [7])
        channel.push(contentsOf: [8], cost: 1)
        channel.finish()
        #expect(try await channel.nextBatch() == [8], "what was buffered is drained before the end")
        #expect(try await channel.nextBatch().isEmpty, "an empty batch is the end")
    }

    @Test func aFailureArrivesAfterTheBufferIsDrained() async throws {
        let channel = BackpressureChannel<Int>(highWater: 100) {}
        channel.push(contentsOf: [1], cost: 1)
        channel.finish(throwing: Broken())
        #expect(try await channel.nextBatch() == [1])
        await #expect(throws: Broken.self) { try await channel.nextBatch() }
    }
}
