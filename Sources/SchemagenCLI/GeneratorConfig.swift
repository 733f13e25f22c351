import Diagnostics
import Foundation
import YAMLReader

/// Defaults for `schemagen generate` from a YAML file (`.schemagen.yaml` in the working
/// folder, or `--config FILE`); flags override them.
///
/// ```yaml
/// schemas: [Schemas]
/// output: Sources/Models
/// templates: Templates/Custom
/// ```
struct GeneratorConfig: Equatable {
    var schemas: [String]?
    var output: String?
    var templates: String?
    var migrations: String?

    static let defaultFile = ".schemagen.yaml"
    static let keys = ["schemas", "output", "templates", "migrations"]

    /// Reads a config file; problems come back as diagnostics with their line and column.
    static func load(path: String) -> (GeneratorConfig?, [Diagnostic], SourceFile?) {
        guard let data = FileManager.default.contents(atPath: path) else {
            return (nil, [Diagnostic(.error, code: "file-unreadable", message: "cannot read config file '\(path)'", at: nil)], nil)
        }
        let source = SourceFile(path: path, bytes: [UInt8](data))
        var bag = DiagnosticBag()
        guard case .document(let root) = YAMLLoader.load(source, diagnostics: &bag) else {
            return (bag.hasErrors ? nil : GeneratorConfig(), bag.diagnostics, source)
        }
        func location(_ node: YAMLNode) -> SourceLocation {
            SourceLocation(file: path, line: node.start.line, column: node.start.column, length: node.length)
        }
        guard let pairs = root.pairs else {
            bag.error("wrong-kind", "the config file must be a mapping of \(keys.joined(separator: ", "))", at: location(root))
            return (nil, bag.diagnostics, source)
        }
        var config = GeneratorConfig()
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            switch key {
            case "schemas":
                if let single = pair.value.stringValue {
                    config.schemas = [single]
                } else if let items = pair.value.items, items.allSatisfy({ $0.stringValue != nil }) {
                    config.schemas = items.compactMap(\.stringValue)
                } else {
                    bag.error("wrong-kind", "'schemas' expects a path or a list of paths", at: location(pair.value))
                }
            case "output", "templates", "migrations":
                guard let value = pair.value.stringValue else {
                    bag.error("wrong-kind", "'\(key)' expects a path", at: location(pair.value))
                    continue
                }
                switch key {
                case "output": config.output = value
                case "templates": config.templates = value
                default: config.migrations = value
                }
            default:
                bag.error("unknown-key", "unknown key '\(key)' in the config file\(Suggestion.hint(for: key, in: keys))", at: location(pair.key))
            }
        }
        return (bag.hasErrors ? nil : config, bag.diagnostics, source)
    }
}
