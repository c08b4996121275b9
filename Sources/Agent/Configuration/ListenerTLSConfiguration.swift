import LocalHTTP

/// `ingest.tls.*` and `api.tls.*`: a listener's TLS files (PEM). Without a certificate the listener
/// speaks plain HTTP; with a client CA it requires a client certificate signed by it (mTLS).
public struct ListenerTLSConfiguration: Sendable, Hashable {
    /// The certificate chain, leaf first.
    public var certificateFile = ""
    /// The private key (EC or RSA).
    public var keyFile = ""
    /// The CA whose client certificates are required; "" for none.
    public var clientCAFile = ""

    /// TLS is off.
    public init() {}

    /// Whether the listener speaks TLS.
    public var isEnabled: Bool { !certificateFile.isEmpty }

    /// Reads `tls.certificate_file`, `tls.key_file` and `tls.client_ca_file` of `section` (each
    /// readable when set): a certificate needs its key and the other way round, and a client CA needs both.
    init(reading section: ConfigurationSection) throws(ConfigurationError) {
        certificateFile = try section.readableFile("tls.certificate_file", default: certificateFile)
        keyFile = try section.readableFile("tls.key_file", default: keyFile)
        clientCAFile = try section.readableFile("tls.client_ca_file", default: clientCAFile)
        let name = section.name
        if certificateFile.isEmpty != keyFile.isEmpty {
            let (set, missing) = certificateFile.isEmpty ? ("key_file", "certificate_file") : ("certificate_file", "key_file")
            throw ConfigurationError("'\(name).tls.\(set)' is set but '\(name).tls.\(missing)' is not: TLS needs both (PEM files)")
        }
        if !clientCAFile.isEmpty, certificateFile.isEmpty {
            throw ConfigurationError("'\(name).tls.client_ca_file' is set but the listener has no TLS: "
                + "set '\(name).tls.certificate_file' and '\(name).tls.key_file' too")
        }
    }
}

extension ListenerHTTP2 {
    /// Reads `http2_cleartext` and `max_streams_per_connection` (1–100,000) of `section` (`ingest`,
    /// `api`). With TLS the listener offers `h2` by ALPN whatever `http2_cleartext` says.
    init(reading section: ConfigurationSection, default value: ListenerHTTP2) throws(ConfigurationError) {
        self.init(
            cleartext: try section.boolean("http2_cleartext", default: value.cleartext),
            maximumStreamsPerConnection: try section.integer(
                "max_streams_per_connection", minimum: 1, maximum: 100_000, default: value.maximumStreamsPerConnection))
    }
}
