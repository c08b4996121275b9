/// A running streaming transfer: cancel it, or resume it after its delegate paused it.
public struct StreamingTransfer: Sendable {
    let id: Int
    let loop: CurlLoop
    /// Kept so a cancel issued before the loop picks the transfer up still takes effect.
    let transfer: Transfer

    /// Ends the transfer; its delegate then completes with ``CurlError/Kind/cancelled``.
    /// Cancelling a finished transfer does nothing.
    public func cancel() {
        transfer.cancelRequested.store(true, ordering: .relaxed)
        loop.cancel(transferID: id)
    }

    /// Lets a transfer paused by its delegate go on; the held-back bytes are delivered first.
    public func resume() {
        loop.resume(transferID: id)
    }
}
