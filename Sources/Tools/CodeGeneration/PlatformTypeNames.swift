/// Types of Swift, Foundation, SwiftUI and SwiftData that an app uses by their bare names.
/// A module-level type or typealias of the same name hides them wherever the module is
/// imported: a `Task` model makes `Task { }` fail to compile, a `Color` one SwiftUI's colours.
enum PlatformTypeNames {
    /// The framework whose type a name would hide, or nil.
    static func owner(of name: String) -> String? { owners[name] }

    private static let owners: [String: String] = {
        var owners: [String: String] = [:]
        let frameworks: [(String, [String])] = [
            (
                "Swift",
                [
                    "Task", "Result", "Error", "Never", "Array", "Dictionary", "Set", "String", "Character", "Substring", "Int", "Double", "Float", "Bool",
                    "Optional", "Range", "Sequence", "Collection", "Actor", "Duration", "Clock", "Mirror", "Unicode", "Identifiable", "Codable", "Hashable",
                ]
            ),
            (
                "Foundation",
                [
                    "Date", "Data", "URL", "UUID", "Decimal", "Locale", "Calendar", "TimeZone", "Notification", "NotificationCenter", "Timer", "Operation",
                    "OperationQueue", "Thread", "Process", "Bundle", "Progress", "Measurement", "Unit", "Predicate", "Expression", "SortDescriptor",
                    "AttributedString", "FileManager", "DateInterval", "IndexPath", "IndexSet", "PersonNameComponents", "URLRequest", "URLSession",
                    "Formatter", "Scanner", "Stream", "Host", "Port", "Morphology",
                ]
            ),
            (
                "SwiftUI",
                [
                    "Color", "Image", "Text", "View", "Button", "Label", "Link", "List", "Menu", "Form", "Group", "Section", "Table", "Grid", "Path", "Shape",
                    "Font", "Toggle", "Picker", "Slider", "Stepper", "Gauge", "Alert", "Animation", "Angle", "Binding", "State", "Environment", "App", "Scene",
                    "Window", "WindowGroup", "Tab", "TabView", "Spacer", "Divider", "Canvas", "Layout", "Transaction", "Edge", "Axis", "Material", "Gradient",
                    "Circle", "Rectangle", "Capsule", "Ellipse", "NavigationLink", "ProgressView", "ScrollView", "Settings", "Commands", "Namespace",
                ]
            ),
            (
                "SwiftData",
                [
                    "Schema", "ModelContext", "ModelContainer", "ModelConfiguration", "Query", "Relationship", "Attribute", "Transient", "FetchDescriptor",
                    "PersistentIdentifier", "PersistentModel", "MigrationStage", "VersionedSchema", "SchemaMigrationPlan",
                ]
            ),
        ]
        for (framework, names) in frameworks {
            for name in names where owners[name] == nil { owners[name] = framework }
        }
        return owners
    }()
}

/// The newest version's types under the names the app uses (`generate --target swiftdata`):
/// their own names, a prefix and their names, or none (the app writes `NotesSchemaV2.Note`).
///
///     GenerationPipeline.Configuration(target: .swiftdata, typeAliases: .prefixed("App"))   // typealias AppNote = ...
public enum SwiftDataTypeAliases: Sendable, Hashable {
    /// `typealias Note = NotesSchemaV2.Note`, except for a name that would hide a type of Swift,
    /// Foundation, SwiftUI or SwiftData (`Task`, `Color`): the default.
    case sparingPlatformNames
    /// `typealias Note = NotesSchemaV2.Note` for every type, `Task` and `Color` included.
    case plain
    /// `typealias AppNote = NotesSchemaV2.Note`.
    case prefixed(String)
    /// No typealiases.
    case none

    /// The alias of a type, or nil when none is written.
    func alias(of name: String) -> String? {
        switch self {
        case .sparingPlatformNames: PlatformTypeNames.owner(of: name) == nil ? name : nil
        case .plain: name
        case .prefixed(let prefix): prefix + name
        case .none: nil
        }
    }

    /// For the cache's digest and messages: `plain`, `prefix:App`, `none`.
    public var description: String {
        switch self {
        case .sparingPlatformNames: "sparing"
        case .plain: "plain"
        case .prefixed(let prefix): "prefix:\(prefix)"
        case .none: "none"
        }
    }
}
