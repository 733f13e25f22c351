import Diagnostics

/// Every diagnostic code the schema loader reports, with what it means; `docs/schema-language.md`
/// lists the same table for users.
public enum SchemaDiagnosticCode: String, DiagnosticCode {
    // Files
    case fileUnreadable = "file-unreadable"
    case fileTooLarge = "file-too-large"
    case emptySchema = "empty-schema"
    // Structure
    case wrongKind = "wrong-kind"
    case missingKey = "missing-key"
    case unknownKey = "unknown-key"
    case invalidIdentifier = "invalid-identifier"
    case invalidVersion = "invalid-version"
    case invalidType = "invalid-type"
    case invalidValue = "invalid-value"
    // Names
    case nameCollision = "name-collision"
    case namingConvention = "naming-convention"
    case longIdentifier = "long-identifier"
    // References
    case unknownType = "unknown-type"
    case unknownEntity = "unknown-entity"
    case unknownMember = "unknown-member"
    case entityAsAttribute = "entity-as-attribute"
    case inverseMismatch = "inverse-mismatch"
    case missingInverse = "missing-inverse"
    // Values and options
    case invalidDefault = "invalid-default"
    case conflictingOptions = "conflicting-options"
    case primaryKey = "primary-key"
    case deleteRule = "delete-rule"
    case redundant = "redundant"
    case unused = "unused"
    case emptyEntity = "empty-entity"
    // Platforms
    case cloudKit = "cloudkit"
    /// A schema's `sync:` breaks a rule that sync between devices and a server needs.
    case sync = "sync"

}
