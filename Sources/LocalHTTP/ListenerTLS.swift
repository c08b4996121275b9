import AsyncSignals
import NIOCore
import NIOSSL

/// The files of one listener's TLS (`ingest.tls.*`, `api.tls.*`), with the keys that name them in
/// errors and logs.
public struct TLSFiles: Sendable, Hashable {
    /// The certificate chain, PEM, leaf first.
    public var certificateFile: String
    /// The private key, PEM (EC or RSA).
    public var keyFile: String
    /// When not empty, the CA whose client certificates are required (mTLS).
    public var clientCAFile: String
    /// The configuration section the keys are under (`ingest.tls`, `api.tls`).
    public var section: String

    /// Files of `section`.
    public init(certificateFile: String, keyFile: String, clientCAFile: String = "", section: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.section = section
    }

    /// Whether a client certificate is required.
    public var requiresClientCertificate: Bool { !clientCAFile.isEmpty }
}

/// A TLS file that did not load: the key that names it, the path, and what is wrong with it.
public struct TLSLoadError: Error, Sendable, CustomStringConvertible {
    /// The configuration key (`ingest.tls.certificate_file`, ...).
    public let key: String
    /// The file.
    public let path: String
    /// What is wrong, in words an operator can act on.
    public let problem: String

    public var description: String { "'\(key)': \(path): \(problem)" }
}

/// One listener's TLS material, swapped whole on reload: every new handshake uses what was loaded
/// last, connections already open keep theirs. TLS 1.2 is the least accepted; with a client CA a
/// client certificate signed by it is required. Shared by the listener's connections on any event
/// loop; the material is behind a mutex and a context, once made, is immutable.
public final class ListenerTLS: Sendable {
    /// What was loaded: the context handshakes are made with, and the leaf certificate's expiry.
    private struct Material: Sendable {
        let context: NIOSSLContext
        let expiry: Double
    }

    /// The files it loads.
    public let files: TLSFiles
    private let material: Locked<Material>

    /// Loads `files`; throws naming the key and path of the first that does not load.
    public init(_ files: TLSFiles) throws(TLSLoadError) {
        self.files = files
        material = Locked(try Self.load(files))
    }

    /// The leaf certificate's `notAfter`, Unix seconds, of the material in use.
    public var expiry: Double { material.withLock { $0.expiry } }

    /// Loads the files again; on success new handshakes use them, on failure the material in use
    /// stays and the error names the key and path.
    public func reload() -> Result<Double, TLSLoadError> {
        do throws(TLSLoadError) {
            let loaded = try Self.load(files)
            material.withLock { $0 = loaded }
            return .success(loaded.expiry)
        } catch {
            return .failure(error)
        }
    }

    /// The handler of one new connection, with the material in use now.
    func handler() -> NIOSSLServerHandler {
        NIOSSLServerHandler(context: material.withLock { $0.context })
    }

    private static func load(_ files: TLSFiles) throws(TLSLoadError) -> Material {
        func failure(_ key: String, _ path: String, _ problem: String) -> TLSLoadError {
            TLSLoadError(key: files.section + "." + key, path: path, problem: problem)
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateFile)
        } catch {
            throw failure("certificate_file", files.certificateFile, "cannot read a PEM certificate chain from it (\(error))")
        }
        guard let leaf = chain.first else {
            throw failure("certificate_file", files.certificateFile, "holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.keyFile, format: .pem)
        } catch {
            throw failure("key_file", files.keyFile, "cannot read a PEM private key (EC or RSA) from it (\(error))")
        }
        var configuration: TLSConfiguration
        if files.requiresClientCertificate {
            let authorities: [NIOSSLCertificate]
            do {
                authorities = try NIOSSLCertificate.fromPEMFile(files.clientCAFile)
            } catch {
                throw failure("client_ca_file", files.clientCAFile, "cannot read a PEM CA certificate from it (\(error))")
            }
            guard !authorities.isEmpty else { throw failure("client_ca_file", files.clientCAFile, "holds no PEM certificate") }
            configuration = .makeServerConfigurationWithMTLS(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key),
                trustRoots: .certificates(authorities))
        } else {
            configuration = .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        }
        configuration.minimumTLSVersion = .tlsv12
        // HTTP/2 first, HTTP/1.1 for clients without it (RFC 9113 §3.2); no ALPN at all is HTTP/1.1.
        configuration.applicationProtocols = ["h2", "http/1.1"]
        do {
            return Material(context: try NIOSSLContext(configuration: configuration), expiry: Double(leaf.notValidAfter))
        } catch {
            throw failure("key_file", files.keyFile, "the key does not match the certificate or cannot be used (\(error))")
        }
    }
}
