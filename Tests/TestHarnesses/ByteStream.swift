public import CurlHTTP
import AsyncSignals

/// A streaming response as async values (tests read a feed or a stream raw through it; the agent's
/// own streams parse on the loop thread, EventStream's `ParsingDelegate`): the head, then the body in chunks, with backpressure.
public struct StreamingResponse: Sendable {
    /// Status and headers of the final response.
    public let head: HTTPResponseHead
    /// The body, chunk by chunk, as it arrives.
    public let body: ByteStream
}

/// The body of a ``StreamingResponse``. Iterate it once; when the consumer falls more than the
/// buffer limit behind, the transfer pauses until it catches up. Dropping the iteration early
/// should be followed by ``cancel()``.
public struct ByteStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    let channel: BackpressureChannel<[UInt8]>
    let transfer: StreamingTransfer

    /// Ends the transfer.
    public func cancel() {
        transfer.cancel()
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(channel: channel)
    }

    /// Yields chunks; throws ``CurlError`` if the transfer failed after the head.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: BackpressureChannel<[UInt8]>
        var pending: [[UInt8]] = []
        var index = 0

        /// The next chunk, or nil at the end of the body.
        public mutating func next() async throws -> [UInt8]? {
            if index < pending.count {
                defer { index += 1 }
                return pending[index]
            }
            pending = try await channel.nextBatch()
            index = 0
            guard !pending.isEmpty else { return nil }
            index = 1
            return pending[0]
        }
    }
}

extension CurlLoop {
    /// Starts a streaming request and returns once the head has arrived. The body buffers at most
    /// about `bufferLimit` bytes before the transfer pauses.
    public func stream(_ request: HTTPRequest, bufferLimit: Int = 1 << 20) async throws -> StreamingResponse {
        let delegate = ByteStreamDelegate(bufferLimit: bufferLimit)
        let transfer = try startStream(request, delegate: delegate)
        delegate.attach(transfer)
        do {
            let head = try await withTaskCancellationHandler {
                try await delegate.waitForHead()
            } onCancel: {
                transfer.cancel()
            }
            return StreamingResponse(head: head, body: ByteStream(channel: delegate.channel, transfer: transfer))
        } catch {
            transfer.cancel()
            throw error
        }
    }
}

/// Feeds a ``ByteStream`` from the loop thread.
final class ByteStreamDelegate: StreamingResponseDelegate {
    private struct State {
        var head: Result<HTTPResponseHead, CurlError>?
        var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
    }

    private let state = Locked(State())
    let channel: BackpressureChannel<[UInt8]>

    private let slot = TransferSlot()

    init(bufferLimit: Int) {
        let slot = self.slot
        channel = BackpressureChannel(highWater: bufferLimit) { slot.resume() }
    }

    func attach(_ transfer: StreamingTransfer) {
        slot.transfer.withLock { $0 = transfer }
    }

    func waitForHead() async throws -> HTTPResponseHead {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<HTTPResponseHead, CurlError>? = state.withLock { state in
                if let head = state.head { return head }
                state.headWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready.mapError { $0 as any Error }) }
        }
    }

    private func deliverHead(_ result: Result<HTTPResponseHead, CurlError>) {
        let waiter: CheckedContinuation<HTTPResponseHead, any Error>? = state.withLock { state in
            guard state.head == nil else { return nil }
            state.head = result
            let waiter = state.headWaiter
            state.headWaiter = nil
            return waiter
        }
        waiter?.resume(with: result.mapError { $0 as any Error })
    }

    func transferDidReceiveHead(_ head: HTTPResponseHead) {
        deliverHead(.success(head))
    }

    func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if channel.shouldPause() { return false }
        channel.push(contentsOf: [Array(bytes)], cost: bytes.count)
        return true
    }

    func transferDidComplete(_ result: Result<HTTPResponseHead, CurlError>) {
        deliverHead(result)
        switch result {
        case .success: channel.finish()
        case .failure(let error): channel.finish(throwing: error)
        }
    }
}
