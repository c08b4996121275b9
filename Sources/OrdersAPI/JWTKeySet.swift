import Foundation
import JWTKit

/// The keys JWTs are verified with (DESIGN §14), built by jwt-kit from what the configuration names:
/// `api.jwt.keys_file` (a JWKS document, or PEM public keys: RSA, EC P-256, Ed25519),
/// `api.jwt.hmac_secret_file` (HS256), and the JWKS of `api.jwt.jwks_url`. Which algorithms a token may
/// name follows from them: RS256, ES256 and EdDSA with public keys, HS256 only with an HMAC secret;
/// `none` never.
struct JWTKeySet: Sendable {
    /// jwt-kit's collection (an actor).
    let collection: JWTKeyCollection
    /// The `kid`s the collection knows.
    let keyIDs: Set<String>
    /// The `alg`s a token may name.
    let algorithms: Set<String>

    /// The public-key algorithms, accepted whenever public keys are configured.
    static let publicKeyAlgorithms: Set<String> = ["RS256", "ES256", "EdDSA"]

    /// What one source of keys gave, before they are put together.
    struct Sources: Sendable, Hashable {
        /// The text of `api.jwt.keys_file`.
        var keysFile: String?
        /// The secret of `api.jwt.hmac_secret_file`.
        var hmacSecret: String?
        /// The last good JWKS of `api.jwt.jwks_url`.
        var jwks: String?
    }

    /// Why keys did not load: which source and why (never the key).
    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    /// One key, read from its source and not yet in a collection.
    enum Key: Sendable {
        case hmac(HMACKey)
        case rsa(Insecure.RSA.PublicKey, kid: String)
        case ecdsa(ES256PublicKey, kid: String)
        case eddsa(EdDSA.PublicKey, kid: String)
        case jwk(JWK, kid: String)
    }

    /// The keys of `sources`, read and checked without waiting (a start-up or SIGHUP check), or why
    /// one does not read.
    static func read(_ sources: Sources) throws(Failure) -> [Key] {
        var keys: [Key] = []
        if let secret = sources.hmacSecret {
            guard secret.utf8.count >= 32 else {
                throw Failure(description: "api.jwt.hmac_secret_file: the secret is shorter than 32 bytes (RFC 7518 §3.2 wants at least 256 bits)")
            }
            keys.append(.hmac(HMACKey(from: secret)))
        }
        if let text = sources.keysFile { keys += try read(keysFile: text, source: "api.jwt.keys_file") }
        if let jwks = sources.jwks { keys += try read(jwks: jwks, source: "api.jwt.jwks_url") }
        return keys
    }

    /// A keys file: a JWKS document (it starts with `{`) or PEM public keys.
    private static func read(keysFile text: String, source: String) throws(Failure) -> [Key] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") { return try read(jwks: trimmed, source: source) }
        let blocks = pemBlocks(trimmed)
        guard !blocks.isEmpty else {
            throw Failure(description: "\(source): neither a JWKS document ({\"keys\": [...]}) nor PEM public keys (-----BEGIN PUBLIC KEY-----)")
        }
        var keys: [Key] = []
        for (index, block) in blocks.enumerated() {
            let kid = "pem-\(index + 1)"
            if let key = try? Insecure.RSA.PublicKey(pem: block) {
                keys.append(.rsa(key, kid: kid))
            } else if let key = try? ES256PublicKey(pem: block) {
                keys.append(.ecdsa(key, kid: kid))
            } else if let key = try? EdDSA.PublicKey(pem: block) {
                keys.append(.eddsa(key, kid: kid))
            } else {
                throw Failure(description: "\(source): PEM key \(index + 1) is not an RSA, EC P-256 or Ed25519 public key")
            }
        }
        return keys
    }

    /// A JWKS document's keys.
    private static func read(jwks text: String, source: String) throws(Failure) -> [Key] {
        let jwks: JWKS
        do {
            jwks = try JSONDecoder().decode(JWKS.self, from: Data(text.utf8))
        } catch {
            throw Failure(description: "\(source): not a JWKS document ({\"keys\": [{\"kty\": …, \"kid\": …}]})")
        }
        var keys: [Key] = []
        for (index, key) in jwks.keys.enumerated() {
            guard let kid = key.keyIdentifier?.string else { throw Failure(description: "\(source): key \(index + 1) has no kid") }
            keys.append(.jwk(key, kid: kid))
        }
        return keys
    }

    /// The set made of `keys` (jwt-kit's collection is an actor: adding waits). A JWKS key whose
    /// material jwt-kit refuses is left out and named in `skipped`.
    static func make(_ keys: [Key]) async -> (set: JWTKeySet, skipped: [String]) {
        let collection = JWTKeyCollection()
        var keyIDs = Set<String>()
        var algorithms = Set<String>()
        var skipped: [String] = []
        for key in keys {
            switch key {
            case .hmac(let secret):
                await collection.add(hmac: secret, digestAlgorithm: .sha256)
                algorithms.insert("HS256")
            case .rsa(let rsa, let kid):
                await collection.add(rsa: rsa, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
                algorithms.formUnion(publicKeyAlgorithms)
            case .ecdsa(let ecdsa, let kid):
                await collection.add(ecdsa: ecdsa, kid: JWKIdentifier(string: kid))
                algorithms.formUnion(publicKeyAlgorithms)
            case .eddsa(let eddsa, let kid):
                await collection.add(eddsa: eddsa, kid: JWKIdentifier(string: kid))
                algorithms.formUnion(publicKeyAlgorithms)
            case .jwk(let jwk, let kid):
                do {
                    try await collection.add(jwk: jwk)
                } catch {
                    skipped.append(kid)
                    continue
                }
                keyIDs.insert(kid)
                algorithms.formUnion(publicKeyAlgorithms)
            }
        }
        return (JWTKeySet(collection: collection, keyIDs: keyIDs, algorithms: algorithms), skipped)
    }

    /// The PEM blocks of `text`, each from its BEGIN line to its END line.
    static func pemBlocks(_ text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("-----BEGIN ") { current = [Substring(trimmed)] } else if current != nil { current?.append(Substring(trimmed)) }
            if trimmed.hasPrefix("-----END "), let lines = current {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            }
        }
        return blocks
    }
}
