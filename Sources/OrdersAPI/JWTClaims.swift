import Foundation
import JWTKit

/// What a JWT for the orders API says (DESIGN §14), as its JSON has it: `exp` (required), `nbf`,
/// `iss`, `aud`, `sub` (the consumer's name), `stores` (store ids, or `"*"`), and `scope` (space-
/// separated, holding `orders:read`, and `orders:operate` for operators). Decoded by jwt-kit after it
/// verified the signature; checked here, with the agent's clock, by ``principal(now:rules:)``.
struct JWTClaims: JWTPayload, Equatable {
    var exp: Double?
    var nbf: Double?
    var iss: String?
    var aud: Audience?
    var sub: String?
    var stores: Stores?
    var scope: String?

    /// `aud`: one audience or several.
    enum Audience: Codable, Sendable, Equatable {
        case one(String)
        case several([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) { self = .one(one) } else { self = .several(try container.decode([String].self)) }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .one(let one): try container.encode(one)
            case .several(let several): try container.encode(several)
            }
        }

        var values: [String] {
            switch self {
            case .one(let one): [one]
            case .several(let several): several
            }
        }
    }

    /// `stores`: `"*"`, or store ids as strings or integers.
    enum Stores: Codable, Sendable, Equatable {
        case all
        case listed([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                guard text == "*" else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "stores is \"*\" or an array of store ids")
                }
                self = .all
            } else if let names = try? container.decode([String].self) {
                self = .listed(names)
            } else {
                // Integers as the backend writes store ids; Int64 decoding refuses fractions and overflow.
                self = .listed(try container.decode([Int64].self).map(String.init))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .all: try container.encode("*")
            case .listed(let stores): try container.encode(stores)
            }
        }
    }

    /// jwt-kit's own hook runs after the signature verified; the claims are checked by
    /// ``principal(now:rules:)`` with the agent's injected clock instead.
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// What the agent requires of the claims.
    struct Rules: Sendable, Hashable {
        /// `iss` must be this, when set.
        var issuer: String?
        /// `aud` must hold this, when set.
        var audience: String?
        /// Seconds of clock difference allowed on `exp` and `nbf`.
        var leeway: Double
    }

    /// The consumer these claims make at `now` (Unix seconds), or why they are refused (a message
    /// naming the claim, never the token). Pure, for the tests and the fuzzer.
    func principal(now: Double, rules: Rules) throws(APIDenial) -> APIPrincipal {
        func refused(_ message: String) -> APIDenial { .unauthorized("the JWT " + message) }
        guard let exp, exp.isFinite else { throw refused("has no exp: a JWT for the orders API must expire") }
        guard exp + rules.leeway > now else { throw refused("has expired (exp)") }
        if let nbf {
            guard nbf.isFinite, nbf - rules.leeway <= now else { throw refused("is not valid yet (nbf)") }
        }
        if let issuer = rules.issuer, iss != issuer { throw refused("was not issued by api.jwt.issuer (iss)") }
        if let audience = rules.audience, aud?.values.contains(audience) != true {
            throw refused("is not for api.jwt.audience (aud)")
        }
        guard let sub, Self.isName(sub) else {
            throw refused("needs sub, the consumer's name: 1 to 128 printable characters without spaces or quotes")
        }
        let granted = (scope ?? "").split(separator: " ")
        guard granted.contains("orders:read") else { throw refused("has no orders:read in scope") }
        let storeSet: Set<String>?
        switch stores {
        case nil:
            throw refused("needs stores: an array of store ids, or \"*\" for every store")
        case .all?:
            storeSet = nil
        case .listed(let ids)?:
            guard !ids.isEmpty, ids.count <= 10_000, ids.allSatisfy({ APIConsumers.isWord(Substring($0)) }) else {
                throw refused("stores must be \"*\" or 1 to 10,000 store ids, each 1 to 64 letters, digits, '.', '_' or '-'")
            }
            storeSet = Set(ids)
        }
        let access: APIConsumer.Access = granted.contains("orders:operate") ? .operate : .read
        return APIPrincipal(consumer: APIConsumer(name: sub, stores: storeSet, access: access), expiresAt: exp, isJWT: true)
    }

    /// A `sub` the logs can carry: printable ASCII without blanks, quotes or backslashes.
    static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }
    }
}

/// The header of a compact JWT, read before any key is chosen: its `alg` and `kid`. Ours, so fuzzed.
struct JWTHeaderFields: Sendable, Equatable {
    var algorithm: String
    var keyID: String?

    /// The longest token read (a header line is bounded anyway; this bounds the work).
    static let longestToken = 8_192

    /// The header of `token`, or nil when it is not a compact JWT with a JSON header naming `alg`.
    static func parse(_ token: Substring) -> JWTHeaderFields? {
        guard token.utf8.count <= longestToken else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, let header = base64URL(parts[0]),
              let object = try? JSONSerialization.jsonObject(with: header) as? [String: Any],
              let algorithm = object["alg"] as? String else { return nil }
        let keyID = object["kid"] as? String
        if object["kid"] != nil, keyID == nil { return nil }
        return JWTHeaderFields(algorithm: algorithm, keyID: keyID)
    }

    /// Base64url without padding (RFC 7515 §2), or nil.
    static func base64URL(_ text: Substring) -> Data? {
        guard text.utf8.allSatisfy({ byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
        }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }
}

/// The fuzzer's way into the JWT parsing that is ours (the header read, the claims mapping): a
/// violated rule, or nil.
package enum JWTParsingRules {
    package static func violation(in bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        if JWTHeaderFields.parse(Substring(text)) != nil, text.utf8.count > JWTHeaderFields.longestToken {
            return "a header is read only from a token within the length bound"
        }
        guard let claims = try? JSONDecoder().decode(JWTClaims.self, from: Data(bytes)) else { return nil }
        let rules = JWTClaims.Rules(issuer: nil, audience: nil, leeway: 30)
        guard let principal = try? claims.principal(now: 1_800_000_000, rules: rules) else { return nil }
        if principal.consumer.stores?.isEmpty == true { return "a JWT consumer has a store or every store" }
        if !JWTClaims.isName(principal.consumer.name) { return "a JWT consumer's name is printable" }
        guard let exp = claims.exp, exp + 30 > 1_800_000_000, principal.expiresAt == exp else { return "an accepted JWT has not expired" }
        return nil
    }
}
