/// One request to accept exactly once (a push request, DESIGN §4): the jobs of each of its parts with
/// the part's idempotency key (a push's `notif_id`), the request's own key (`webhook-id`), and the
/// answer to replay to a duplicate. Each key comes with the fingerprint of its content, so a key
/// reused for different content is never taken for a duplicate (``DedupeEntry``).
public struct IdempotentSubmission: Sendable, Hashable {
    /// One part's jobs and its idempotency key (a push's notification).
    public struct Part: Sendable, Hashable {
        /// The part's key (`notif_id`), when the sender gave one.
        public var key: String?
        /// A hash of the part's content; nil: any content under the key is the same part.
        public var fingerprint: String?
        /// The jobs it makes (none for a part about something else).
        public var jobs: [NewJob]

        /// Creates a part of a submission.
        public init(key: String?, fingerprint: String? = nil, jobs: [NewJob]) {
            self.key = key
            self.fingerprint = fingerprint
            self.jobs = jobs
        }
    }

    /// The request's key (`webhook-id`), when the sender gave one.
    public var requestKey: String?
    /// A hash of the request's body; nil: any request under the key is the same request.
    public var requestFingerprint: String?
    /// The parts, in request order.
    public var parts: [Part]
    /// The body answered with the 200, stored with the request's key.
    public var response: String

    /// Creates a submission.
    public init(requestKey: String?, requestFingerprint: String? = nil, parts: [Part], response: String) {
        self.requestKey = requestKey
        self.requestFingerprint = requestFingerprint
        self.parts = parts
        self.response = response
    }

    /// The entry its request key is stored with.
    public var requestEntry: String { DedupeEntry.request(fingerprint: requestFingerprint, response: response) }
}

/// What became of one submission.
public enum SubmissionOutcome: Sendable, Hashable {
    /// Committed: `jobs` new jobs (after collapsing), of which `applied` were applied at once instead
    /// of journaled (``ImmediateApply``); `duplicateParts` were seen before; `reusedParts` came under
    /// a key seen before with other content, and were accepted.
    case accepted(jobs: Int, duplicateParts: Int, applied: Int = 0, reusedParts: Int = 0)
    /// The request's key was accepted within the dedupe window: nothing new; answer as before.
    case duplicate(response: String)
    /// The request's key was accepted within the dedupe window for a different request: nothing of
    /// this one was accepted.
    case conflict(key: String)
    /// The journal is at or over its high-water mark: nothing of the request was accepted.
    case overloaded(depth: Int)
    /// The database refused the write: nothing of the request was accepted.
    case failed(reason: String)
}

/// Limits that apply to one batch of submissions.
public struct SubmissionPolicy: Sendable, Hashable {
    /// Keys accepted at or after this Unix time count as duplicates.
    public var dedupeSince: Double
    /// Journal depth at which submissions are refused.
    public var highWaterJobs: Int
    /// When set, keys accepted before this Unix time are deleted in the same transaction.
    public var purgeKeysBefore: Double?

    /// Creates a policy.
    public init(dedupeSince: Double, highWaterJobs: Int, purgeKeysBefore: Double? = nil) {
        self.dedupeSince = dedupeSince
        self.highWaterJobs = highWaterJobs
        self.purgeKeysBefore = purgeKeysBefore
    }
}
