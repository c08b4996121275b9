public import AsyncSignals
import Synchronization

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

/// Holds a transfer for callbacks created before it exists — typically a
/// ``BackpressureChannel``'s resume callback, which must reach the transfer its delegate feeds.
public final class TransferSlot: Sendable {
    /// The transfer, once started.
    public let transfer = Locked<StreamingTransfer?>(nil)

    /// Creates an empty slot.
    public init() {}

    /// Resumes the transfer in the slot, if any.
    public func resume() {
        transfer.withLock { $0 }?.resume()
    }
}
