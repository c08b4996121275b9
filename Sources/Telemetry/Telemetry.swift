// Telemetry: OTLP export of the agent's logs and traces to an OpenTelemetry collector (DESIGN §14
// "Observable from where the operators are"), through swift-otel and nothing hand-written. Off by
// default; on with `telemetry.*` or the standard `OTEL_*` variables. A collector that is slow or down
// costs dropped records from a bounded queue, never memory growth and never a delayed push.
