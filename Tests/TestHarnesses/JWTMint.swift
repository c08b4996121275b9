import Foundation
import TestKit

/// Keys and JWTs made by PyJWT and `cryptography` (Debian's python3-jwt, python3-cryptography,
/// installed by `make deps`) — not by the code under test — for the orders API's JWT tests.
public struct JWTMint: Sendable {
    /// A temporary directory holding the keys (`rsa.pem`, `ec.pem`, `ed.pem` and their `.pub`).
    public let directory: String
    /// The HS256 secret.
    public let hmacSecret = "hs256-secret-of-the-tests-0123456789abcdef"

    /// The interpreter with PyJWT: Debian's, whatever `python3` is first on the PATH.
    static let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"

    /// Makes an RSA 2048, an EC P-256 and an Ed25519 key pair.
    public static func make() async throws -> JWTMint {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let run = try await runTool("/usr/bin/env", [python, "-c", keysScript, directory])
        guard run.status == 0 else { throw MintFailure(description: "making keys: \(run.output)") }
        return JWTMint(directory: directory)
    }

    /// The public keys as one PEM file's text (RSA, then EC, then Ed25519).
    public func publicPEM() throws -> String {
        try ["rsa", "ec", "ed"].map { try String(contentsOfFile: directory + "/\($0).pub", encoding: .utf8) }.joined(separator: "\n")
    }

    /// A JWKS document of the public keys, each under the `kid` given (`rsa`, `ec`, `ed` → kid).
    public func jwks(_ kids: [String: String]) async throws -> String {
        let arguments = kids.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
        let run = try await runTool("/usr/bin/env", [Self.python, "-c", Self.jwksScript, directory] + arguments)
        guard run.status == 0 else { throw MintFailure(description: "JWKS: \(run.output)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A JWT of `claims` (JSON) signed with `key` (`rsa`, `ec`, `ed`, `hmac`, `none`, or
    /// `confused`: HS256 with the RSA public key's PEM as the HMAC secret), under `alg`, with `kid`.
    public func token(_ claims: String, key: String, alg: String, kid: String? = nil) async throws -> String {
        let run = try await runTool("/usr/bin/env", [Self.python, "-c", Self.tokenScript, directory, key, alg, kid ?? "", claims, hmacSecret])
        guard run.status == 0 else { throw MintFailure(description: "token: \(run.output)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public struct MintFailure: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) {
            self.description = description
        }
    }

    static let keysScript = """
        import sys
        from cryptography.hazmat.primitives.asymmetric import rsa, ec, ed25519
        from cryptography.hazmat.primitives import serialization as s
        d = sys.argv[1]
        for name, key in (("rsa", rsa.generate_private_key(65537, 2048)), ("ec", ec.generate_private_key(ec.SECP256R1())), ("ed", ed25519.Ed25519PrivateKey.generate())):
            open(f"{d}/{name}.pem", "wb").write(key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
            open(f"{d}/{name}.pub", "wb").write(key.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo))
        """

    static let jwksScript = """
        import sys, json
        from jwt.algorithms import RSAAlgorithm, ECAlgorithm, OKPAlgorithm
        from cryptography.hazmat.primitives import serialization as s
        d, pairs = sys.argv[1], sys.argv[2:]
        keys = []
        for name, kid in zip(pairs[::2], pairs[1::2]):
            public = s.load_pem_public_key(open(f"{d}/{name}.pub", "rb").read())
            jwk = json.loads({"rsa": RSAAlgorithm, "ec": ECAlgorithm, "ed": OKPAlgorithm}[name].to_jwk(public))
            jwk["kid"] = kid
            keys.append(jwk)
        print(json.dumps({"keys": keys}))
        """

    static let tokenScript = """
        import sys, json, jwt, hmac, hashlib, base64
        d, key, alg, kid, claims, secret = sys.argv[1:7]
        headers = {"kid": kid} if kid else None
        def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        if key == "none":
            header = {"alg": "none", "typ": "JWT"}
            if kid: header["kid"] = kid
            print(b64(json.dumps(header).encode()) + "." + b64(claims.encode()) + ".")
        elif key == "confused":
            header = {"alg": "HS256", "typ": "JWT"}
            if kid: header["kid"] = kid
            signing = b64(json.dumps(header).encode()) + "." + b64(claims.encode())
            mac = hmac.new(open(f"{d}/rsa.pub", "rb").read(), signing.encode(), hashlib.sha256).digest()
            print(signing + "." + b64(mac))
        else:
            signing_key = secret if key == "hmac" else open(f"{d}/{key}.pem", "rb").read()
            print(jwt.encode(json.loads(claims), signing_key, algorithm=alg, headers=headers))
        """
}
