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
