import Foundation
import SQLDialects

/// What a migration file tells the migrator, in a block of `-- key: value` lines at its top:
///
/// ```
/// -- schemagen-migration: 1
/// -- schema: Flights
/// -- dialect: sqlite
/// -- direction: up
/// -- from-version: 4
/// -- to-version: 5
/// -- transaction: yes
/// -- foreign-keys: off
/// -- loses-data: no
/// -- row-copies: [{"from":"flights","to":"schemagen_new_flights"}]
/// ```
///
/// The block ends at the first blank line; prose comments follow it and never change behaviour.
/// The block is parsed strictly: an unknown key, a repeated key, a missing required key or a
/// value outside its set is an error naming the line, never a guess. `docs/migrations.md`
/// documents every key.
///
/// Files planned before format 1 (schemagen 0.1) carry their directives as fixed sentences on
/// fixed lines (format 0): those whole lines are recognised in the top block only. A file with
/// neither (a migration written by hand) runs with the defaults: in a transaction, foreign keys on.
public struct MigrationHeader: Sendable, Hashable {
    /// The newest format this build reads and writes.
    public static let currentFormat = 1

    /// Which way a file moves the schema (`direction:`).
    public enum Direction: String, Sendable, Hashable {
        /// `up` applies a migration (an `.up.sql` file); `down` reverts it (a `.down.sql` file).
        case up, down
    }

    /// 1 for this format, 0 for files planned before it, nil for files without a header.
    public var format: Int?
    /// The schema the file belongs to (`schema:`), or nil when the header does not say.
    public var schema: String?
    /// The dialect the file was planned for (`dialect:`); the migrator refuses to run it on another engine.
    public var dialect: String?
    /// Whether the file applies or reverts its migration; nil only for files without a format 1 header.
    public var direction: Direction?
    /// The schema version the file starts from (`from-version:`); 0 is an empty database.
    public var fromVersion: Int?
    /// The schema version the file leaves the database at (`to-version:`).
    public var toVersion: Int?
    /// Whether the migrator wraps the file, with its history row, in one transaction. Statements
    /// such as PostgreSQL's `CREATE INDEX CONCURRENTLY` cannot run inside one.
    public var runsInTransaction = true
    /// SQLite: run with foreign-key enforcement off around the transaction, and check every
    /// foreign key before commit (table rebuilds need it).
    public var foreignKeysOff = false
    /// Running the file loses data that cannot be brought back (a dropped column or table, a
    /// down migration that cannot restore rows).
    public var losesData = false
    /// The row copies of table rebuilds, for progress: rows written into `to` against the rows of `from`.
    public var rowCopies: [RowCopy] = []
    /// The phase of an online (expand/contract) migration the file holds, whose body is
    /// `OnlinePhase` sections; nil for a migration applied whole.
    public var online: OnlinePhaseKind? = nil

    /// The phases of an online migration: `up.sql` expands, `contract.sql` contracts, and
    /// `down.sql` rolls an expand back.
    public enum OnlinePhaseKind: String, Sendable, Hashable {
        /// Additions only; afterwards the previous version and this one are both served.
        case expand
        /// Removes what only the previous version used.
        case contract
        /// Undoes an expand.
        case rollback
    }

    /// One table rebuild's copy of rows, from the old table into its replacement.
    public struct RowCopy: Sendable, Hashable, Codable {
        /// The table the rows are read from.
        public var from: String
        /// The table the rows are written into, such as `schemagen_new_flights`.
        public var to: String

        /// Creates a row copy from one table into another.
        ///
        ///     let copy = MigrationHeader.RowCopy(from: "flights", to: "schemagen_new_flights")
        public init(from: String, to: String) {
            self.from = from
            self.to = to
        }
    }

    /// Creates a header in the current format; the other defaults are those of a file without a
    /// header: one transaction, foreign keys on, no data lost.
    ///
    ///     let header = MigrationHeader(schema: "Flights", dialect: "sqlite", direction: .up, fromVersion: 4, toVersion: 5)
    ///     let block = header.text   // "-- schemagen-migration: 1\n-- schema: Flights\n..."
    public init(
        format: Int? = MigrationHeader.currentFormat, schema: String? = nil, dialect: String? = nil, direction: Direction? = nil,
        fromVersion: Int? = nil, toVersion: Int? = nil, runsInTransaction: Bool = true, foreignKeysOff: Bool = false,
        losesData: Bool = false, rowCopies: [RowCopy] = [], online: OnlinePhaseKind? = nil
    ) {
        self.online = online
        self.format = format
        self.schema = schema
        self.dialect = dialect
        self.direction = direction
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.runsInTransaction = runsInTransaction
        self.foreignKeysOff = foreignKeysOff
        self.losesData = losesData
        self.rowCopies = rowCopies
    }

    /// A header line the migrator cannot accept.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The 1-based line of the file; a missing key is reported on the header's last line.
        public var line: Int
        /// What is wrong and, where it helps, what was expected.
        public var message: String
        /// `line N: message`.
        public var description: String { "line \(line): \(message)" }

        /// Creates an error for a header line.
        ///
        ///     throw MigrationHeader.ParseError(line: 4, message: "'direction' is 'sideways'; expected 'up' or 'down'")
        public init(line: Int, message: String) {
            self.line = line
            self.message = message
        }
    }

    // MARK: - Writing

    static let marker = "schemagen-migration"

    /// The header block, ending with its blank line.
    public var text: String {
        var lines = ["\(Self.marker): \(format ?? Self.currentFormat)"]
        if let schema { lines.append("schema: \(schema)") }
        if let dialect { lines.append("dialect: \(dialect)") }
        if let direction { lines.append("direction: \(direction.rawValue)") }
        lines.append("from-version: \(fromVersion ?? 0)")
        if let toVersion { lines.append("to-version: \(toVersion)") }
        lines.append("transaction: \(runsInTransaction ? "yes" : "no")")
        lines.append("foreign-keys: \(foreignKeysOff ? "off" : "on")")
        lines.append("loses-data: \(losesData ? "yes" : "no")")
        if !rowCopies.isEmpty {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            // JSON escapes control characters, so no name can end the line.
            let json = (try? encoder.encode(rowCopies)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            lines.append("row-copies: \(json)")
        }
        if let online { lines.append("online: \(online.rawValue)") }
        return lines.map { "-- " + $0 }.joined(separator: "\n") + "\n\n"
    }

    // MARK: - Reading

    /// The header of a migration file's text.
    public static func parse(_ sql: String) throws(ParseError) -> MigrationHeader {
        // The block: the lines before the first blank one.
        var block: [Substring] = []
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            if trimmed.allSatisfy({ $0 == " " || $0 == "\t" }) { break }
            block.append(trimmed)
        }
        guard let first = block.first else { return MigrationHeader(format: nil) }
        if first.hasPrefix("-- \(marker):") { return try parseCurrent(block) }
        if first.hasSuffix(". Generated by schemagen; review before applying.") { return parseFormat0(block) }
        return MigrationHeader(format: nil)
    }

    static func parseCurrent(_ block: [Substring]) throws(ParseError) -> MigrationHeader {
        var header = MigrationHeader(format: nil)
        var seen: Set<String> = []
        for (offset, line) in block.enumerated() {
            let number = offset + 1
            guard line.hasPrefix("-- "), let colon = line.firstIndex(of: ":") else {
                throw ParseError(line: number, message: "'\(line.prefix(60))' is not a '-- key: value' header line; end the header with a blank line before other text")
            }
            let key = String(line[line.index(line.startIndex, offsetBy: 3)..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard seen.insert(key).inserted else { throw ParseError(line: number, message: "'\(key)' is given twice") }
            func flag(_ yes: String, _ no: String) throws(ParseError) -> Bool {
                if value == yes { return true }
                if value == no { return false }
                throw ParseError(line: number, message: "'\(key)' is '\(value)'; expected '\(yes)' or '\(no)'")
            }
            func version() throws(ParseError) -> Int {
                guard let parsed = Int(value), parsed >= 0 else { throw ParseError(line: number, message: "'\(key)' is '\(value)'; expected a version number") }
                return parsed
            }
            switch key {
            case marker:
                guard offset == 0 else { throw ParseError(line: number, message: "'\(marker)' must be the first line") }
                guard let format = Int(value), format >= 1 else { throw ParseError(line: number, message: "'\(value)' is not a header format") }
                guard format <= currentFormat else {
                    throw ParseError(line: number, message: "header format \(format) is newer than this migrator reads (\(currentFormat)); upgrade schemagen")
                }
                header.format = format
            case "schema": header.schema = value
            case "dialect": header.dialect = value
            case "direction":
                guard let direction = Direction(rawValue: value) else { throw ParseError(line: number, message: "'direction' is '\(value)'; expected 'up' or 'down'") }
                header.direction = direction
            case "from-version": header.fromVersion = try version()
            case "to-version": header.toVersion = try version()
            case "transaction": header.runsInTransaction = try flag("yes", "no")
            case "foreign-keys": header.foreignKeysOff = !(try flag("on", "off"))
            case "loses-data": header.losesData = try flag("yes", "no")
            case "row-copies":
                guard let copies = try? JSONDecoder().decode([RowCopy].self, from: Data(value.utf8)) else {
                    throw ParseError(line: number, message: "'row-copies' must be a JSON list of {\"from\": ..., \"to\": ...} objects")
                }
                header.rowCopies = copies
            case "online":
                guard let phase = OnlinePhaseKind(rawValue: value) else {
                    throw ParseError(line: number, message: "'online' is '\(value)'; expected 'expand', 'contract' or 'rollback'")
                }
                header.online = phase
            default:
                throw ParseError(line: number, message: "unknown header key '\(key)'; this migrator knows \(knownKeys.joined(separator: ", "))")
            }
        }
        for required in [marker, "direction", "transaction", "foreign-keys", "loses-data"] where !seen.contains(required) {
            throw ParseError(line: block.count, message: "the header lacks '\(required)'")
        }
        return header
    }

    static let knownKeys = [marker, "schema", "dialect", "direction", "from-version", "to-version", "transaction", "foreign-keys", "loses-data", "row-copies", "online"]

    /// Format 0: the sentences schemagen 0.1 wrote, matched as whole lines of the top block.
    static func parseFormat0(_ block: [Substring]) -> MigrationHeader {
        // Format 0 was only ever written for SQLite.
        var header = MigrationHeader(format: 0, dialect: SQLDialectName.sqlite.rawValue)
        for line in block.dropFirst() {
            if line == "-- Rebuilds tables: run with PRAGMA foreign_keys=OFF around the transaction and PRAGMA foreign_key_check before commit." {
                header.foreignKeysOff = true
            } else if line.hasPrefix("-- Loses data that cannot be restored: ") {
                header.losesData = true
            }
        }
        if block[0].contains(" (down). ") { header.direction = .down } else if block[0].contains(" (up). ") { header.direction = .up }
        return header
    }
}
