/// The rule for a URL the agent or `orderlive inspect` requests: absolute http(s), a host, no white
/// space or control characters. Used by `upstream.base_url` and by `inspect`'s argument.
public enum HTTPURLCheck {
    /// What is wrong with `url` and how to fix it, or nil when it passes.
    public static func problem(_ url: String) -> String? {
        let lowered = url.lowercased()
        let rest: Substring
        if lowered.hasPrefix("http://") {
            rest = url.dropFirst(7)
        } else if lowered.hasPrefix("https://") {
            rest = url.dropFirst(8)
        } else {
            return "'\(url)' is not an http:// or https:// URL"
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last ?? ""
        if host.isEmpty || host.hasPrefix(":") {
            return "'\(url)' has no host; try http://127.0.0.1:8070/v1/events"
        }
        if url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            return "'\(url)' contains white space or control characters; percent-encode them"
        }
        return nil
    }
}
