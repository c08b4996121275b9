/// A bounded queue between one producing task and one consuming task: ``send(_:)`` waits while
/// `capacity` elements wait unreceived, ``receive()`` waits while none does. The producer ends it
/// with ``finish(throwing:)``; the consumer sees the buffered elements, then the end (nil) or the
/// producer's error. A cancelled task waiting on either side stops waiting with `CancellationError`,
/// and once the consumer is gone (``close()``, or cancelled while waiting) a send throws, so a
/// producer never waits for room that will not come.
///
/// The full sync's stages (the next page's fetch, its decoding, the store's apply) hand pages on
/// through it, so each runs as soon as its input is there and at most `capacity` pages wait.
public final class BoundedHandOff<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var head = 0
        var end: Result<Void, any Error>?
        var closed = false
        var receiver: CheckedContinuation<Element?, any Error>?
        var sender: (element: Element, continuation: CheckedContinuation<Void, any Error>)?

        var waiting: Int { buffer.count - head }

        mutating func pop() -> Element? {
            guard head < buffer.count else { return nil }
            let element = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            }
            return element
        }
    }

    private enum SendOutcome {
        case sent, received(CheckedContinuation<Element?, any Error>), refused, waits
    }

    private enum ReceiveOutcome {
        case element(Element, CheckedContinuation<Void, any Error>?), ended(Result<Void, any Error>), waits
    }

    private let capacity: Int
    private let state = Locked(State())

    /// A hand-off holding at most `capacity` (at least 1) unreceived elements.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Elements sent and not yet received, counting one that a waiting ``send(_:)`` holds.
    public var pending: Int {
        state.withLock { state in state.waiting + (state.sender == nil ? 0 : 1) }
    }

    /// Hands `element` on, waiting while the queue is full. Throws `CancellationError` when the
    /// consumer is gone or this task is cancelled while it waits (the element is then dropped).
    public func send(_ element: Element) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> SendOutcome in
                    if state.closed || state.end != nil || Task.isCancelled { return .refused }
                    if let receiver = state.receiver {
                        state.receiver = nil
                        return .received(receiver)
                    }
                    if state.waiting < capacity {
                        state.buffer.append(element)
                        return .sent
                    }
                    state.sender = (element, continuation)
                    return .waits
                }
                switch outcome {
                case .sent:
                    continuation.resume()
                case .received(let receiver):
                    receiver.resume(returning: element)
                    continuation.resume()
                case .refused:
                    continuation.resume(throwing: CancellationError())
                case .waits:
                    break
                }
            }
        } onCancel: {
            let sender = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                defer { state.sender = nil }
                return state.sender?.continuation
            }
            sender?.resume(throwing: CancellationError())
        }
    }

    /// The next element, waiting while there is none; nil once the producer finished and every
    /// element was received, or the producer's error. Throws `CancellationError` when this task is
    /// cancelled while it waits (the hand-off is then closed).
    public func receive() async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element?, any Error>) in
                let outcome = state.withLock { state -> ReceiveOutcome in
                    if Task.isCancelled {
                        state.closed = true
                        return .ended(.failure(CancellationError()))
                    }
                    if let element = state.pop() {
                        // Room for the waiting sender's element.
                        var resumed: CheckedContinuation<Void, any Error>?
                        if let sender = state.sender {
                            state.sender = nil
                            state.buffer.append(sender.element)
                            resumed = sender.continuation
                        }
                        return .element(element, resumed)
                    }
                    if let sender = state.sender {
                        state.sender = nil
                        return .element(sender.element, sender.continuation)
                    }
                    if let end = state.end { return .ended(end) }
                    state.receiver = continuation
                    return .waits
                }
                switch outcome {
                case .element(let element, let sender):
                    sender?.resume()
                    continuation.resume(returning: element)
                case .ended(.success):
                    continuation.resume(returning: nil)
                case .ended(.failure(let error)):
                    continuation.resume(throwing: error)
                case .waits:
                    break
                }
            }
        } onCancel: {
            close()
        }
    }

    /// Producer side: no more elements. The consumer receives what is buffered, then nil, or
    /// `error` when one is given. Only the first call counts.
    public func finish(throwing error: (any Error)? = nil) {
        let receiver = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = error.map { .failure($0) } ?? .success(())
            defer { state.receiver = nil }
            return state.receiver
        }
        if let error { receiver?.resume(throwing: error) } else { receiver?.resume(returning: nil) }
    }

    /// Consumer side: nothing more is received. A waiting or later send throws `CancellationError`;
    /// a waiting receive does too.
    public func close() {
        let (sender, receiver) = state.withLock { state in
            state.closed = true
            state.buffer.removeAll()
            state.head = 0
            defer {
                state.sender = nil
                state.receiver = nil
            }
            return (state.sender?.continuation, state.receiver)
        }
        sender?.resume(throwing: CancellationError())
        receiver?.resume(throwing: CancellationError())
    }
}
