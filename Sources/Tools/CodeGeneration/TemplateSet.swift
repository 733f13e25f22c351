import Foundation
import Mustache

/// The templates a generation run uses: the defaults compiled into the tool, with those of a
/// user folder replacing defaults of the same name and adding new ones.
public struct TemplateSet: Sendable {
    /// What the built-in templates produce: the store's model structs, or SwiftData models
    /// with their version history (`Templates/swiftdata/`).
    public enum Target: String, Sendable, CaseIterable {
        case store
        case swiftdata

        /// The folder under `Templates/` holding the target's defaults (nil: `Templates/` itself).
        var folder: String? { self == .store ? nil : rawValue }
    }

    /// What a template is rendered for, taken from the start of its name.
    public enum Scope: String, Sendable, CaseIterable {
        /// Once per schema: `schema+Metadata.swift` -> `Flights+Metadata.swift`.
        case schema
        /// Once per entity: `entity.swift` -> `Airport.swift`, `entity+Extras.swift` -> `Airport+Extras.swift`.
        case entity
        /// Once per enum.
        case `enum`
        /// Once per value type.
        case value
        /// Once per schema version (SwiftData): `version.swift` -> `FlightsSchemaV5.swift`.
        case version
    }

    /// A template that produces files.
    public struct Output: Sendable, Hashable {
        /// The template's name: its file name without `.mustache`.
        public var name: String
        public var scope: Scope
        /// What follows the scope in the name, appended to the element's name: `+Extras.swift`.
        public var fileSuffix: String
    }

    /// Every template by name, for rendering and as partials and parents. The defaults are also
    /// reachable as `default/<name>`, so a replacement can extend the default it replaces.
    public private(set) var templates: [String: Template]
    public private(set) var outputs: [Output]

    /// The defaults alone.
    public static func defaults(for target: Target = .store) throws(MustacheError) -> TemplateSet {
        try TemplateSet(sources: defaultSources(target), overrides: [])
    }

    /// The target's built-in templates: (name, text, path for error messages).
    static func defaultSources(_ target: Target) -> [(String, String, String)] {
        EmbeddedTemplates.sources.compactMap { key, text in
            let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
            let (folder, name) = parts.count == 2 ? (parts[0], parts[1]) : (nil, key)
            guard folder == target.folder else { return nil }
            return (name, text, "Templates/\(key).mustache")
        }
    }

    /// The defaults with a user folder's `*.mustache` files laid over them.
    public static func loading(userFolder: String?, target: Target = .store) throws -> TemplateSet {
        var overrides: [(String, String, String)] = []
        if let userFolder {
            let url = URL(fileURLWithPath: userFolder)
            let names = try FileManager.default.contentsOfDirectory(atPath: userFolder).filter { $0.hasSuffix(".mustache") }.sorted()
            for file in names {
                let path = url.appendingPathComponent(file).path
                let text = try String(contentsOfFile: path, encoding: .utf8)
                overrides.append((String(file.dropLast(".mustache".count)), text, path))
            }
        }
        return try TemplateSet(sources: defaultSources(target), overrides: overrides)
    }

    /// Parses every template once. Each source is (name, text, path for error messages).
    init(sources defaults: [(String, String, String)], overrides: [(String, String, String)]) throws(MustacheError) {
        var templates: [String: Template] = [:]
        for (name, text, path) in defaults {
            let template = try Template(name: path, source: text)
            templates[name] = template
            templates["default/" + name] = template
        }
        for (name, text, path) in overrides {
            templates[name] = try Template(name: path, source: text)
        }
        self.templates = templates
        self.outputs = templates.keys.compactMap(Self.output(named:)).sorted { $0.name < $1.name }
    }

    /// `entity+Extras.swift` is an output of scope entity with suffix `+Extras.swift`; names that
    /// start with no scope (or with `default/`) are partials only.
    static func output(named name: String) -> Output? {
        guard !name.hasPrefix("default/") else { return nil }
        for scope in Scope.allCases where name.hasPrefix(scope.rawValue) {
            let suffix = String(name.dropFirst(scope.rawValue.count))
            if suffix.hasPrefix(".") || suffix.hasPrefix("+") { return Output(name: name, scope: scope, fileSuffix: suffix) }
        }
        return nil
    }
}
