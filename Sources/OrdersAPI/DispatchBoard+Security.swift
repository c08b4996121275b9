import Foundation
import HTTPTypes
import WebhookSigning

/// The board's page is served hardened (DESIGN §14): a Content-Security-Policy that lets it run
/// only its own inline script and style (by their SHA-256, so nothing injected into the page runs),
/// talk only to its own origin, and be framed by no one; no MIME sniffing; and no `Referer`, so a
/// `?access_token=` URL never leaks to another site.
extension DispatchBoard {
    /// The headers of `GET /`.
    static let securityHeaders: HTTPFields = {
        var headers = HTTPFields()
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        if let nosniff = HTTPField.Name("X-Content-Type-Options") { headers[nosniff] = "nosniff" }
        if let referrer = HTTPField.Name("Referrer-Policy") { headers[referrer] = "no-referrer" }
        return headers
    }()

    /// `default-src 'self'`, the page's one inline script and one inline style by hash, its own
    /// origin for the feed, no frames, no base or form targets.
    static let contentSecurityPolicy: String = [
        "default-src 'self'",
        "script-src " + hashes(of: "script"),
        "style-src " + hashes(of: "style"),
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    /// `'sha256-…'` of every inline `<tag>` element of the page, as the browser hashes it: the exact
    /// text between the opening and the closing tag.
    static func hashes(of tag: String) -> String {
        var sources: [String] = []
        var rest = html[...]
        while let open = rest.range(of: "<\(tag)>"), let close = rest.range(of: "</\(tag)>", range: open.upperBound..<rest.endIndex) {
            let digest = SHA256Digest.of(Array(rest[open.upperBound..<close.lowerBound].utf8))
            sources.append("'sha256-\(Data(digest).base64EncodedString())'")
            rest = rest[close.upperBound...]
        }
        return sources.isEmpty ? "'none'" : sources.joined(separator: " ")
    }
}
