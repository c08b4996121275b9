import CheckedInput
import Foundation
public import Logging

/// The one owner of token state (FIELD-NOTES 5): hands out a valid access token on demand,
/// refreshing ahead of expiry, with exactly one refresh (or login) in flight however many callers
/// wait; persists every rotated refresh token before the new access token is handed out; treats
/// network errors, timeouts, 429 and 5xx as transient; ends the session only when the backend
/// answers 401/403 to a refresh, and then logs in again when a password is available.
public actor Session {
    private let dependencies: Dependencies
    private let logger: Logger
    private var state: State = .hydrating
    private var credentials: StoredCredentials?
    private var lockedReason = ""
    private var waiters: [CheckedContinuation<String, any Error>] = []
    private let changesContinuation: AsyncStream<State>.Continuation

    /// Every state change, for the rest of the program; only the session writes to it (FIELD-NOTES 20).
    public nonisolated let changes: AsyncStream<State>

    /// Transient failures are retried this many times (so a call makes at most one more request).
    public static let transientRetries = 3

    /// Creates a session in the `hydrating` state; it reads the store on first use.
    public init(dependencies: Dependencies, logger: Logger) {
        self.dependencies = dependencies
        self.logger = logger
        (changes, changesContinuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(16))
    }

    /// The state and who is logged in; never a token.
    public var snapshot: Snapshot {
        if state == .hydrating { hydrate() }
        return Snapshot(
            state: state, userID: credentials?.userID, role: credentials?.role, storeIDs: credentials?.storeIDs ?? [],
            accessExpiresAt: credentials?.accessExpiresAt, refreshExpiresAt: credentials?.refreshExpiresAt)
    }

    /// Reads stored credentials (once; later calls do nothing).
    public func hydrate() {
        guard state == .hydrating else { return }
        switch dependencies.store.load() {
        case .none:
            setState(.unauthenticated)
        case .loaded(let stored):
            credentials = stored
            setState(.authenticated)
        case .movedAside(let path, let reason):
            logger.warning("credentials unreadable, moved aside; no session", metadata: [
                "auth.event": "auth.credentials.moved_aside", "auth.credentials.path": "\(path)",
                "auth.reason": "\(reason)",
            ])
            setState(.unauthenticated)
        case .locked(let reason):
            lockedReason = reason
            logger.error("credentials cannot be read now", metadata: ["auth.event": "auth.credentials.locked",
                                                                      "auth.reason": "\(reason)"])
            setState(.locked)
        }
    }

    /// A valid access token: the current one, or a fresh one when it expires within the refresh-ahead
    /// window (or is unknown-expiry and was rejected). Concurrent callers share one refresh.
    public func accessToken() async throws(AuthError) -> String {
        hydrate()
        if state == .locked || state == .unauthenticated { reloadStoredCredentials() }
        switch state {
        case .locked:
            throw AuthError(.locked, "the stored session cannot be read now: \(lockedReason)")
        case .refreshing:
            return try await waitForOperation()
        case .authenticated:
            if let current = credentials, !needsRefresh(current) { return current.accessToken }
            return try await runOperation { session throws(AuthError) in try await session.performRefresh() }
        case .unauthenticated, .hydrating:
            guard dependencies.identifier?.isEmpty == false, dependencies.password() != nil else {
                throw AuthError(.unauthenticated, "not logged in: run `orderlive login`, or configure a password")
            }
            return try await runOperation { session throws(AuthError) in try await session.performLogin(password: nil) }
        }
    }

    /// Without usable credentials, reads the store again: a `login` made by another process while
    /// this one runs is picked up, and a store that was locked recovers once it can be read.
    private func reloadStoredCredentials() {
        guard case .loaded(let stored) = dependencies.store.load() else { return }
        credentials = stored
        lockedReason = ""
        logger.info("stored credentials loaded", metadata: ["auth.event": "auth.credentials.loaded"])
        setState(.authenticated)
    }

    /// The backend answered 401 to `token`. Acted on only while it is still the current token, so a
    /// late 401 for an old token does not cause a second refresh.
    public func tokenRejected(_ token: String) {
        guard var current = credentials, current.accessToken == token else { return }
        current.accessExpiresAt = 0
        credentials = current
        logger.info("access token rejected; refreshing before the next use",
                    metadata: ["auth.event": "auth.access.rejected"])
    }

    /// Logs in with an explicit password (the `login` command); single-flight with any refresh.
    @discardableResult
    public func login(password: String) async throws(AuthError) -> Snapshot {
        hydrate()
        if state == .refreshing { _ = try? await waitForOperation() }
        _ = try await runOperation { session throws(AuthError) in try await session.performLogin(password: password) }
        return snapshot
    }

    /// Revokes the session upstream (best effort, within `timeout`) and deletes local credentials
    /// whatever happens upstream. Returns whether the backend confirmed.
    public func logout(timeout: Duration) async -> Bool {
        hydrate()
        var confirmed = false
        if let current = credentials {
            do {
                try await dependencies.client.logout(
                    accessToken: current.accessToken, refreshToken: current.refreshToken, timeout: timeout)
                confirmed = true
            } catch {
                logger.warning("upstream logout failed; deleting local credentials anyway",
                               metadata: ["auth.event": "auth.logout.upstream_failed", "auth.reason": "\(error.message)"])
            }
        }
        credentials = nil
        do {
            try dependencies.store.delete()
        } catch {
            logger.error("could not delete credentials", metadata: ["auth.reason": "\(error.message)"])
        }
        setState(.unauthenticated)
        return confirmed
    }

    // MARK: The single operation slot

    private func waitForOperation() async throws(AuthError) -> String {
        do {
            return try await withCheckedThrowingContinuation { waiters.append($0) }
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError(.transient, "the refresh was interrupted")
        }
    }

    /// Runs a refresh or login as the one operation in flight; callers arriving meanwhile wait for
    /// its result. The slot is cleared on every path.
    private func runOperation(
        _ operation: (isolated Session) async throws(AuthError) -> String
    ) async throws(AuthError) -> String {
        let previous = state
        setState(.refreshing)
        let result: Result<String, AuthError>
        do {
            result = .success(try await operation(self))
        } catch {
            result = .failure(error)
        }
        if state == .refreshing { setState(previous == .refreshing ? .unauthenticated : previous) }
        let waiting = waiters
        waiters = []
        for waiter in waiting { waiter.resume(with: result.mapError { $0 as any Error }) }
        return try result.get()
    }

    private func needsRefresh(_ current: StoredCredentials) -> Bool {
        guard let due = refreshDue(current) else { return false }
        return dependencies.now() >= due
    }

    /// When `current`'s access token should be refreshed (DESIGN §8): `refresh_ahead` before it
    /// expires, or at 80 % of its life when that comes first (a short-lived token is not refreshed
    /// at once, nor only at its last second). Nil when its expiry is unknown.
    private func refreshDue(_ current: StoredCredentials) -> Double? {
        guard let expiresAt = current.accessExpiresAt else { return nil }
        let ahead = Checked.seconds(of: dependencies.refreshAhead)
        let life = max(0, expiresAt - current.savedAt)
        return expiresAt - min(ahead, 0.2 * life)
    }

    /// When the current access token is due for a refresh, Unix seconds; nil without a session or
    /// with an unknown expiry.
    public var refreshDueAt: Double? {
        hydrate()
        guard state == .authenticated || state == .refreshing, let current = credentials else { return nil }
        return refreshDue(current)
    }

    /// Keeps the access token fresh for a long-lived consumer (`run`, `inspect --auth`) until the task
    /// is cancelled: sleeps until the token is due, then refreshes it through ``accessToken()`` (so
    /// single-flight with every other caller, the rotated pair saved first, transient failures
    /// retried per DESIGN §8, a rejection ending the session as it always does). With no session,
    /// or after a failure, it looks again every `idleCheck`, so a later `login` is picked up.
    public func keepFresh(idleCheck: Duration = .seconds(30)) async {
        var refreshedLastTime = false
        while !Task.isCancelled {
            let wait: Duration
            if let due = refreshDueAt {
                let until = due - dependencies.now()
                if until <= 0, refreshedLastTime {
                    // The fresh token is due at once (a backend handing out tokens that expire
                    // immediately): no loop of refreshes, but a look again in a second.
                    refreshedLastTime = false
                    wait = .seconds(1)
                } else if until <= 0 {
                    refreshedLastTime = true
                    do {
                        _ = try await accessToken()
                        logger.debug("access token refreshed ahead of expiry", metadata: ["auth.event": "auth.refresh.ahead"])
                        continue
                    } catch {
                        refreshedLastTime = false
                        if error.kind != .transient {
                            logger.warning("refresh ahead stopped: no usable session", metadata: [
                                "auth.event": "auth.refresh.ahead_stopped", "auth.reason": "\(error.message)",
                            ])
                        }
                        wait = idleCheck
                    }
                } else {
                    refreshedLastTime = false
                    wait = Checked.duration(seconds: until, maximum: idleCheck)
                }
            } else {
                wait = idleCheck
            }
            do {
                try await dependencies.sleep(wait)
            } catch {
                return
            }
        }
    }

    private func performRefresh() async throws(AuthError) -> String {
        guard let current = credentials else {
            throw AuthError(.unauthenticated, "not logged in: run `orderlive login`, or configure a password")
        }
        var attempt = 0
        while true {
            attempt += 1
            do {
                let pair = try await dependencies.client.refresh(refreshToken: current.refreshToken)
                // Persist the rotated refresh token before anyone gets the new access token.
                install(StoredCredentials(identifier: current.identifier, pair: pair, savedAt: dependencies.now()))
                dependencies.observe(.refreshSucceeded)
                logger.info("token refreshed", metadata: ["auth.event": "auth.refresh.success", "auth.attempt": "\(attempt)"])
                return pair.accessToken
            } catch where error.kind == .rejected {
                dependencies.observe(.refreshRejected)
                logger.warning("refresh rejected; the session is over", metadata: [
                    "auth.event": "auth.session.expired", "auth.reason": "\(error.message)",
                ])
                credentials = nil
                try? dependencies.store.delete()
                if dependencies.identifier?.isEmpty == false, dependencies.password() != nil {
                    return try await performLogin(password: nil)
                }
                setState(.unauthenticated)
                throw error
            } catch {
                dependencies.observe(.refreshFailed)
                logger.warning("refresh failed", metadata: [
                    "auth.event": "auth.refresh.failure", "auth.attempt": "\(attempt)", "auth.reason": "\(error.message)",
                ])
                if attempt > Self.transientRetries {
                    setState(.authenticated)
                    throw AuthError(.transient, "refresh failed \(attempt) times: \(error.message)")
                }
                await backoff(attempt: attempt)
            }
        }
    }

    private func performLogin(password explicitPassword: String?) async throws(AuthError) -> String {
        guard let identifier = dependencies.identifier ?? credentials?.identifier, !identifier.isEmpty else {
            throw AuthError(.unauthenticated, "no identifier: pass --identifier or set auth.identifier")
        }
        guard let password = explicitPassword ?? dependencies.password() else {
            throw AuthError(.unauthenticated, "no password available for \(identifier)")
        }
        var attempt = 0
        let started = dependencies.now()
        while true {
            attempt += 1
            do {
                let pair = try await dependencies.client.login(identifier: identifier, password: password)
                install(StoredCredentials(identifier: identifier, pair: pair, savedAt: dependencies.now()))
                dependencies.observe(.loginSucceeded)
                logger.info("logged in", metadata: [
                    "auth.event": "auth.login.success", "auth.user_id": "\(pair.userID ?? "")",
                    "auth.latency_ms": "\(Checked.int64(clamping: (dependencies.now() - started) * 1000))",
                ])
                return pair.accessToken
            } catch where error.kind == .rejected {
                dependencies.observe(.loginRejected)
                logger.error("login rejected", metadata: ["auth.event": "auth.login.failure", "auth.reason": "\(error.message)"])
                setState(.unauthenticated)
                throw AuthError(.rejected, "the backend rejected the identifier or password")
            } catch {
                dependencies.observe(.loginFailed)
                logger.warning("login failed", metadata: [
                    "auth.event": "auth.login.failure", "auth.attempt": "\(attempt)", "auth.reason": "\(error.message)",
                ])
                if attempt > Self.transientRetries {
                    setState(credentials == nil ? .unauthenticated : .authenticated)
                    throw AuthError(.transient, "login failed \(attempt) times: \(error.message)")
                }
                await backoff(attempt: attempt)
            }
        }
    }

    /// Makes `record` current: written to disk first, then used.
    private func install(_ record: StoredCredentials) {
        do {
            try dependencies.store.save(record)
            logger.debug("credentials saved", metadata: ["auth.event": "auth.credentials.saved"])
        } catch {
            // The old refresh token is already spent; keep the new one in memory rather than lose it.
            logger.error("credentials could not be saved; keeping the session in memory", metadata: [
                "auth.event": "auth.credentials.save_failed", "auth.reason": "\(error.message)",
            ])
        }
        credentials = record
        setState(.authenticated)
    }

    private func backoff(attempt: Int) async {
        try? await dependencies.sleep(ExponentialDelay.delay(
            attempt: attempt - 1, base: .milliseconds(250), maximum: .seconds(16), unit: dependencies.random()))
    }

    private func setState(_ new: State) {
        guard new != state else { return }
        state = new
        changesContinuation.yield(new)
    }
}
