/// The `userInfo` keys of a Core Data model that `schemagen export coredata` writes and
/// `schemagen import coredata` reads back: what Core Data cannot say of a schema.
public enum CoreDataUserInfo {
    public static let table = "schemagen.table"
    public static let column = "schemagen.column"
    public static let type = "schemagen.type"
    public static let defaultValue = "schemagen.default"
    public static let encrypt = "schemagen.encrypt"
    public static let precision = "schemagen.precision"
    public static let scale = "schemagen.scale"
    /// `dateOnly: true`: `YES`.
    public static let dateOnly = "schemagen.dateOnly"
    public static let jsonKey = "schemagen.jsonKey"
    public static let doc = "schemagen.doc"
    /// `backfill:` as the schema writes it: a literal, or `{sqlite: EXPR, postgres: EXPR}`.
    public static let backfill = "schemagen.backfill"
    /// `movedFrom:` as written: `Entity.attribute`.
    public static let movedFrom = "schemagen.movedFrom"
    public static let primaryKey = "schemagen.primaryKey"
    /// An entity's members in the schema's order (`name, birthYear, cars`), where Xcode's
    /// sorted order differs.
    public static let order = "schemagen.order"
    /// An attribute's schema name where its Core Data name differs (`coreData: {name: id}`).
    public static let schemaName = "schemagen.name"
    /// Beside a `versionHashModifier` export derived (`VersionHashModifiers`), which an import
    /// does not carry as the model's own.
    public static let derivedHashModifier = "schemagen.derivedHashModifier"
    /// The entities and the value types in the schema's order, where they are not sorted.
    public static let schemaEntities = "schemagen.schema.entities"
    public static let schemaValues = "schemagen.schema.values"
    public static let schemaEnums = "schemagen.schema.enums"
    public static let uniques = "schemagen.uniques"
    public static let indexes = "schemagen.indexes"
    public static let schemaVersion = "schemagen.schema.version"
    public static let schemaDoc = "schemagen.schema.doc"
    public static let schemaDialects = "schemagen.schema.dialects"
    public static let schemaHistory = "schemagen.schema.history"
    public static let schemaOnline = "schemagen.schema.online"
    public static let schemaCloudKit = "schemagen.schema.cloudKit"
    /// `sync:` as the schema writes it, on one line (`SyncDeclaration.yamlText`).
    public static let schemaSync = "schemagen.schema.sync"
    /// `schemagen.enum.Priority`: `{"type": "Int", "cases": [["low", "0"], ...], "doc": ...}`.
    public static let enumPrefix = "schemagen.enum."
    /// `schemagen.valueDoc.Color`: a value type's doc (a composite has no user info).
    public static let valueDocPrefix = "schemagen.valueDoc."
}
