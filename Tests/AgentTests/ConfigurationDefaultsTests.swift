@testable import Agent
import AuthSession
import CurlHTTP
import EventStream
import OrderSync
import OrdersAPI
import PostgresStore
import PushIngest
import Testing
import WebhookDelivery
import LocalHTTP

/// Each default is written once, in the component that uses it; the configuration's keys start from
/// it. `OrderliveConfiguration()` is checked against the components' own defaults, so a default
/// written again in the loader (and then changed in one place only) fails here.
@Suite(.timeLimit(.minutes(1))) struct ConfigurationDefaultsTests {
    @Test func theConfigurationsDefaultsAreTheComponents() throws {
        let configuration = OrderliveConfiguration()
        let push = PushServer.settings()
        let endpoint = PushEndpoint.Configuration()
        #expect(configuration.ingest.listen == "\(push.host):\(push.port)")
        #expect(configuration.ingest.readTimeout == push.readTimeout)
        #expect(configuration.ingest.maximumBodyBytes == push.maximumBodyBytes)
        #expect(configuration.ingest.maximumConnections == push.maximumConnections)
        #expect(configuration.ingest.maximumNotifications == endpoint.maximumNotifications)

        let api = OrdersAPIServer.settings()
        let hub = ChangeHub.Configuration()
        let sessions = APICredentials.Settings()
        #expect(configuration.api.listen == "\(api.host):\(api.port)")
        #expect(configuration.api.readTimeout == api.readTimeout && configuration.api.maximumConnections == api.maximumConnections)
        #expect(configuration.api.historyChanges == hub.historyChanges && configuration.api.heartbeat == hub.heartbeat)
        #expect(configuration.api.maximumSubscribers == hub.maximumSubscribers)
        #expect(configuration.api.subscriberBuffer == hub.subscriberBuffer)
        #expect(configuration.api.maximumSessions == sessions.maximumSessions && configuration.api.queryTokens == sessions.queryTokens)

        let source = EventSourceConfiguration(url: "")
        #expect(configuration.stream.initialDelay == source.initialDelay)
        #expect(configuration.stream.maximumDelay == source.maximumDelay)
        #expect(configuration.stream.resetAfter == source.resetAfter)
        #expect(configuration.stream.idleTimeout == source.idleTimeout)

        let executor = SyncExecutor.Configuration()
        #expect(configuration.sync.maximumAttempts == executor.maximumAttempts)
        #expect(configuration.sync.pageSize == executor.pageSize)
        #expect(configuration.sync.retryBase == executor.retryBase)
        #expect(configuration.sync.retryMaximum == executor.retryMaximum)
        #expect(configuration.sync.outageProbeMaximum == executor.probeMaximum)

        let webhooks = WebhookSettings()
        #expect(configuration.webhooks.timeout == webhooks.timeout)
        #expect(Int64(configuration.webhooks.maximumBacklog) == webhooks.maximumBacklog)
        #expect(try WebhooksConfiguration.schedule(configuration.webhooks.retrySchedule) == WebhookSettings.standardSchedule,
                "the schedule as written is the deliverer's")

        #expect(configuration.store.failover == PostgresStoreConfiguration.standardFailover)
        #expect(configuration.auth.refreshAhead == Session.Dependencies.standardRefreshAhead)
        #expect(configuration.upstream.connectTimeout == HTTPRequest.standardConnectTimeout)
        #expect(configuration.upstream.requestTimeout == HTTPRequest.standardTimeout)
    }
}
