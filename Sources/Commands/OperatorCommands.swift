public import Agent
public import Logging

/// The operator's commands on one configuration, writing to one console: one extension per command
/// group (`+Session`, `+Reading`, `+DeadLetters`, `+StoreFile`, `+Webhooks`, `+WebhookReplay`,
/// `+Push`), each with its rules and its output. The executable builds one per command it runs; a
/// test builds one over a temporary state directory and a captured console.
public struct OperatorCommands: Sendable {
    let configuration: OrderliveConfiguration
    let console: Console
    /// Where a command logs what it changed, one notice per thing (a dead letter dropped): stderr at
    /// notice level unless the caller keeps the lines itself.
    let notices: Logger

    /// Commands on `configuration`, writing to `console` and logging their changes to `notices`.
    public init(_ configuration: OrderliveConfiguration, console: Console,
                notices: Logger = commandLogger("orderlive", level: .notice)) {
        self.configuration = configuration
        self.console = console
        self.notices = notices
    }
}
