// A SwiftData shim for type-checking generated code on Linux, where SwiftData does not exist.
// It declares the API surface generated code uses, with the signatures Apple documents
// (developer.apple.com/documentation/swiftdata): the protocols, `Schema` and its nested types,
// the migration types, and the macros, whose expansion (Macros.swift) only adds the
// `PersistentModel` conformance. It checks names, types and arguments, not run-time behaviour.
import Foundation

// MARK: - Models

/// documentation/swiftdata/persistentmodel
public protocol PersistentModel: AnyObject, Hashable, Identifiable {
    /// The model's identity in its store, kept across a migration of the same entity.
    var persistentModelID: PersistentIdentifier { get }
}

/// A model's identity in its store.
public struct PersistentIdentifier: Hashable, Sendable, Codable {}

extension PersistentModel {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var id: ObjectIdentifier { ObjectIdentifier(self) }
    public var persistentModelID: PersistentIdentifier { PersistentIdentifier() }
}

/// documentation/swiftdata/model()
@attached(extension, conformances: PersistentModel)
public macro Model() = #externalMacro(module: "ShimMacros", type: "ModelMacro")

/// documentation/swiftdata/attribute(_:originalname:hashmodifier:)
@attached(peer)
public macro Attribute(_ options: Schema.Attribute.Option..., originalName: String? = nil, hashModifier: String? = nil) =
    #externalMacro(module: "ShimMacros", type: "NoPeer")

/// documentation/swiftdata/relationship(_:deleterule:minimummodelcount:maximummodelcount:originalname:inverse:hashmodifier:)
@attached(peer)
public macro Relationship(
    _ options: Schema.Relationship.Option..., deleteRule: Schema.Relationship.DeleteRule = .nullify, minimumModelCount: Int? = 0,
    maximumModelCount: Int? = 0, originalName: String? = nil, inverse: AnyKeyPath? = nil, hashModifier: String? = nil
) = #externalMacro(module: "ShimMacros", type: "NoPeer")

/// documentation/swiftdata/transient()
@attached(peer)
public macro Transient() = #externalMacro(module: "ShimMacros", type: "NoPeer")

// `#Unique` and `#Index` are iOS 18, macOS 15 API. Linux enforces no Apple availability, so the
// shim built for an older deployment target (`-D SWIFTDATA_BEFORE_IOS18`) makes them
// unavailable: iOS 17 code that uses them fails the check, as Xcode would fail it.
#if SWIFTDATA_BEFORE_IOS18
/// documentation/swiftdata/unique(_:) (iOS 18)
@available(*, unavailable, message: "#Unique is iOS 18 and macOS 15 API")
@freestanding(declaration)
public macro Unique<T>(_ constraints: [PartialKeyPath<T>]...) = #externalMacro(module: "ShimMacros", type: "NoDeclaration") where T: PersistentModel

/// documentation/swiftdata/index(_:) (iOS 18)
@available(*, unavailable, message: "#Index is iOS 18 and macOS 15 API")
@freestanding(declaration)
public macro Index<T>(_ indices: [PartialKeyPath<T>]...) = #externalMacro(module: "ShimMacros", type: "NoDeclaration") where T: PersistentModel
#else
/// documentation/swiftdata/unique(_:) (iOS 18)
@available(iOS 18, macOS 15, *)
@freestanding(declaration)
public macro Unique<T>(_ constraints: [PartialKeyPath<T>]...) = #externalMacro(module: "ShimMacros", type: "NoDeclaration") where T: PersistentModel

/// documentation/swiftdata/index(_:) (iOS 18)
@available(iOS 18, macOS 15, *)
@freestanding(declaration)
public macro Index<T>(_ indices: [PartialKeyPath<T>]...) = #externalMacro(module: "ShimMacros", type: "NoDeclaration") where T: PersistentModel
#endif

// MARK: - Schema

/// documentation/swiftdata/schema
public final class Schema {
    public init(_ types: [any PersistentModel.Type], version: Schema.Version = Version(1, 0, 0)) {}
    public convenience init(versionedSchema: any VersionedSchema.Type) { self.init(versionedSchema.models, version: versionedSchema.versionIdentifier) }

    /// documentation/swiftdata/schema/version
    public struct Version: Hashable, Sendable, CustomStringConvertible {
        public let major: Int
        public let minor: Int
        public let patch: Int
        public init(_ major: Int, _ minor: Int, _ patch: Int) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }
        public var description: String { "\(major).\(minor).\(patch)" }
    }

    /// documentation/swiftdata/schema/attribute
    public final class Attribute {
        /// documentation/swiftdata/schema/attribute/option
        public struct Option: Hashable, Sendable {
            let name: String
            public static var unique: Option { Option(name: "unique") }
            public static var externalStorage: Option { Option(name: "externalStorage") }
            public static var allowsCloudEncryption: Option { Option(name: "allowsCloudEncryption") }
            public static var preserveValueOnDeletion: Option { Option(name: "preserveValueOnDeletion") }
            public static var spotlight: Option { Option(name: "spotlight") }
            public static var ephemeral: Option { Option(name: "ephemeral") }
            public static func transformable(by transformerName: String) -> Option { Option(name: "transformable") }
        }
    }

    /// documentation/swiftdata/schema/relationship
    public final class Relationship {
        /// documentation/swiftdata/schema/relationship/option
        public struct Option: Hashable, Sendable {
            let name: String
            public static var unique: Option { Option(name: "unique") }
        }

        /// documentation/swiftdata/schema/relationship/deleterule-swift.enum
        public enum DeleteRule: String, Hashable, Sendable, Codable {
            case nullify, cascade, deny, noAction
        }
    }
}

// MARK: - Versions and migrations

/// documentation/swiftdata/versionedschema
public protocol VersionedSchema {
    static var versionIdentifier: Schema.Version { get }
    static var models: [any PersistentModel.Type] { get }
}

/// documentation/swiftdata/schemamigrationplan
public protocol SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { get }
    static var stages: [MigrationStage] { get }
}

/// documentation/swiftdata/migrationstage. Declared without `Sendable`, as the iOS 17 and 18
/// SDKs declare it: a stored `static let stages` is then refused in Swift 6 mode, so generated
/// plans must use computed properties, which build with every SDK.
public enum MigrationStage {
    case lightweight(fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type)
    case custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type, willMigrate: (@Sendable (ModelContext) throws -> Void)?,
        didMigrate: (@Sendable (ModelContext) throws -> Void)?)
}

// MARK: - Containers, contexts and fetching

public struct ModelConfiguration {
    public init(isStoredInMemoryOnly: Bool = false) {}
}

public final class ModelContainer {
    public init(for givenSchema: Schema, migrationPlan: (any SchemaMigrationPlan.Type)? = nil, configurations: ModelConfiguration...) throws {}
}

/// documentation/swiftdata/modelcontext
public final class ModelContext {
    public func insert<T: PersistentModel>(_ model: T) {}
    public func delete<T: PersistentModel>(_ model: T) {}
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> [T] { [] }
    /// documentation/swiftdata/modelcontext/fetch(_:batchsize:)
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>, batchSize: Int) throws -> FetchResultsCollection<T> { FetchResultsCollection() }
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws -> Int { 0 }
    public func save() throws {}
}

/// documentation/swiftdata/fetchresultscollection: a random-access collection whose
/// models are fetched a batch at a time as they are reached.
public struct FetchResultsCollection<Element: PersistentModel>: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { 0 }
    public subscript(position: Int) -> Element { fatalError("the shim holds no models") }
}

/// documentation/swiftdata/fetchdescriptor
public struct FetchDescriptor<T: PersistentModel> {
    public var predicate: Predicate<T>?
    public var sortBy: [SortDescriptor<T>]
    public var fetchLimit: Int?
    public var fetchOffset: Int?
    public var includePendingChanges: Bool = true
    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}
