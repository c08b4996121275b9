import Foundation

/// A throwaway certificate authority made with the `openssl` tool in a temporary directory: a CA, and
/// server and client certificates it signs, PEM files a test hands to a listener or a client.
public struct TestCertificateAuthority: Sendable {
    /// A certificate and its key, as files.
    public struct Issued: Sendable {
        /// The certificate (PEM).
        public let certificate: String
        /// The private key (PEM).
        public let key: String
    }

    /// The directory holding every file; the caller removes it.
    public let directory: String
    /// The CA's name (its subject's CN).
    public let name: String
    /// The CA's certificate (PEM): a client's `--cacert`, a listener's `client_ca_file`.
    public let certificate: String
    private let key: String

    /// Makes a CA named `name` in `directory` (created if needed).
    public static func make(_ name: String, in directory: String) async throws -> TestCertificateAuthority {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (certificate, key) = (directory + "/\(name)-ca.pem", directory + "/\(name)-ca.key")
        try await openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                           "-keyout", key, "-out", certificate, "-days", "30", "-subj", "/CN=\(name) test CA",
                           "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        return TestCertificateAuthority(directory: directory, name: name, certificate: certificate, key: key)
    }

    /// Issues a certificate named `name`: for a server on 127.0.0.1 (its address in the SAN), or for a
    /// client; an EC P-256 key, or RSA 2048 with `rsa`; valid for `days`.
    public func issue(_ name: String, client: Bool = false, rsa: Bool = false, days: Int = 30) async throws -> Issued {
        let base = directory + "/\(self.name)-\(name)"
        let (certificate, key, request, extensions) = (base + ".pem", base + ".key", base + ".csr", base + ".ext")
        let keyOptions = rsa ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        try await Self.openssl(["req", "-new"] + keyOptions + ["-nodes", "-keyout", key, "-out", request, "-subj", "/CN=\(name)"])
        let usage = client ? "extendedKeyUsage=clientAuth" : "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost"
        try (usage + "\nbasicConstraints=CA:FALSE\n").write(toFile: extensions, atomically: true, encoding: .utf8)
        try await Self.openssl(["x509", "-req", "-in", request, "-CA", self.certificate, "-CAkey", self.key, "-CAcreateserial",
                                "-out", certificate, "-days", "\(days)", "-extfile", extensions])
        return Issued(certificate: certificate, key: key)
    }

    /// The `notAfter` of the certificate in `path`, Unix seconds.
    public static func expiry(of path: String) async throws -> Double {
        let run = try await runTool("/usr/bin/env", ["openssl", "x509", "-in", path, "-noout", "-enddate"])
        let text = run.output.split(separator: "=", maxSplits: 1).last.map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        guard let date = formatter.date(from: text.replacingOccurrences(of: "  ", with: " ")) else {
            throw TestCertificateError(output: run.output)
        }
        return date.timeIntervalSince1970
    }

    @discardableResult
    static func openssl(_ arguments: [String]) async throws -> String {
        let run = try await runTool("/usr/bin/env", ["openssl"] + arguments)
        guard run.status == 0 else { throw TestCertificateError(output: run.output) }
        return run.output
    }
}

/// The `openssl` tool failed; what it printed.
public struct TestCertificateError: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "openssl failed: \(output)" }
}
