import Synchronization
extension CurlLoop {
    /// Performs `requests` one after another, each started on the loop thread as soon as the one before
    /// it completed and `proceed` accepted its response (no hop back to the caller between them), and
    /// returns what each one performed came to, in order: all of them, or up to the first that failed
    /// or that `proceed` refused. One in flight at a time, for a receiver that must get them in order
    /// (outgoing webhooks). `proceed` runs on the loop thread: keep it short. Cancelling the task
    /// cancels the transfer in flight and performs no more.
    public func performSequence(
        _ requests: [HTTPRequest], proceed: @escaping @Sendable (HTTPResponse) -> Bool
    ) async -> [Result<HTTPResponse, CurlError>] {
        guard let first = requests.first else { return [] }
        let id = nextID.add(1, ordering: .relaxed).oldValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Result<HTTPResponse, CurlError>], Never>) in
                let sequence = TransferSequence(following: requests.dropFirst(), proceed: proceed, continuation: continuation)
                let transfer = Transfer(id: id, request: first, sink: .sequence(sequence))
                if Task.isCancelled { transfer.cancelRequested.store(true, ordering: .relaxed) }
                if !enqueue(.add(transfer)) {
                    sequence.completed(.failure(CurlError(kind: .shutDown, message: "the HTTP client has shut down")))
                }
            }
        } onCancel: {
            _ = enqueue(.cancel(id))
        }
    }
}

/// A sequence's requests still to perform, its results so far, and its caller's continuation.
///
/// Thread rule: created on the caller's thread and handed to the loop with its first transfer; from
/// then on only the loop thread touches it, one transfer at a time, until it resumes the continuation
/// (exactly once, from ``completed(_:)``). The refusal path of `enqueue` completes it on the caller's
/// thread, but only when the loop never received it.
final class TransferSequence: @unchecked Sendable {
    private var following: ArraySlice<HTTPRequest>
    private let proceed: @Sendable (HTTPResponse) -> Bool
    private var results: [Result<HTTPResponse, CurlError>] = []
    private let continuation: CheckedContinuation<[Result<HTTPResponse, CurlError>], Never>

    init(following: ArraySlice<HTTPRequest>, proceed: @escaping @Sendable (HTTPResponse) -> Bool,
         continuation: CheckedContinuation<[Result<HTTPResponse, CurlError>], Never>) {
        self.following = following
        self.proceed = proceed
        self.continuation = continuation
    }

    /// Records a transfer's result; returns the next request to start, or nil when the sequence ended
    /// (its continuation then resumed).
    @discardableResult
    func completed(_ result: Result<HTTPResponse, CurlError>) -> HTTPRequest? {
        results.append(result)
        if case .success(let response) = result, proceed(response), let next = following.popFirst() { return next }
        continuation.resume(returning: results)
        return nil
    }
}
