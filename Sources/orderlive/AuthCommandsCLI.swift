import Agent
import ArgumentParser
import Commands

/// `--config FILE`, shared by every command that reads configuration.
struct ConfigOption: ParsableArguments {
    @Option(name: .customLong("config"), help: "The configuration file (default: ./orderlive.yaml if present).")
    var file: String?

    func load() async throws -> OrderliveConfiguration {
        try await loadConfiguration(file: file)
    }

    /// The operator's commands on the loaded configuration, writing to this process's terminal.
    func commands() async throws -> OperatorCommands {
        OperatorCommands(try await load(), console: .terminal())
    }
}

/// A command that reads the configuration and does one operator command on it: its rule and its
/// output live in `Commands`; the command only says which.
protocol OperatorCommand: AsyncParsableCommand {
    /// `--config FILE`.
    var config: ConfigOption { get }
    /// Does the command's work.
    func perform(_ commands: OperatorCommands) async throws
}

extension OperatorCommand {
    func run() async throws {
        try await perform(config.commands())
    }
}

/// `orderlive login`
struct Login: OperatorCommand {
    static let configuration = CommandConfiguration(
        abstract: "Log in to the order backend and store the session.",
        discussion: """
            The password comes from --password-stdin, else auth.password_file, else ORDERLIVE_AUTH_PASSWORD, \
            else a prompt without echo when standard input is a terminal. It is never stored: only the \
            tokens are, in <state_dir>/credentials.json (0600).
            """
    )

    @OptionGroup var config: ConfigOption

    @Option(help: "The login identifier (default: auth.identifier).") var identifier: String?

    @Flag(name: .customLong("password-stdin"), help: "Read the password from the first line of standard input.")
    var passwordStdin = false

    func perform(_ commands: OperatorCommands) async throws {
        try await commands.login(identifier: identifier, password: passwordStdin ? .standardInputLine : .configuredOrPrompt)
    }
}

/// `orderlive logout`
struct Logout: OperatorCommand {
    static let configuration = CommandConfiguration(
        abstract: "Revoke the session upstream (best effort, 2 s) and delete local credentials."
    )

    @OptionGroup var config: ConfigOption

    @Flag(help: "Also delete the local order database (orderlive.sqlite).") var wipe = false

    func perform(_ commands: OperatorCommands) async throws { try await commands.logout(wipe: wipe) }
}

/// `orderlive status`
struct Status: OperatorCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the session state from the state directory (never a token).",
        discussion: "Works whether or not the agent is running. With SQLite it makes no network request; "
            + "with PostgreSQL (store.backend) it reads the account's rows from the shared database."
    )

    @OptionGroup var config: ConfigOption

    @Flag(help: "One JSON object.") var json = false

    func perform(_ commands: OperatorCommands) async throws { try await commands.status(json: json) }
}
