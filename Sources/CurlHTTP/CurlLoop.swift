import AsyncSignals
import CCurl
public import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The curl multi event loop: one dedicated thread owns a `CURLM` handle and runs every transfer.
///
/// Other threads only append commands under a lock and call `curl_multi_wakeup` (the one multi call
/// libcurl allows from another thread); the loop thread drains them, drives `curl_multi_perform`,
/// reads finished transfers and sleeps in `curl_multi_poll`. An idle open stream costs no CPU.
///
/// Create it with ``withLoop(logger:_:)`` or call ``shutdown()`` when done; after shutdown, new
/// transfers fail with ``CurlError/Kind/shutDown`` and running ones end the same way.
public final class CurlLoop: Sendable {
    enum Command {
        case add(Transfer)
        case cancel(Int)
        case resume(Int)
    }

    private struct Queue {
        var commands: [Command] = []
        var closed = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var exited = false
        /// Whether the loop thread was started (in `init`, or by the first command of a loop that
        /// starts when used).
        var started = false
    }

    /// The multi handle. Thread rule: created in `init`, used by the loop thread only, except
    /// `curl_multi_wakeup`, which is called with the queue lock held and only while `closed` is
    /// false; the loop thread frees it after it has seen `closed` under that same lock (or, when the
    /// thread never started, `shutdown` frees it under the lock as it sets `closed`).
    private nonisolated(unsafe) let multi: UnsafeMutableRawPointer
    private let queue = Locked(Queue())
    let nextID = Atomic<Int>(1)
    private let logger: Logger
    private let threadName: String
    private let priority: ThreadPriority

    private static let globalInitialization: CURLcode = curl_global_init(orderlive_global_default())

    /// How the loop's thread is scheduled against the process's other threads.
    public enum ThreadPriority: Sendable, Equatable {
        /// As the process.
        case normal
        /// `increment` nice levels below the process (at most to 19; Linux schedules threads apart).
        case nice(Int32)
        /// Linux's SCHED_IDLE: the thread runs on what the others leave (a weight of 3 against 1,024
        /// for a thread at nice 0), so under a load that saturates the processor it takes almost none
        /// of it and catches up when the load ends. Where the system refuses, nice 19.
        case idle
    }

    /// Starts the loop thread, named `name` (as `top -H` and `perf` show it; at most 15 bytes are
    /// kept), scheduled at `priority`: lower for transfers that should yield the processor to other
    /// work when it is contended. With `startsWhenUsed`, the thread starts with the first transfer
    /// rather than here, so a loop that may never be used (the webhooks' loop, with no endpoint) costs
    /// no thread, stack or allocator arena until it is.
    public init(
        logger: Logger, name: String = "orderlive-curl", priority: ThreadPriority = .normal, startsWhenUsed: Bool = false
    ) throws(CurlError) {
        let initialized = Self.globalInitialization
        guard initialized == CURLE_OK else {
            throw CurlError(kind: .other, message: "libcurl failed to initialise", code: Int(initialized.rawValue))
        }
        guard let multi = curl_multi_init() else {
            throw CurlError(kind: .other, message: "libcurl could not create its multi handle")
        }
        self.multi = multi
        self.logger = logger
        self.threadName = name
        self.priority = priority
        guard !startsWhenUsed else { return }
        guard startLoopThread() else {
            curl_multi_cleanup(multi)
            throw CurlError(kind: .other, message: "could not start the curl loop thread")
        }
        queue.withLock { $0.started = true }
    }

    private func startLoopThread() -> Bool {
        startThread { [self] in
            Self.nameThread(threadName, priority: priority, logger: logger)
            runLoop()
        }
    }

    /// Runs `body` with a new loop and shuts the loop down afterwards, whatever `body` does.
    public static func withLoop<Result: Sendable>(
        logger: Logger,
        _ body: (CurlLoop) async throws -> Result
    ) async throws -> Result {
        let loop = try CurlLoop(logger: logger)
        do {
            let result = try await body(loop)
            await loop.shutdown()
            return result
        } catch {
            await loop.shutdown()
            throw error
        }
    }

    /// Stops taking transfers, ends the running ones with ``CurlError/Kind/shutDown``, and returns
    /// once the loop thread has freed everything.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyExited = queue.withLock { queue in
                if queue.exited { return true }
                if !queue.started {
                    // The thread never ran, so nothing is in flight: the multi handle is freed here, once
                    // (closed is set under this lock, so no other call reaches it afterwards).
                    (queue.closed, queue.exited) = (true, true)
                    curl_multi_cleanup(multi)
                    return true
                }
                queue.exitWaiters.append(continuation)
                if !queue.closed {
                    queue.closed = true
                    curl_multi_wakeup(multi)
                }
                return false
            }
            if alreadyExited { continuation.resume() }
        }
    }

    /// Performs a request and collects the whole response. Cancelling the task cancels the transfer.
    public func perform(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let box = TransferBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                let transfer = Transfer(id: id, request: request, sink: .collect(continuation))
                box.transfer.withLock { $0 = transfer }
                if Task.isCancelled { transfer.cancelRequested.store(true, ordering: .relaxed) }
                if !enqueue(.add(transfer)) {
                    continuation.resume(throwing: CurlError(kind: .shutDown, message: "the HTTP client has shut down"))
                }
            }
        } onCancel: {
            box.transfer.withLock { $0 }?.cancelRequested.store(true, ordering: .relaxed)
            _ = enqueue(.cancel(id))
        }
    }

    /// Starts a streaming transfer whose head, body and end go to `delegate` on the loop thread.
    public func startStream(
        _ request: HTTPRequest, delegate: some StreamingResponseDelegate
    ) throws(CurlError) -> StreamingTransfer {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let transfer = Transfer(id: id, request: request, sink: .stream(delegate))
        guard enqueue(.add(transfer)) else {
            throw CurlError(kind: .shutDown, message: "the HTTP client has shut down")
        }
        return StreamingTransfer(id: id, loop: self, transfer: transfer)
    }

    func cancel(transferID: Int) {
        _ = enqueue(.cancel(transferID))
    }

    func resume(transferID: Int) {
        _ = enqueue(.resume(transferID))
    }

    func enqueue(_ command: Command) -> Bool {
        queue.withLock { queue in
            guard !queue.closed else { return false }
            if !queue.started {
                // Started under the lock, so only one command starts it; the thread takes the lock
                // for its first drain once this returns.
                guard startLoopThread() else {
                    logger.error("could not start the curl loop thread; the transfer fails", metadata: ["curl.thread": "\(threadName)"])
                    return false
                }
                queue.started = true
            }
            queue.commands.append(command)
            curl_multi_wakeup(multi)
            return true
        }
    }

    // MARK: The loop thread

    private func runLoop() {
        var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
        var byID: [Int: Transfer] = [:]

        func finish(_ transfer: Transfer, _ result: Result<HTTPResponseHead, CurlError>) {
            if let handle = transfer.handle {
                curl_multi_remove_handle(multi, handle)
                transfers[handle] = nil
            }
            byID[transfer.id] = nil
            let body = transfer.body
            transfer.body = []
            let sink = transfer.sink
            transfer.sink = nil
            // A sequence's next request reuses the handle (reset), rather than free one and make one.
            let kept: UnsafeMutableRawPointer?
            if case .sequence? = sink { kept = transfer.releaseHandle(keeping: true) } else { kept = transfer.releaseHandle() }
            switch sink {
            case nil:
                break
            case .collect(let continuation)?:
                continuation.resume(with: result.map { HTTPResponse(head: $0, body: body) }.mapError { $0 as any Error })
            case .stream(let delegate)?:
                delegate.transferDidComplete(result)
            case .sequence(let sequence)?:
                // The next request starts here, on the loop thread, without a hop to the caller.
                if let next = sequence.completed(result.map { HTTPResponse(head: $0, body: body) }) {
                    start(Transfer(id: transfer.id, request: next, sink: .sequence(sequence)), reusing: kept)
                } else if let kept {
                    curl_easy_cleanup(kept)
                }
            }
        }

        func start(_ transfer: Transfer, reusing reused: UnsafeMutableRawPointer? = nil) {
            if transfer.cancelRequested.load(ordering: .relaxed) {
                if let reused { curl_easy_cleanup(reused) }
                finish(transfer, .failure(Self.cancelled))
            } else if let error = transfer.makeHandle(reusing: reused) {
                finish(transfer, .failure(error))
            } else if let handle = transfer.handle {
                let added = curl_multi_add_handle(multi, handle)
                if added == CURLM_OK {
                    transfers[handle] = transfer
                    byID[transfer.id] = transfer
                } else {
                    finish(transfer, .failure(CurlError(
                        kind: .other, message: "libcurl refused the transfer", code: Int(added.rawValue))))
                }
            }
        }

        while true {
            let (commands, closed) = queue.withLock { queue in
                let commands = queue.commands
                queue.commands = []
                return (commands, queue.closed)
            }
            for command in commands {
                switch command {
                case .add(let transfer):
                    start(transfer)
                case .cancel(let id):
                    if let transfer = byID[id] { finish(transfer, .failure(Self.cancelled)) }
                case .resume(let id):
                    if let transfer = byID[id], transfer.paused, let handle = transfer.handle {
                        transfer.paused = false
                        // May call the write callback at once with the data held back by the pause.
                        _ = curl_easy_pause(handle, orderlive_pause_cont())
                    }
                }
            }
            if closed { break }

            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                      let transfer = transfers[handle] else { continue }
                let code = message.pointee.data.result
                finish(transfer, transfer.outcome(code))
            }
            var ready: Int32 = 0
            _ = curl_multi_poll(multi, nil, 0, 1000, &ready)
        }

        for transfer in Array(byID.values) {
            finish(transfer, .failure(CurlError(kind: .shutDown, message: "the HTTP client has shut down")))
        }
        curl_multi_cleanup(multi)
        logger.debug("curl loop stopped")
        let waiters = queue.withLock { queue in
            queue.exited = true
            let waiters = queue.exitWaiters
            queue.exitWaiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    static let cancelled = CurlError(kind: .cancelled, message: "the transfer was cancelled")

    /// Names the calling thread and lowers its priority. A priority the system refuses leaves the
    /// thread where it is, logged: the loop works either way.
    private static func nameThread(_ name: String, priority: ThreadPriority, logger: Logger) {
        #if os(Linux)
        _ = orderlive_name_thread(name)
        var failed: Int32 = 0
        switch priority {
        case .normal:
            break
        case .nice(let increment):
            failed = increment > 0 ? orderlive_raise_thread_niceness(increment) : 0
        case .idle:
            failed = orderlive_idle_thread_scheduling()
            if failed != 0 { failed = orderlive_raise_thread_niceness(19) }
        }
        if failed != 0 {
            logger.debug("the curl loop thread's priority was not lowered", metadata: [
                "curl.thread": "\(name)", "curl.priority": "\(priority)", "curl.errno": "\(failed)",
            ])
        }
        #endif
    }
}

/// Holds the transfer of a `perform` call for its cancellation handler.
private final class TransferBox: Sendable {
    let transfer = Locked<Transfer?>(nil)
}

/// Runs `body` on a new detached POSIX thread; false when the thread could not be created.
private func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t?
    #endif
    let result = pthread_create(&thread, nil, { context in
        guard let context else { return nil }
        Unmanaged<Box>.fromOpaque(context).takeRetainedValue().body()
        return nil
    }, context)
    guard result == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        return false
    }
    #if canImport(Glibc)
    pthread_detach(thread)
    #else
    if let thread { pthread_detach(thread) }
    #endif
    return true
}
