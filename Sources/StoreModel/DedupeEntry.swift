/// What a dedupe key's row keeps besides its time: the text of its `response` column, the same in
/// both engines, read and written only here.
///
/// An idempotency key names a request or a notification; it must never make the agent drop a
/// *different* one silently. So each key keeps the fingerprint (a hash of the content) of what it was
/// accepted with:
///
/// - a request key (`webhook-id`): `sha256:<fingerprint>\n<response>`. The same id with the same body
///   is a duplicate, answered with the stored response; with another body it is a conflict (409,
///   nothing applied: Stripe's rule for a reused idempotency key).
/// - a notification key (`notif_id`): `sha256:<fingerprint> <fingerprint> …`, the most recent
///   ``keptFingerprints`` contents accepted under it. The same content again is a duplicate; a
///   different one is applied and counted as a reused id (a Gorush `notif_id` is only a label, and
///   senders reuse it per template or per user).
///
/// Rows written before fingerprints existed (a bare response, or an empty text for a notification)
/// have none: they keep their old meaning, a duplicate whatever the content, until they expire.
public enum DedupeEntry {
    /// The prefix of a fingerprinted entry.
    static let marker = "sha256:"

    /// How many contents a notification key remembers.
    public static let keptFingerprints = 16

    /// What an accepted request key says about a request with the same key.
    public enum RequestVerdict: Sendable, Hashable {
        /// The same request again: answer with this.
        case duplicate(response: String)
        /// Another request under the same key.
        case conflict
    }

    /// What a notification key says about a notification with the same key.
    public enum NotificationVerdict: Sendable, Hashable {
        /// Not seen within the window: accept it and store `entry`.
        case new(entry: String)
        /// The same content again: skip it.
        case duplicate
        /// Different content under a key seen before: accept it, count it, and store `entry`.
        case reused(entry: String)
    }

    /// The entry a request key is stored with.
    public static func request(fingerprint: String?, response: String) -> String {
        guard let fingerprint else { return response }
        return marker + fingerprint + "\n" + response
    }

    /// The verdict of `stored`, a request key's entry, on a request whose body has `fingerprint`.
    public static func verdict(request stored: String, fingerprint: String?) -> RequestVerdict {
        guard stored.hasPrefix(marker), let newline = stored.firstIndex(of: "\n") else {
            return .duplicate(response: stored)
        }
        let kept = stored[stored.index(stored.startIndex, offsetBy: marker.count)..<newline]
        let response = String(stored[stored.index(after: newline)...])
        guard let fingerprint, kept != fingerprint else { return .duplicate(response: response) }
        return .conflict
    }

    /// The verdict of `stored` (nil: the key was not accepted within the window), a notification key's
    /// entry, on a notification whose content has `fingerprint`.
    public static func verdict(notification stored: String?, fingerprint: String?) -> NotificationVerdict {
        guard let stored else { return .new(entry: fingerprint.map { marker + $0 } ?? "") }
        guard stored.hasPrefix(marker), let fingerprint else { return .duplicate }
        var kept = stored.dropFirst(marker.count).split(separator: " ")
        if kept.contains(Substring(fingerprint)) { return .duplicate }
        kept.append(Substring(fingerprint))
        return .reused(entry: marker + kept.suffix(keptFingerprints).joined(separator: " "))
    }

    /// A submission whose request key was accepted within the window (`stored`): answered as
    /// before when it is the same request, a conflict when it is not. The one reading of the rule
    /// for both engines.
    public static func outcome(request key: String, stored: String, fingerprint: String?) -> SubmissionOutcome {
        switch verdict(request: stored, fingerprint: fingerprint) {
        case .duplicate(let response): .duplicate(response: response)
        case .conflict: .conflict(key: key)
        }
    }

    /// A notification under a key with this `stored` entry (nil: not accepted within the window):
    /// nil when it is a duplicate to skip; else the entry to store and whether the key was reused.
    public static func accepting(notification stored: String?, fingerprint: String?) -> (entry: String, reused: Bool)? {
        switch verdict(notification: stored, fingerprint: fingerprint) {
        case .duplicate: nil
        case .new(let entry): (entry, false)
        case .reused(let entry): (entry, true)
        }
    }
}
