import Agent

/// The operator's commands on one configuration, writing to one console: one extension per command
/// group (`+Session`, `+Reading`, `+DeadLetters`, `+StoreFile`, `+Webhooks`, `+WebhookReplay`,
/// `+Push`), each with its rules and its output. The executable builds one per command it runs; a
/// test builds one over a temporary state directory and a captured console.
public struct OperatorCommands: Sendable {
    let configuration: OrderliveConfiguration
    let console: Console

    /// Commands on `configuration`, writing to `console`.
    public init(_ configuration: OrderliveConfiguration, console: Console) {
        self.configuration = configuration
        self.console = console
    }
}
