/// The whole configuration of DESIGN §6, typed and validated.
public struct OrderliveConfiguration: Sendable, Hashable {
    /// `upstream.*`
    public var upstream = UpstreamConfiguration()
    /// `auth.*`
    public var auth = AuthConfiguration()
    /// `stream.*`
    public var stream = StreamConfiguration()
    /// `ingest.*`
    public var ingest = IngestConfiguration()
    /// `api.*`
    public var api = APIConfiguration()
    /// `sync.*`
    public var sync = SyncConfiguration()
    /// `store.*`
    public var store = StoreConfiguration()
    /// `log.*`
    public var log = LogConfiguration()
    /// `webhooks.*`
    public var webhooks = WebhooksConfiguration()
    /// `telemetry.*`
    public var telemetry = TelemetryConfiguration()
    /// The file it was read from, if any.
    public var sourceFile: String?

    /// The built-in defaults.
    public init() {}

    /// Reads every section from `reader`, each through a reader scoped to its name (Hummingbird's
    /// `ApplicationConfiguration(reader:)`): the keys are written once, where they are read.
    public init(reading reader: ConfigurationReader) throws(ConfigurationError) {
        upstream = try UpstreamConfiguration(reading: reader.scoped(to: "upstream"))
        auth = try AuthConfiguration(reading: reader.scoped(to: "auth"))
        stream = try StreamConfiguration(reading: reader.scoped(to: "stream"))
        ingest = try IngestConfiguration(reading: reader.scoped(to: "ingest"))
        api = try APIConfiguration(reading: reader.scoped(to: "api"))
        sync = try SyncConfiguration(reading: reader.scoped(to: "sync"))
        store = try StoreConfiguration(reading: reader.scoped(to: "store"))
        log = try LogConfiguration(reading: reader.scoped(to: "log"))
        webhooks = try WebhooksConfiguration(reading: reader.scoped(to: "webhooks"))
        telemetry = try TelemetryConfiguration(reading: reader.scoped(to: "telemetry"))
    }
}
