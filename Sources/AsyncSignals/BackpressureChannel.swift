/// A bounded hand-off from the curl loop thread (producer) to one async consumer, in batches.
///
/// The producer asks ``shouldPause()`` before it consumes a chunk; once the buffered cost is over the
/// high-water mark the answer is yes, the transfer pauses, and the consumer's next ``nextBatch()``
/// that brings the cost to the low-water mark or below calls `resume` once. Memory therefore stays
/// within the high-water mark plus one chunk's worth, however slow the consumer is.
public final class BackpressureChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var cost = 0
        var producerPaused = false
        var finished = false
        var failure: (any Error)?
        var waiter: CheckedContinuation<[Element], any Error>?
    }

    private let state = Locked(State())
    private let highWater: Int
    private let lowWater: Int
    private let resumeProducer: @Sendable () -> Void

    /// Creates a channel. `resumeProducer` is called (from the consumer's context) when a paused
    /// producer may go on.
    public init(highWater: Int, lowWater: Int? = nil, resumeProducer: @escaping @Sendable () -> Void) {
        self.highWater = max(1, highWater)
        self.lowWater = min(lowWater ?? highWater / 2, highWater)
        self.resumeProducer = resumeProducer
    }

    /// Producer side: true when the buffer is over its high-water mark; the producer must then pause
    /// without consuming, and will be resumed.
    public func shouldPause() -> Bool {
        state.withLock { state in
            if state.cost >= highWater {
                state.producerPaused = true
                return true
            }
            return false
        }
    }

    /// True while the consumer is the slow side: elements wait in the buffer or the producer is paused.
    public var consumerIsBehind: Bool {
        state.withLock { $0.producerPaused || !$0.buffer.isEmpty }
    }

    /// Producer side: appends elements with their total cost and wakes the consumer.
    public func push(contentsOf elements: [Element], cost: Int) {
        guard !elements.isEmpty else { return }
        let handoff: (CheckedContinuation<[Element], any Error>, [Element])? = state.withLock { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                let batch = state.buffer.isEmpty ? elements : state.buffer + elements
                state.buffer = []
                state.cost = 0
                return (waiter, batch)
            }
            state.buffer.append(contentsOf: elements)
            state.cost += cost
            return nil
        }
        if let (waiter, batch) = handoff { waiter.resume(returning: batch) }
    }

    /// Producer side: no more elements; the consumer drains what is buffered, then sees the end
    /// (or `error`, if given).
    public func finish(throwing error: (any Error)? = nil) {
        let waiter: CheckedContinuation<[Element], any Error>? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            state.failure = error
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        if let waiter {
            if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: []) }
        }
    }

    /// Consumer side: everything buffered, waiting when empty; an empty array means the producer
    /// finished. Throws the producer's error after the buffer is drained, or `CancellationError`.
    public func nextBatch() async throws -> [Element] {
        if let batch = try takeBuffered() { return batch }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Element], any Error>) in
                let immediate: Result<[Element], any Error>? = state.withLock { state in
                    if !state.buffer.isEmpty {
                        let batch = state.buffer
                        state.buffer = []
                        state.cost = 0
                        return .success(batch)
                    }
                    if state.finished {
                        if let failure = state.failure { return .failure(failure) }
                        return .success([])
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
                resumeProducerIfPaused()
            }
        } onCancel: {
            let waiter = state.withLock { state in
                let waiter = state.waiter
                state.waiter = nil
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func takeBuffered() throws -> [Element]? {
        let batch: [Element]? = try state.withLock { state in
            if !state.buffer.isEmpty {
                let batch = state.buffer
                state.buffer = []
                state.cost = 0
                return batch
            }
            if state.finished {
                if let failure = state.failure { throw failure }
                return []
            }
            return nil
        }
        if batch != nil { resumeProducerIfPaused() }
        return batch
    }

    private func resumeProducerIfPaused() {
        let resume = state.withLock { state in
            guard state.producerPaused, state.cost <= lowWater else { return false }
            state.producerPaused = false
            return true
        }
        if resume { resumeProducer() }
    }
}
