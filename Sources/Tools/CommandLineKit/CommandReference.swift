/// The Markdown reference of a tool's commands, made from the same declarations as their help,
/// so docs/commands.md cannot drift from what the tools accept (`<tool> help --markdown`).
public enum CommandReference {
    /// The comment lines that open and close a generated block in a document.
    ///
    ///     let start = document.range(of: CommandReference.opening("migrate up"))
    public static func opening(_ command: String) -> String { "<!-- generated from `\(command) --help`: do not edit -->" }
    public static let closing = "<!-- end of generated text -->"

    /// One command's block: a heading, its usage, what it does, its arguments and options.
    ///
    ///     let markdown = CommandReference.block(UpCommand.spec, toolName: "migrate")
    public static func block(_ spec: CommandSpec, toolName: String) -> String {
        var lines = [opening("\(toolName) \(spec.name)"), "", "### `\(toolName) \(spec.name)`", ""]
        lines += wrapped(escaped(spec.abstract))
        lines += ["", "```", spec.usage(toolName: toolName), "```", ""]
        // What it does, as a manual page says it before the options.
        if let discussion = spec.discussion {
            // Paragraphs are split by a blank line; a single line break is a space.
            for paragraph in discussion.split(separator: "\n\n") {
                lines += wrapped(escaped(String(paragraph).replacing("\n", with: " ")))
                lines.append("")
            }
            if discussion.contains("Exit status") {
                lines += ["What to do when it fails: [troubleshooting](troubleshooting.md).", ""]
            }
        }
        if !spec.arguments.isEmpty {
            lines.append("Arguments:")
            lines.append("")
            for argument in spec.arguments {
                lines += wrapped("`\(argument.name)\(argument.isVariadic ? " ..." : "")`: \(escaped(argument.help))", bullet: true)
            }
            lines.append("")
        }
        // A heading of their own: an options list can run for dozens of lines.
        lines.append("#### Options of `\(toolName) \(spec.name)`")
        lines.append("")
        for option in spec.allOptions {
            var names = option.short.map { "`-\($0)`, " } ?? ""
            names += "`--\(option.long)\(option.valueName.map { " <\($0)>" } ?? "")`"
            var help = escaped(option.help)
            if !option.allowedValues.isEmpty { help += " One of: \(option.allowedValues.map { "`\($0)`" }.joined(separator: ", "))." }
            if let value = option.defaultValue { help += " Default: `\(value)`." }
            if option.isRepeatable { help += " May be repeated." }
            lines += wrapped("\(names): \(help)", bullet: true)
        }
        lines += ["", closing]
        return lines.joined(separator: "\n")
    }

    /// Every command's block, in the tool's order, separated by blank lines: what
    /// `<tool> help --markdown` prints.
    ///
    ///     print(CommandReference.document(MigrateTool.tool))
    public static func document(_ tool: CommandLineTool) -> String {
        tool.commands.map { block($0.spec, toolName: tool.name) }.joined(separator: "\n\n") + "\n"
    }

    /// Help text as Markdown shows it literally: `*` would start emphasis, `<` a tag.
    static func escaped(_ text: String) -> String {
        text.replacing("*", with: "\\*").replacing("<", with: "&lt;")
    }

    /// Text wrapped at 100 characters (a word longer than that stays whole); a bullet's later
    /// lines are indented to stay in the item.
    static func wrapped(_ text: String, bullet: Bool = false) -> [String] {
        let first = bullet ? "- " : "", rest = bullet ? "  " : ""
        var lines: [String] = []
        var line = first
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let start = lines.isEmpty ? first : rest
            if line.count > start.count, line.count + 1 + word.count > 100 {
                lines.append(line)
                line = rest
            }
            line += (line.count > (lines.isEmpty ? first : rest).count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}
