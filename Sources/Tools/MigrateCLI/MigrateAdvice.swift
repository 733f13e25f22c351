import MigrationFiles
import MigratorCore

/// `migrate`'s own flags and commands for the fixes the migrator's errors name in general terms
/// (the library is also called by applications, which have no flags).
enum MigrateAdvice {
    /// The error as `migrate` prints it.
    static func message(_ error: MigratorError) -> String {
        guard let advice = advice(error) else { return error.description }
        return error.description + " (" + advice + ")"
    }

    static func advice(_ error: MigratorError) -> String? {
        switch error {
        case .noMigrations: "run `schemagen generate` to write them, or pass --dir"
        case .outOfOrder: "after renumbering, run `schemagen rehash`; to apply it as it is, pass --allow-out-of-order"
        case .destructiveDown: "pass --allow-destructive"
        case .locked: "raise --lock-timeout"
        case .tableLockTimeout: "raise --ddl-lock-timeout"
        case .statementTimeout: "raise --statement-timeout"
        case .cannotConnect: "a server still starting: --connect-retry SECONDS"
        case .wrongDialect(_, _, let database):
            "a \(database) database's migrations are in \(MigrationDirectory.folder(schema: "<Schema>", root: "<migrations>", dialect: database).path)/; pass that folder to --dir"
        default: nil
        }
    }
}
