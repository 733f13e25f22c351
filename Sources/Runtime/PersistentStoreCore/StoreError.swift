import FieldEncryption
import Foundation
import SQLDialects
import SchemaMetadata

/// Why the store refused or failed.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// Opening could not bring the database to the schema's version (or found it changed).
    case migration(String)
    /// The database refused: `failure.kind` tells busy (`.busy`) from a constraint, a damaged
    /// file and the rest; `failure.database` names the database.
    case database(DatabaseFailure)
    /// A file of an `externalStorage` attribute could not be read or written.
    case externalFile(String)
    /// A stored value does not fit the model's property, or a model cannot be encoded.
    case coding(String)
    /// A value given for a record's column is not one the schema allows there (the record
    /// writes of tools without compiled models): what column, and what it takes.
    case invalidValue(String)
    /// The model's entity is not in the store's schema.
    case unknownEntity(String)
    /// A delete rule `deny` blocked a delete.
    case deleteDenied(String)
    /// A predicate or sort the store cannot run as SQL (it never filters in memory instead).
    case unsupportedPredicate(String)
    /// The history after `after` was pruned (through `through`), so what changed since is lost.
    case historyPruned(after: HistoryToken, through: HistoryToken)
    /// The schema (or the configuration) turned history off.
    case historyDisabled(String)
    /// A history row that cannot be read (written by another program, or damaged).
    case badHistory(token: HistoryToken, reason: String)
    /// The schema encrypts attributes and no key was given (or it cannot be read).
    case missingKey(String)
    /// An encrypted value cannot be read: an unknown or wrong key, a moved or changed value.
    case encryption(FieldCipherError)
    /// A write inside `read`, which holds a snapshot and not the write lock.
    case writeInsideRead(String)
    /// The location names no database this build opens: a URL with an unknown scheme, or a
    /// server whose engine the app does not link. Never taken for a file name.
    case unsupportedDatabase(String)
    /// The database has migrations newer than every one this app's generated code embeds: a
    /// newer version of the app migrated it. This app needs updating.
    case databaseNewer(applied: Int, known: Int)
    /// What the store cannot do yet on this engine (the message says what to do instead).
    case notSupported(String)
    /// The `body` of `transaction { }` or `read { }` threw this error (one that is not a
    /// `StoreError`), carried unchanged; the transaction rolled back.
    ///
    ///     catch StoreError.body(let error as ValidationError) { reject(error) }
    case body(any Error)
    /// The store retried an operation the database refused for a reason that passes (a lock
    /// held past the busy timeout, a serialization failure or a deadlock on PostgreSQL) until
    /// `Configuration.busyTimeout` ran out: `attempts` tries in all, the last refused with `last`.
    /// Nothing of the operation was written.
    case retriesExhausted(attempts: Int, last: DatabaseFailure)
    /// The server was lost (a failover, a restart) and no writable primary answered within
    /// `Configuration.postgres.failoverTimeout`. `outcomeKnown`: the last transaction had not
    /// reached its COMMIT, so nothing of it was written; false: its COMMIT was sent and not
    /// answered, and no primary could be asked whether it took effect.
    case noWritablePrimary(waited: Duration, outcomeKnown: Bool, last: DatabaseFailure)

    /// What went wrong and what to do, without secrets.
    public var description: String {
        switch self {
        case .migration(let message): "cannot bring the database to the code's schema: \(message)"
        case .unsupportedDatabase(let message): message
        case .notSupported(let message): message
        case .databaseNewer(let applied, let known):
            "the database is newer than this app's models: migration \(String(format: "%04d", applied)) is applied, and this app knows migrations up to \(String(format: "%04d", known)); a newer version of the app opened it, so update this app (its generated code) to open it"
        case .database(let error): "database error: \(error)"
        case .externalFile(let message): "external storage: \(message)"
        case .coding(let message): "cannot map a model to its row: \(message)"
        case .invalidValue(let message): message
        case .unknownEntity(let name): "\(name) is not part of this store's schema"
        case .deleteDenied(let message): "delete refused: \(message)"
        case .unsupportedPredicate(let message): message
        case .historyPruned(let after, let through):
            "the history after token \(after) was pruned (through token \(through)), so what changed since is not known; refetch what you show and continue from currentHistoryToken()"
        case .historyDisabled(let schema):
            "the \(schema) schema records no history ('history: false', or Configuration.recordsHistory); turn it on to read changes"
        case .badHistory(let token, let reason):
            "schemagen_history row \(token) cannot be read: \(reason); delete it with deleteHistory(before:) if it was not written by this store"
        case .missingKey(let message): message
        case .encryption(let error): error.description
        case .writeInsideRead(let what): "\(what) inside read { }: reads hold a snapshot, not the write lock; write in transaction { } instead"
        case .body(let error): "the transaction's body threw (everything it wrote was rolled back): \(error)"
        case .retriesExhausted(let attempts, let last):
            "gave up after \(attempts) attempt\(attempts == 1 ? "" : "s") within the busy timeout, nothing written; the last one was refused: \(last)"
        case .noWritablePrimary(let waited, let outcomeKnown, let last):
            "the cluster has no writable primary: none answered within \(Int(waited.inSeconds.rounded())) s; "
                + (outcomeKnown
                    ? "the last transaction had not reached its COMMIT, so nothing of it was written"
                    : "the last transaction's COMMIT was sent and not answered, so whether it took effect is unknown")
                + " (\(last.message))"
        }
    }

    /// What kind of failure the database reported, when it refused (also when the store gave
    /// up retrying it: `.retriesExhausted`).
    ///
    ///     if error.databaseFailure == .busy { retryLater() }
    public var databaseFailure: DatabaseFailure.Kind? {
        switch self {
        case .database(let failure), .retriesExhausted(_, let failure), .noWritablePrimary(_, _, let failure): failure.kind
        default: nil
        }
    }

    /// The error a transaction's or read's `body` threw, when it was not a `StoreError`.
    ///
    ///     if let cause = error.bodyError as? ValidationError { reject(cause) }
    public var bodyError: (any Error)? {
        if case .body(let error) = self { return error }
        return nil
    }

    /// Any error as a `StoreError`: itself when it is one, else carried by `.body`.
    init(thrownByBody error: any Error) {
        self = (error as? StoreError) ?? .body(error)
    }
}
