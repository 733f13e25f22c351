import Diagnostics

/// The values parsed from a command line, looked up by the option's long name.
public struct ParsedArguments: Sendable, Equatable {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    /// Positional arguments in order, including everything after `--`.
    public internal(set) var arguments: [String] = []

    public init() {}

    public func flag(_ long: String) -> Bool { flags.contains(long) }
    /// The last value given for an option.
    public func value(_ long: String) -> String? { values[long]?.last }
    /// Every value given for a repeatable option, in order.
    public func values(_ long: String) -> [String] { values[long] ?? [] }
}

/// A mistake on the command line: reported in one line plus the usage, exit code 2.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One element of the command line, keeping the original text for messages.
enum Token: Equatable {
    /// `--name` or `--name=value`.
    case long(name: String, value: String?, original: String)
    /// `-abc`: one or more short options, the last possibly followed by an attached value.
    case short(letters: [Character], original: String)
    case value(String)
    /// `--`: everything after it is positional.
    case terminator

    static func tokenize(_ arguments: [String]) -> [Token] {
        var tokens: [Token] = []
        var afterTerminator = false
        for argument in arguments {
            if afterTerminator {
                tokens.append(.value(argument))
            } else if argument == "--" {
                afterTerminator = true
                tokens.append(.terminator)
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                if let equals = body.firstIndex(of: "=") {
                    tokens.append(.long(name: String(body[..<equals]), value: String(body[body.index(after: equals)...]), original: argument))
                } else {
                    tokens.append(.long(name: String(body), value: nil, original: argument))
                }
            } else if argument.hasPrefix("-"), argument.count > 1 {
                tokens.append(.short(letters: Array(argument.dropFirst()), original: argument))
            } else {
                tokens.append(.value(argument))
            }
        }
        return tokens
    }
}

/// Parses a command's arguments against its `CommandSpec`.
public enum ArgumentParser {
    public static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsing = Parsing(options: spec.allOptions, tokens: Token.tokenize(arguments)[...])
        while let token = parsing.tokens.popFirst() {
            switch token {
            case .terminator:
                continue
            case .value(let value):
                parsing.result.arguments.append(value)
            case .long(let name, let attached, let original):
                try parsing.long(name, attached: attached, original: original)
            case .short(let letters, let original):
                try parsing.short(letters, original: original)
            }
        }
        let result = parsing.result
        // `--help` wins over missing or extra arguments.
        if result.flag("help") { return result }
        let required = spec.arguments.filter(\.isRequired)
        if result.arguments.count < required.count {
            throw UsageError("missing argument <\(required[result.arguments.count].name)>")
        }
        if !spec.arguments.contains(where: \.isVariadic), result.arguments.count > spec.arguments.count {
            throw UsageError("unexpected argument '\(result.arguments[spec.arguments.count])'")
        }
        return result
    }

    /// The arguments left to read, and what was read so far.
    private struct Parsing {
        let options: [OptionSpec]
        var tokens: ArraySlice<Token>
        var result = ParsedArguments()

        /// `--name`, `--name=value` or `--name value`.
        mutating func long(_ name: String, attached: String?, original: String) throws(UsageError) {
            guard let option = options.first(where: { $0.long == name }) else {
                let hint = Suggestion.hint(for: "--" + name, in: options.map { "--" + $0.long })
                throw UsageError("unknown option '\(original)'\(hint)")
            }
            if option.takesValue {
                try record(option, value: try takeValue(for: option, attached: attached, shown: "--\(name)"), shown: "--\(name)")
            } else {
                if attached != nil { throw UsageError("option '--\(name)' takes no value") }
                try record(option, value: nil, shown: "--\(name)")
            }
        }

        /// `-abc` (three flags), or `-ovalue`, `-o value` for an option that takes a value.
        mutating func short(_ letters: [Character], original: String) throws(UsageError) {
            for (index, letter) in letters.enumerated() {
                guard let option = options.first(where: { $0.short == letter }) else {
                    throw UsageError("unknown option '-\(letter)'" + (letters.count > 1 ? " in '\(original)'" : ""))
                }
                if option.takesValue {
                    let rest = index + 1 < letters.count ? String(letters[(index + 1)...]) : nil
                    try record(option, value: try takeValue(for: option, attached: rest, shown: "-\(letter)"), shown: "-\(letter)")
                    return
                }
                try record(option, value: nil, shown: "-\(letter)")
            }
        }

        mutating func record(_ option: OptionSpec, value: String?, shown: String) throws(UsageError) {
            guard let value else {
                result.flags.insert(option.long)
                return
            }
            if !option.allowedValues.isEmpty, !option.allowedValues.contains(value) {
                throw UsageError("invalid value '\(value)' for '\(shown)'; expected one of: \(option.allowedValues.joined(separator: ", "))\(Suggestion.hint(for: value, in: option.allowedValues))")
            }
            if !option.isRepeatable, result.values[option.long] != nil {
                throw UsageError("option '\(shown)' is given more than once")
            }
            result.values[option.long, default: []].append(value)
        }

        /// The option's value: attached, or the next token if that is a plain value, or a
        /// `-word` that is one of the option's allowed values or none of the command's options
        /// (`--sort -distance`).
        mutating func takeValue(for option: OptionSpec, attached: String?, shown: String) throws(UsageError) -> String {
            if let attached { return attached }
            if case .value(let next)? = tokens.first {
                tokens.removeFirst()
                return next
            }
            if case .short(let letters, let original)? = tokens.first, let first = letters.first,
                option.allowedValues.contains(original) || !options.contains(where: { $0.short == first })
            {
                tokens.removeFirst()
                return original
            }
            throw UsageError("missing value for '\(shown)' (expected <\(option.valueName ?? "VALUE")>)")
        }
    }
}
