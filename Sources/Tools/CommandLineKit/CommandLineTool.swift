import Diagnostics
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process exit status. User errors and internal errors stay apart.
public struct ExitCode: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int32
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Everything worked and nothing was found wrong.
    public static let success = ExitCode(0)
    /// The command ran and found problems (invalid schemas, stale files, ...).
    public static let failure = ExitCode(1)
    /// The command line was wrong, or a file or directory could not be read or written.
    public static let usageOrIO = ExitCode(2)

    public var description: String { String(rawValue) }
}

/// A step of a command that could not go on (opening its database, say): the reason is already
/// written to standard error, and `status` is what the command exits with.
///
///     let opening = open(arguments, io: io)   // Result<Store, CommandFailure>
///     guard case .success(let store) = opening else { return opening.exitStatus }
public struct CommandFailure: Error, Sendable, Hashable {
    public let status: ExitCode
    public init(_ status: ExitCode) { self.status = status }
}

extension Result where Failure == CommandFailure {
    /// The failure's exit status; `.success` for a success.
    public var exitStatus: ExitCode {
        if case .failure(let failure) = self { return failure.status }
        return .success
    }
}

/// Where a command writes, injectable so tests capture output instead of printing.
public struct CommandIO: Sendable {
    public var writeOutput: @Sendable (String) -> Void
    public var writeError: @Sendable (String) -> Void
    /// Whether standard output is a terminal (for colour and progress).
    public var outputIsTerminal: Bool
    public var environment: [String: String]
    /// A line of standard input without its newline, or nil at its end (for questions).
    public var readLine: @Sendable () -> String?

    public init(
        writeOutput: @escaping @Sendable (String) -> Void, writeError: @escaping @Sendable (String) -> Void,
        outputIsTerminal: Bool = false, environment: [String: String] = [:], readLine: @escaping @Sendable () -> String? = { nil }
    ) {
        self.writeOutput = writeOutput
        self.writeError = writeError
        self.outputIsTerminal = outputIsTerminal
        self.environment = environment
        self.readLine = readLine
    }

    /// The process's standard output and error.
    public static func standard() -> CommandIO {
        var environment: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return CommandIO(
            writeOutput: { text in writeAll(text, to: STDOUT_FILENO) },
            writeError: { text in writeAll(text, to: STDERR_FILENO) },
            outputIsTerminal: isatty(STDOUT_FILENO) == 1,
            environment: environment,
            readLine: { Swift.readLine(strippingNewline: true) })
    }
}

/// Writes all of the text to a file descriptor, retrying partial writes (output is written
/// in a few large pieces, so there is no buffer to flush at exit).
func writeAll(_ text: String, to descriptor: Int32) {
    var text = text
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

/// A subcommand: its declaration and what it does.
public protocol Command {
    static var spec: CommandSpec { get }
    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode
}

/// A tool with subcommands (`schemagen validate ...`): dispatch, `--help`, `--version`, usage errors.
public struct CommandLineTool {
    public let name: String
    public let version: String
    public let abstract: String
    public let commands: [any Command.Type]

    public init(name: String, version: String, abstract: String, commands: [any Command.Type]) {
        self.name = name
        self.version = version
        self.abstract = abstract
        self.commands = commands
    }

    /// Runs the tool on arguments without the program name; never exits the process itself.
    public func main(arguments: [String], io: CommandIO) -> ExitCode {
        guard let first = arguments.first else {
            io.writeError(help())
            return .usageOrIO
        }
        switch first {
        case "-h", "--help":
            io.writeOutput(help())
            return .success
        case "--version":
            io.writeOutput("\(name) \(version)\n")
            return .success
        case "help":
            guard arguments.count > 1 else {
                io.writeOutput(help())
                return .success
            }
            if arguments[1] == "--markdown" {
                io.writeOutput(CommandReference.document(self))
                return .success
            }
            guard let command = command(named: arguments[1]) else {
                return usageError(UsageError("unknown command '\(arguments[1])'\(commandHint(arguments[1]))"), usage: rootUsage, io: io)
            }
            io.writeOutput(command.spec.help(toolName: name))
            return .success
        default:
            break
        }
        guard let command = command(named: first) else {
            let what = first.hasPrefix("-") ? "unknown option '\(first)'" : "unknown command '\(first)'\(commandHint(first))"
            return usageError(UsageError(what), usage: rootUsage, io: io)
        }
        let spec = command.spec
        do {
            let parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), for: spec)
            if parsed.flag("help") {
                io.writeOutput(spec.help(toolName: name))
                return .success
            }
            return command.run(parsed, io: io)
        } catch {
            return usageError(error, usage: spec.usage(toolName: name), io: io, helpFor: spec.name)
        }
    }

    private func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.spec.name == name }
    }

    private func commandHint(_ word: String) -> String {
        Suggestion.hint(for: word, in: commands.map { $0.spec.name })
    }

    private var rootUsage: String { "\(name) <command> [options]" }

    private func usageError(_ error: UsageError, usage: String, io: CommandIO, helpFor command: String? = nil) -> ExitCode {
        let helpCommand = command.map { "\(name) \($0) --help" } ?? "\(name) --help"
        io.writeError("\(name): error: \(error.message)\nUsage: \(usage)\nSee '\(helpCommand)'.\n")
        return .usageOrIO
    }

    public func help() -> String {
        var out = "OVERVIEW: \(abstract)\n\nUSAGE: \(rootUsage)\n\nCOMMANDS:\n"
        out += HelpFormatter.table(commands.map { ($0.spec.name, $0.spec.abstract) })
        out += "\nOPTIONS:\n"
        out += HelpFormatter.table([("-h, --help", "Show this help."), ("--version", "Show the version.")])
        out += "\nSee '\(name) help <command>' for a command's options ('\(name) help --markdown': all of them, as docs/commands.md shows them).\n"
        return out
    }
}

/// Runs async work to completion from a synchronous command, and returns its result or
/// throws its error.
public func runToCompletion<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw CancellationError() }
    return try result.get()
}

/// Written by the task before it signals, read after the wait.
private final class ResultBox<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
