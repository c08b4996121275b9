import Agent
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a password from the terminal on standard input without echoing it; the prompt goes to
/// standard error. Echo is restored on every path. Nil when standard input is not a terminal or
/// reaches its end.
public func readPasswordWithoutEcho(prompt: String) -> String? {
    guard isatty(0) == 1 else { return nil }
    var original = termios()
    guard tcgetattr(0, &original) == 0 else { return nil }
    var silent = original
    silent.c_lflag &= ~tcflag_t(ECHO)
    silent.c_lflag |= tcflag_t(ECHONL)
    LineWriter.standardError.write(text: prompt)
    guard tcsetattr(0, TCSAFLUSH, &silent) == 0 else { return nil }
    defer { tcsetattr(0, TCSAFLUSH, &original) }
    return readLine(strippingNewline: true)
}
