import MigrationFiles
import SQLDialects

/// Each dialect of the registry (`SQLDialectName`) mapped to the renderer that writes its SQL.
/// The switch is exhaustive, so a dialect added to the registry does not build until it has one.
public enum MigrationRenderers {
    public static func renderer(for dialect: SQLDialectName) -> any MigrationRenderer {
        switch dialect {
        case .sqlite: SQLiteRenderer()
        case .postgres: PostgresRenderer()
        }
    }
}

/// Derived names (constraints, indexes) fitted to a dialect's identifier limit.
public enum SQLIdentifiers {
    /// Hex digits of the name's SHA-256 that keep two long names that share a beginning apart.
    static let hashDigits = 8

    /// `name` when it fits `limit` bytes (nil: no limit); else its longest beginning of whole
    /// characters that leaves room for `_` and `hashDigits` hex digits of its SHA-256, then
    /// those. PostgreSQL (63 bytes) cuts a longer name silently, which could make two names one.
    public static func fitted(_ name: String, to limit: Int?) -> String {
        guard let limit, name.utf8.count > limit else { return name }
        let room = limit - 1 - hashDigits
        var prefix = ""
        for character in name {
            guard prefix.utf8.count + String(character).utf8.count <= room else { break }
            prefix.append(character)
        }
        return prefix + "_" + String(SHA256.hex(name).prefix(hashDigits))
    }
}
