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

    /// The entry a request key is stored with.
    public static func request(fingerprint: String?, response: String) -> String {
        guard let fingerprint else { return response }
        return marker + fingerprint + "\n" + response
    }

    /// A submission whose request key was accepted within the window (`stored`): answered as
    /// before when it is the same request (or the entry predates fingerprints), a conflict when it is
    /// not. The one reading of the rule for both engines.
    public static func outcome(request key: String, stored: String, fingerprint: String?) -> SubmissionOutcome {
        guard stored.hasPrefix(marker), let newline = stored.firstIndex(of: "\n") else {
            return .duplicate(response: stored)
        }
        let kept = stored[stored.index(stored.startIndex, offsetBy: marker.count)..<newline]
        if let fingerprint, kept != fingerprint { return .conflict(key: key) }
        return .duplicate(response: String(stored[stored.index(after: newline)...]))
    }

    /// A notification under a key with this `stored` entry (nil: not accepted within the window):
    /// nil when it is a duplicate to skip (the same content, or an entry that predates fingerprints);
    /// else the entry to store and whether the key was reused for other content.
    public static func accepting(notification stored: String?, fingerprint: String?) -> (entry: String, reused: Bool)? {
        guard let stored else { return (fingerprint.map { marker + $0 } ?? "", false) }
        guard stored.hasPrefix(marker), let fingerprint else { return nil }
        var kept = stored.dropFirst(marker.count).split(separator: " ")
        if kept.contains(Substring(fingerprint)) { return nil }
        kept.append(Substring(fingerprint))
        return (marker + kept.suffix(keptFingerprints).joined(separator: " "), true)
    }
}
