// The operator's commands: what each `orderlive` command does and what it prints — status, orders,
// dead letters, the journal, the store file (backup, restore, check), webhooks, push send, inspect,
// login and logout, the sandbox and the demo. The executable only declares the arguments
// (ArgumentParser) and calls in here; Agent keeps the composition root, the configuration and the
// runtime services these commands read.

public import Agent
public import Logging

/// A command that could not do what it was asked: one line on standard error, exit 1. The message
/// names what was wrong and what to do.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public var description: String

    /// Creates a failure.
    public init(_ description: String) {
        self.description = description
    }
}

/// A command given arguments it cannot use: one line on standard error, exit 2.
public struct CommandUsageError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// Where a command writes and what it may ask: the process's own terminal in `orderlive`, captured
/// lines in a test.
public struct Console: Sendable {
    /// Writes one line of the command's output (standard output).
    public var write: @Sendable (String) -> Void
    /// Writes one line for the operator beside the output (standard error).
    public var note: @Sendable (String) -> Void
    /// True when the operator can answer a question (standard input is a terminal).
    public var canAsk: Bool
    /// Reads one answer line; nil at the end of input.
    public var readAnswer: @Sendable () -> String?
    /// True when the notes go to a terminal, where a progress line can redraw itself.
    public var showsProgress: Bool

    /// Creates a console.
    public init(
        write: @escaping @Sendable (String) -> Void, note: @escaping @Sendable (String) -> Void,
        canAsk: Bool = false, readAnswer: @escaping @Sendable () -> String? = { nil }, showsProgress: Bool = false
    ) {
        self.showsProgress = showsProgress
        self.write = write
        self.note = note
        self.canAsk = canAsk
        self.readAnswer = readAnswer
    }

    /// The process's standard output, standard error and standard input.
    public static func terminal() -> Console {
        Console(
            write: { LineWriter.standardOutput.write(line: $0) },
            note: { LineWriter.standardError.write(line: $0) },
            canAsk: LineWriter(descriptor: 0).isTerminal,
            readAnswer: { readLine(strippingNewline: true) },
            showsProgress: LineWriter.standardError.isTerminal)
    }

    /// Writes a list: one JSON document when `json`, else `empty` for no items, else a line per item.
    func list<Item>(
        _ items: [Item], json: Bool, empty: String, document: ([Item]) -> String, lines: ([Item]) -> [String]
    ) {
        if json {
            write(document(items))
        } else if items.isEmpty {
            write(empty)
        } else {
            for line in lines(items) { write(line) }
        }
    }
}

/// Logging for commands whose own output is the product: on stderr, warnings and errors unless
/// `level` says otherwise.
public func commandLogger(_ label: String, level: Logger.Level = .warning) -> Logger {
    var logger = Logger(label: label) { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = level
    return logger
}

/// Quiet logging for the commands whose own messages say what happened.
func quietLogger() -> Logger {
    commandLogger("orderlive", level: .critical)
}

/// Loads the configuration (`--config FILE`, else `./orderlive.yaml` if present), the error in one line.
public func loadConfiguration(file: String?) async throws(CommandFailure) -> OrderliveConfiguration {
    do {
        return try await ConfigurationLoader.load(file: file)
    } catch {
        throw CommandFailure("configuration: \(error.message)")
    }
}
