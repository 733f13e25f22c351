import Foundation

/// Writes a Swift file holding the default templates as string literals, so the `schemagen`
/// binary carries them and needs no resource files beside it. After changing `Templates/`:
///
///     swift run embed-templates Sources/Tools/CodeGeneration/EmbeddedTemplates.swift Templates/*.mustache Templates/*/*.mustache
@main
struct EmbedTemplates {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let output = arguments.first else {
            FileHandle.standardError.write(Data("usage: embed-templates OUTPUT.swift TEMPLATE.mustache...\n".utf8))
            exit(2)
        }
        var entries: [(name: String, text: String)] = []
        for path in arguments.dropFirst().sorted() {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                FileHandle.standardError.write(Data("embed-templates: cannot read \(path)\n".utf8))
                exit(1)
            }
            // A template in a target's folder (`Templates/swiftdata/`) is named with it.
            let url = URL(fileURLWithPath: path)
            let folder = url.deletingLastPathComponent().lastPathComponent
            let name = String(url.lastPathComponent.dropLast(".mustache".count))
            entries.append((folder == "Templates" ? name : folder + "/" + name, text))
        }
        var swift = "// Generated from Templates/ by embed-templates. Do not edit: after changing a template run\n"
        swift += "// swift run embed-templates Sources/Tools/CodeGeneration/EmbeddedTemplates.swift Templates/*.mustache Templates/*/*.mustache\n\n"
        swift += "enum EmbeddedTemplates {\n    /// Default templates by name (file name without `.mustache`, after its target folder).\n"
        swift += "    static let sources: [String: String] = [\n"
        // Each template on a line of its own below its name, as swift-format writes a value
        // too long for the key's line; a comma after every entry but an only one.
        for entry in entries {
            swift += "        \(literal(entry.name)):\n            \(literal(entry.text))\(entries.count > 1 ? "," : "")\n"
        }
        swift += "    ]\n}\n"
        do {
            try swift.write(toFile: output, atomically: true, encoding: .utf8)
        } catch {
            FileHandle.standardError.write(Data("embed-templates: cannot write \(output): \(error)\n".utf8))
            exit(1)
        }
    }

    /// A Swift string literal of any text: the standard library's debug description.
    static func literal(_ text: String) -> String { text.debugDescription }
}
