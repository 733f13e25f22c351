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
    /// What `generate` writes when `--target` is not given: `store` (the default) or `swiftdata`.
    public var target: String?
    /// The oldest OS `generate --target swiftdata` writes for: ios17 (the default), ios18,
    /// macos14 or macos15.
    public var deploymentTarget: String?
    /// Whether the SwiftData output names the newest version's types by typealiases (true by
    /// default), and what starts each alias (`typealiasPrefix: App` -> `AppTask`).
    public var typealiases: Bool?
    /// SwiftData stages that cannot do their work alone are warnings (the default since they
    /// check at run time and write no data that is not there); kept for earlier configs.
    public var allowIncompleteStages: Bool?
    /// SwiftData stages that cannot do their work alone are errors (`strictStages: true`).
    public var strictStages: Bool?
    public var typealiasPrefix: String?
    /// `migrate`'s defaults on a cluster: the replica lag a backfill waits out (milliseconds,
    /// 0 off), how long it waits (seconds), the WAL budget (MB/s) and how long a run waits for
    /// a new primary (seconds). Flags override them.
    public var maxReplicaLag: Double?
    public var replicaLagTimeout: Double?
    public var maxWalRate: Double?
    public var failoverTimeout: Double?

    public init() {}

    public static let defaultFile = ".schemagen.yaml"

    /// Diagnostic codes about config files (the schema language's codes, where they mean the same).
    public enum Code: String, DiagnosticCode {
        case fileUnreadable = "file-unreadable"
        case wrongKind = "wrong-kind"
        case unknownKey = "unknown-key"
    }
    static let keys = [
        "schemas", "output", "templates", "migrations", "database", "dialects", "cache", "online", "grants", "target", "deploymentTarget", "typealiases", "typealiasPrefix", "allowIncompleteStages",
        "strictStages",
        "maxReplicaLag", "replicaLagTimeout", "maxWalRate", "failoverTimeout",
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
        let location = { (node: YAMLNode) in SourceLocation(file: path, line: node.start.line, column: node.start.column, length: node.length) }
        guard let pairs = root.pairs else {
            bag.error(Code.wrongKind, "the config file must be a mapping of \(keys.joined(separator: ", "))", at: location(root))
            return (nil, bag.diagnostics, source)
        }
        var config = ProjectConfig()
        for pair in pairs {
            let key = pair.key.scalarText ?? ""
            let problem: String?
            switch key {
            case "schemas", "dialects", "grants": problem = config.readList(key, pair.value)
            case "typealiasPrefix", "deploymentTarget", "target": problem = config.readSwiftDataSetting(key, pair.value)
            case "online", "allowIncompleteStages", "strictStages", "typealiases": problem = config.readSwitch(key, pair.value)
            case "output", "templates", "migrations", "database", "cache": problem = config.readPath(key, pair.value)
            case "maxReplicaLag", "replicaLagTimeout", "maxWalRate", "failoverTimeout": problem = config.readNumber(key, pair.value)
            default:
                bag.error(Code.unknownKey, "unknown key '\(key)' in the config file\(Suggestion.hint(for: key, in: keys))", at: location(pair.key))
                continue
            }
            if let problem { bag.error(Code.wrongKind, problem, at: location(pair.value)) }
        }
        return (bag.hasErrors ? nil : config, bag.diagnostics, source)
    }

    /// `schemas`, `dialects` or `grants`; what is wrong with the value, if anything.
    private mutating func readList(_ key: String, _ value: YAMLNode) -> String? {
        switch key {
        case "schemas":
            if let single = value.stringValue {
                schemas = [single]
            } else if let items = value.items, items.allSatisfy({ $0.stringValue != nil }) {
                schemas = items.compactMap(\.stringValue)
            } else {
                return "'schemas' expects a path or a list of paths"
            }
        case "dialects":
            let items = value.items ?? (value.stringValue != nil ? [value] : [])
            let names = items.compactMap(\.stringValue)
            guard !names.isEmpty, names.count == items.count, names.allSatisfy({ SQLDialectName(rawValue: $0) != nil }) else {
                return "'dialects' expects a list of dialects (\(SQLDialectName.list))"
            }
            dialects = names
        default:
            let entries = (value.pairs ?? []).map { ($0.key.scalarText ?? "", $0.value.stringValue ?? "") }
            guard value.pairs != nil, entries.allSatisfy({ !$0.0.isEmpty && ["read", "write"].contains($0.1) }) else {
                return "'grants' expects roles and what each may do (read or write), such as {app: write, reporting: read}"
            }
            grants = Dictionary(entries, uniquingKeysWith: { _, last in last })
        }
        return nil
    }

    /// `typealiasPrefix`, `deploymentTarget` or `target`, which choose and shape the SwiftData target.
    private mutating func readSwiftDataSetting(_ key: String, _ value: YAMLNode) -> String? {
        if key == "target" {
            guard let text = value.stringValue, ["store", "swiftdata"].contains(text) else {
                return "'target' expects store or swiftdata: what generate writes when --target is not given"
            }
            target = text
            return nil
        }
        if key == "typealiasPrefix" {
            guard let text = value.stringValue, text.isEmpty || text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), !(text.first?.isNumber ?? false) else {
                return "'typealiasPrefix' expects the start of a Swift name, such as App"
            }
            typealiasPrefix = text
            return nil
        }
        let allowed = ["ios17", "ios18", "macos14", "macos15"]
        guard let text = value.stringValue, allowed.contains(text) else {
            return "'deploymentTarget' expects one of \(allowed.joined(separator: ", ")): the oldest OS the SwiftData models run on"
        }
        deploymentTarget = text
        return nil
    }

    /// A true-or-false setting.
    private mutating func readSwitch(_ key: String, _ value: YAMLNode) -> String? {
        guard let flag = value.boolValue else { return "'\(key)' expects true or false" }
        switch key {
        case "online": online = flag
        case "allowIncompleteStages": allowIncompleteStages = flag
        case "strictStages": strictStages = flag
        default: typealiases = flag
        }
        return nil
    }

    /// A number setting, zero or more.
    private mutating func readNumber(_ key: String, _ value: YAMLNode) -> String? {
        guard let text = value.stringValue, let number = Double(text), number.isFinite, number >= 0 else {
            return "'\(key)' expects a number, zero or more"
        }
        switch key {
        case "maxReplicaLag": maxReplicaLag = number
        case "replicaLagTimeout": replicaLagTimeout = number
        case "maxWalRate": maxWalRate = number
        default: failoverTimeout = number
        }
        return nil
    }

    /// A path setting.
    private mutating func readPath(_ key: String, _ value: YAMLNode) -> String? {
        guard let path = value.stringValue else { return "'\(key)' expects a path" }
        switch key {
        case "output": output = path
        case "templates": templates = path
        case "migrations": migrations = path
        case "cache": cache = path
        default: database = path
        }
        return nil
    }
}
