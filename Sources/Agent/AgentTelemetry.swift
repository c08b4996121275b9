public import ServiceLifecycle
public import Tracing

/// What `orderlive run` exports beside `/metrics` (DESIGN §14), as the Telemetry module made it: the
/// tracer that the push endpoint makes its spans with, and the exporters' services, which join the
/// agent's service group. Empty (the default), nothing is traced and nothing is exported.
public struct AgentTelemetry: Sendable {
    /// Spans of push requests and their commits; nil when traces are not exported.
    public var tracer: (any Tracer)?
    /// The exporters' background work: batching, export, and the flush at a clean stop.
    public var services: [any Service]

    /// Telemetry with `tracer` and `services` (none by default).
    public init(tracer: (any Tracer)? = nil, services: [any Service] = []) {
        self.tracer = tracer
        self.services = services
    }
}
