import Diagnostics
import Foundation
import SQLDialects
import YAMLReader

/// Defaults for `schemagen` and `migrate` from a YAML file (`.schemagen.yaml` in the working
/// folder, or `--config FILE`); flags and the environment override them.
///
/// ```yaml
/// schemas: [Schemas]
/// output: Sources/Models
/// templates: Templates/Custom
/// migrations: Migrations
/// dialects: [sqlite, postgres]
/// online: true
/// database: data/app.sqlite
/// cache: .build/schemagen
/// ```
public struct ProjectConfig: Equatable, Sendable {
    public var schemas: [String]?
    public var output: String?
    public var templates: String?
    public var migrations: String?
    public var database: String?
    /// Where `schemagen generate` keeps the record that skips unchanged runs.
    public var cache: String?
    /// The SQL dialects migrations are planned for, for schemas that do not say (`sqlite`, `postgres`).
    public var dialects: [String]?
    /// Plan PostgreSQL migrations online (expand and contract) for schemas that do not say.
    public var online: Bool?
    /// Roles and their access (`read` or `write`) to every table, for schemas that do not say
    /// (`grants: {app: write}`): `role -> access`.
    public var grants: [String: String]?
    /// The oldest OS `generate --target swiftdata` writes for: ios17 (the default), ios18,
    /// macos14 or macos15.
    public var deploymentTarget: String?
    /// Whether the SwiftData output names the newest version's types by typealiases (true by
    /// default), and what starts each alias (`typealiasPrefix: App` -> `AppTask`).
    public var typealiases: Bool?
    /// SwiftData stages that cannot do their work alone are warnings, not errors.
    public var allowIncompleteStages: Bool?
    public var typealiasPrefix: String?

    public init() {}

    public static let defaultFile = ".schemagen.yaml"

    /// Diagnostic codes about config files (the schema language's codes, where they mean the same).
    public enum Code: String, DiagnosticCode {
        case fileUnreadable = "file-unreadable"
        case wrongKind = "wrong-kind"
        case unknownKey = "unknown-key"
    }
    static let keys = [
        "schemas", "output", "templates", "migrations", "database", "dialects", "cache", "online", "grants", "deploymentTarget", "typealiases", "typealiasPrefix", "allowIncompleteStages",
    ]

    /// Reads a config file; problems come back as diagnostics with their line and column.
    public static func load(path: String) -> (ProjectConfig?, [Diagnostic], SourceFile?) {
        guard let data = FileManager.default.contents(atPath: path) else {
            return (nil, [Diagnostic(.error, code: Code.fileUnreadable, message: "cannot read config file '\(path)'", at: nil)], nil)
        }
        let source = SourceFile(path: path, bytes: [UInt8](data))
        var bag = DiagnosticBag()
        guard case .document(let root) = YAMLLoader.load(source, diagnostics: &bag) else {
            return (bag.hasErrors ? nil : ProjectConfig(), bag.diagnostics, source)
        }
        func location(_ node: YAMLNode) -> SourceLocation {
            SourceLocation(file: path, line: node.start.line, column: node.start.column, length: node.length)
        }
        guard let pairs = root.pairs else {
            bag.error(Code.wrongKind, "the config file must be a mapping of \(keys.joined(separator: ", "))", at: location(root))
            return (nil, bag.diagnostics, source)
        }
        var config = ProjectConfig()
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            switch key {
            case "schemas":
                if let single = pair.value.stringValue {
                    config.schemas = [single]
                } else if let items = pair.value.items, items.allSatisfy({ $0.stringValue != nil }) {
                    config.schemas = items.compactMap(\.stringValue)
                } else {
                    bag.error(Code.wrongKind, "'schemas' expects a path or a list of paths", at: location(pair.value))
                }
            case "dialects":
                let items = pair.value.items ?? (pair.value.stringValue != nil ? [pair.value] : [])
                let names = items.compactMap(\.stringValue)
                guard !names.isEmpty, names.count == items.count, names.allSatisfy({ SQLDialectName(rawValue: $0) != nil }) else {
                    bag.error(Code.wrongKind, "'dialects' expects a list of dialects (\(SQLDialectName.list))", at: location(pair.value))
                    continue
                }
                config.dialects = names
            case "grants":
                let entries = (pair.value.pairs ?? []).map { ($0.key.scalarText ?? "", $0.value.stringValue ?? "") }
                guard pair.value.pairs != nil, entries.allSatisfy({ !$0.0.isEmpty && ["read", "write"].contains($0.1) }) else {
                    bag.error(Code.wrongKind, "'grants' expects roles and what each may do (read or write), such as {app: write, reporting: read}", at: location(pair.value))
                    continue
                }
                config.grants = Dictionary(entries, uniquingKeysWith: { _, last in last })
            case "typealiasPrefix":
                guard let value = pair.value.stringValue, value.isEmpty || value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !(value.first?.isNumber ?? false) else {
                    bag.error(Code.wrongKind, "'typealiasPrefix' expects the start of a Swift name, such as App", at: location(pair.value))
                    continue
                }
                config.typealiasPrefix = value
            case "deploymentTarget":
                let allowed = ["ios17", "ios18", "macos14", "macos15"]
                guard let value = pair.value.stringValue, allowed.contains(value) else {
                    bag.error(Code.wrongKind, "'deploymentTarget' expects one of \(allowed.joined(separator: ", ")): the oldest OS the SwiftData models run on", at: location(pair.value))
                    continue
                }
                config.deploymentTarget = value
            case "online", "allowIncompleteStages", "typealiases":
                guard let value = pair.value.boolValue else {
                    bag.error(Code.wrongKind, "'\(key)' expects true or false", at: location(pair.value))
                    continue
                }
                switch key {
                case "online": config.online = value
                case "allowIncompleteStages": config.allowIncompleteStages = value
                default: config.typealiases = value
                }
            case "output", "templates", "migrations", "database", "cache":
                guard let value = pair.value.stringValue else {
                    bag.error(Code.wrongKind, "'\(key)' expects a path", at: location(pair.value))
                    continue
                }
                switch key {
                case "output": config.output = value
                case "templates": config.templates = value
                case "migrations": config.migrations = value
                case "cache": config.cache = value
                default: config.database = value
                }
            default:
                bag.error(Code.unknownKey, "unknown key '\(key)' in the config file\(Suggestion.hint(for: key, in: keys))", at: location(pair.key))
            }
        }
        return (bag.hasErrors ? nil : config, bag.diagnostics, source)
    }
}
