/// A declared option: a flag (`--verbose`) or an option that takes a value (`--format json`).
public struct OptionSpec: Sendable, Equatable {
    /// The long name without dashes, e.g. `format`.
    public let long: String
    public let short: Character?
    /// The value's placeholder in help (`FORMAT`); nil for a flag.
    public let valueName: String?
    public let help: String
    /// When not empty, the only values accepted.
    public let allowedValues: [String]
    /// Whether the option may be given more than once, collecting every value.
    public let isRepeatable: Bool
    /// Shown in help as "(default: …)".
    public let defaultValue: String?

    public var takesValue: Bool { valueName != nil }

    public static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: nil, help: help, allowedValues: [], isRepeatable: false, defaultValue: nil)
    }

    public static func value(
        _ long: String, short: Character? = nil, valueName: String, help: String,
        allowed: [String] = [], defaultValue: String? = nil, repeatable: Bool = false
    ) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: valueName, help: help, allowedValues: allowed, isRepeatable: repeatable, defaultValue: defaultValue)
    }

    /// `-f, --format <FORMAT>`
    var signature: String {
        var text = short.map { "-\($0), " } ?? "    "
        text += "--\(long)"
        if let valueName { text += " <\(valueName)>" }
        return text
    }
}

/// A declared positional argument.
public struct ArgumentSpec: Sendable, Equatable {
    public let name: String
    public let help: String
    /// Takes every remaining positional value.
    public let isVariadic: Bool
    public let isRequired: Bool

    public init(_ name: String, help: String, isVariadic: Bool = false, isRequired: Bool = false) {
        self.name = name
        self.help = help
        self.isVariadic = isVariadic
        self.isRequired = isRequired
    }
}

/// What a command accepts, declared once; parsing and help both come from it.
public struct CommandSpec: Sendable {
    public let name: String
    /// One line, shown in the parent's command list and atop the help.
    public let abstract: String
    /// Longer help, shown after the options.
    public let discussion: String?
    public let options: [OptionSpec]
    public let arguments: [ArgumentSpec]

    public init(name: String, abstract: String, discussion: String? = nil, options: [OptionSpec] = [], arguments: [ArgumentSpec] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
    }

    static let helpOption = OptionSpec.flag("help", short: "h", help: "Show help for this command.")

    /// Declared options plus `--help`, which every command has.
    var allOptions: [OptionSpec] { options + [Self.helpOption] }

    /// `schemagen validate [options] [PATH ...]`
    func usage(toolName: String) -> String {
        var parts = [toolName, name]
        if !options.isEmpty { parts.append("[options]") }
        for argument in arguments {
            var text = argument.name + (argument.isVariadic ? " ..." : "")
            if !argument.isRequired { text = "[\(text)]" }
            parts.append(text)
        }
        return parts.joined(separator: " ")
    }

    func help(toolName: String) -> String {
        var out = "OVERVIEW: \(abstract)\n\nUSAGE: \(usage(toolName: toolName))\n"
        if !arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            out += HelpFormatter.table(arguments.map { ($0.name + ($0.isVariadic ? " ..." : ""), $0.help) })
        }
        out += "\nOPTIONS:\n"
        out += HelpFormatter.table(
            allOptions.map { option in
                var help = option.help
                if !option.allowedValues.isEmpty { help += " One of: \(option.allowedValues.joined(separator: ", "))." }
                if let value = option.defaultValue { help += " (default: \(value))" }
                if option.isRepeatable { help += " May be repeated." }
                return (option.signature, help)
            })
        if let discussion { out += "\n\(discussion)\n" }
        return out
    }
}

enum HelpFormatter {
    /// Two columns: names padded to a common width, help beside them.
    static func table(_ rows: [(String, String)]) -> String {
        let width = min(32, (rows.map(\.0.count).max() ?? 0) + 2)
        return rows.map { name, help in
            let padded = "  " + name
            if padded.count + 1 > width + 2 {
                return padded + "\n" + String(repeating: " ", count: width + 2) + help + "\n"
            }
            return padded + String(repeating: " ", count: width + 2 - padded.count) + help + "\n"
        }.joined()
    }
}
