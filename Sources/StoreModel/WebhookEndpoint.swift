/// An outgoing webhook endpoint (`orderlive webhooks`, DESIGN §13), kept in the store so every agent of
/// an account shares it. Its cursor makes the change log the outbox: the last change handled (sent
/// with a 2xx answer, or not for it by its filters); delivery resumes after it, whatever stopped it.
public struct WebhookEndpoint: Sendable, Hashable {
    /// Its id.
    public var id: Int64
    /// Where changes are POSTed (http or https).
    public var url: String
    /// The Standard Webhooks signing secret (`whsec_…`): never logged, listed or shown.
    public var secret: String
    /// The event types it receives (`order.upserted`, `order.removed`, `order.deleted`); empty: all.
    public var events: Set<String>
    /// The stores whose orders it receives; empty: all.
    public var storeIDs: Set<String>
    /// False once disabled (by an operator, a `410`, or retries exhausted), with ``disabledReason``.
    public var enabled: Bool
    /// Why it is disabled.
    public var disabledReason: String?
    /// The last change handled.
    public var cursor: Int64
    /// Failed attempts at the change after ``cursor``.
    public var attempts: Int
    /// Not before this Unix time (the retry schedule).
    public var nextAttemptAt: Double
    /// The last failure, and when (Unix seconds).
    public var lastError: String?
    public var lastErrorAt: Double?
    /// The last 2xx answer, Unix seconds.
    public var lastSuccessAt: Double?
    /// When it was added, Unix seconds.
    public var createdAt: Double
    /// The secret before the last rotation, which still signs beside the new one for 24 hours.
    public var previousSecret: String?
    /// When the secret was last rotated, Unix seconds.
    public var rotatedAt: Double?
    /// Counts the moves of the cursor made from outside the deliverer (a replay, an enable), so the
    /// deliverer's next store tells one apart from no move even when it put the cursor exactly where
    /// the deliverer last left it.
    public var revision: Int64
    /// How it is sent its changes: parallelism, batches, rate, extra headers, client certificate.
    public var options: WebhookDeliveryOptions

    /// Creates an endpoint record.
    public init(
        id: Int64, url: String, secret: String, events: Set<String>, storeIDs: Set<String>, enabled: Bool,
        disabledReason: String?, cursor: Int64, attempts: Int, nextAttemptAt: Double, lastError: String?,
        lastErrorAt: Double?, lastSuccessAt: Double?, createdAt: Double, previousSecret: String? = nil, rotatedAt: Double? = nil,
        revision: Int64 = 0, options: WebhookDeliveryOptions = WebhookDeliveryOptions()
    ) {
        self.id = id
        self.url = url
        self.secret = secret
        self.events = events
        self.storeIDs = storeIDs
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.cursor = cursor
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.lastSuccessAt = lastSuccessAt
        self.createdAt = createdAt
        self.previousSecret = previousSecret
        self.rotatedAt = rotatedAt
        self.revision = revision
        self.options = options
    }

    /// The secrets that sign a request at `now`: the current one, and the previous one for 24 hours
    /// after a rotation, so a receiver can switch keys without missing a change.
    public func signingSecrets(at now: Double) -> [String] {
        guard let previousSecret, let rotatedAt, now - rotatedAt < 86_400 else { return [secret] }
        return [secret, previousSecret]
    }

    /// The event types a webhook can carry, as the change feed names them.
    public static let eventTypes: Set<String> = ["order.upserted", "order.removed", "order.deleted"]

    /// A comma-separated list as stored (sorted, so it reads the same every time).
    public static func joined(_ values: Set<String>) -> String { values.sorted().joined(separator: ",") }

    /// A stored comma-separated list.
    public static func split(_ text: String?) -> Set<String> {
        Set((text ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty })
    }
}

/// What a new endpoint is.
public struct NewWebhookEndpoint: Sendable, Hashable {
    public var url: String
    public var secret: String
    public var events: Set<String>
    public var storeIDs: Set<String>
    public var options: WebhookDeliveryOptions

    /// Creates it.
    public init(url: String, secret: String, events: Set<String> = [], storeIDs: Set<String> = [],
                options: WebhookDeliveryOptions = WebhookDeliveryOptions()) {
        self.url = url
        self.secret = secret
        self.events = events
        self.storeIDs = storeIDs
        self.options = options
    }
}

/// The outgoing webhooks' endpoints and their cursors (DESIGN §13): the change log is the outbox.
public protocol WebhookOutbox: Sendable {
    /// Every endpoint, by id.
    func webhookEndpoints() async throws -> [WebhookEndpoint]
    /// Adds an endpoint that receives the changes after the current head; returns it.
    func addWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint
    /// Removes an endpoint; false when there is none with `id`.
    func removeWebhookEndpoint(id: Int64) async throws -> Bool
    /// Enables (attempts reset, due at once, the revision moved on) or disables (with `reason`) an
    /// endpoint; false when unknown.
    func setWebhookEndpoint(id: Int64, enabled: Bool, reason: String?) async throws -> Bool
    /// Replaces an endpoint's delivery options (`webhooks update`); false when unknown.
    func updateWebhookEndpoint(id: Int64, options: WebhookDeliveryOptions) async throws -> Bool
    /// Replaces an endpoint's secret; the old one keeps signing beside it for 24 hours. False when unknown.
    func rotateWebhookSecret(id: Int64, to secret: String) async throws -> Bool
    /// Moves an endpoint's cursor to `seq` (a replay: the changes after it are sent again) and its
    /// revision on; false when unknown.
    func rewindWebhookEndpoint(id: Int64, to seq: Int64) async throws -> Bool
    /// Records that the changes through `seq` were handled (`success`: the last one answered 2xx at `at`),
    /// moving the cursor only if it is still at `stored` and the revision still `revision`, where and as
    /// the deliverer last left them. False when not (a replay or `enable` moved them meanwhile, or the
    /// endpoint is gone): nothing is written then, and the deliverer starts again from the store's cursor.
    func recordWebhookProgress(
        id: Int64, from stored: Int64, revision: Int64, through seq: Int64, success: Bool, at: Double
    ) async throws -> Bool
    /// The last change applied before `at` (Unix seconds), for `webhooks replay --since TIME`; nil when none is kept.
    func lastChange(before at: Double) async throws -> Int64?
    /// Records a failed attempt: kept for `retryAt`, or disabled with `disable` as the reason.
    func recordWebhookFailure(id: Int64, error: String, attempts: Int, retryAt: Double, disable: String?, at: Double) async throws
}
