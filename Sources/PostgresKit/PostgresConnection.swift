import CPostgreSQL
import Foundation
import SchemaMetadata

/// What PostgreSQL (or libpq) reported: the SQLSTATE and the message's parts, as the server
/// sent them. Never holds the connection's password.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Five characters such as `42P01` (undefined table); nil when the connection failed.
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The statement that failed, when there was one.
    public var sql: String?
    /// True when the connection is gone (the server stopped, the network dropped).
    public var connectionLost: Bool

    public init(sqlState: String?, message: String, detail: String? = nil, hint: String? = nil, sql: String? = nil, connectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.sql = sql
        self.connectionLost = connectionLost
    }

    public var description: String {
        var text = (sqlState.map { "\($0): " } ?? "") + message
        if let detail { text += "; detail: \(detail)" }
        if let hint { text += "; hint: \(hint)" }
        return text
    }
}

/// One libpq connection. Not shared between threads.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    /// The server as messages may name it: the URL without its password.
    public let label: String
    /// The password, when one was given, so no message that happens to echo it gets out.
    private let secret: String?

    /// Connects with a `postgres://` or `postgresql://` URL, a libpq `key=value` string, or, when
    /// empty, libpq's `PG*` environment variables alone.
    public init(_ target: String) throws(PostgresError) {
        label = ConnectionURL.redacted(target)
        secret = ConnectionURL.password(in: target)
        handle = PQconnectdb(target)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(handle)
            self.handle = nil
            throw PostgresError(sqlState: nil, message: "cannot connect to \(label): " + scrub(message.trimmingCharacters(in: .whitespacesAndNewlines)),
                                connectionLost: true)
        }
        // Notices (NOTICE: table "x" does not exist, skipping) are not errors: keep them quiet.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Removes the password from text that reaches a message.
    private func scrub(_ text: String) -> String {
        guard let secret, !secret.isEmpty else { return text }
        return text.replacingOccurrences(of: secret, with: "***")
    }

    public var isConnected: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server's version number, e.g. 150018.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    private func error(from result: OpaquePointer?, sql: String?) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let result, let value = PQresultErrorField(result, code) else { return nil }
            return scrub(String(cString: value))
        }
        let lost = PQstatus(handle) != CONNECTION_OK
        let fallback = scrub(String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
        // libpq's field codes: 'C' SQLSTATE, 'M' message, 'D' detail, 'H' hint.
        return PostgresError(sqlState: field(67), message: field(77) ?? (fallback.isEmpty ? "the connection to \(label) was lost" : fallback),
                             detail: field(68), hint: field(72), sql: sql, connectionLost: lost)
    }

    /// Runs SQL that returns no rows (one statement, or several without parameters).
    public func execute(_ sql: String) throws(PostgresError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw error(from: result, sql: sql)
        }
    }

    /// Runs one statement with `$1`, `$2`... parameters and returns its rows, typed from the
    /// result's column types: integers, reals, booleans (as 0 and 1), bytea as bytes, the rest text.
    public func query(_ sql: String, _ arguments: [StoredValue] = []) throws(PostgresError) -> [[StoredValue]] {
        var texts: [String?] = arguments.map { value in
            switch value {
            case .null: nil
            case .integer(let number): String(number)
            case .real(let number): String(number)
            case .text(let text): text
            case .blob(let bytes): "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
            }
        }
        var cStrings: [UnsafeMutablePointer<CChar>?] = texts.map { $0.map { strdup($0) } ?? nil }
        defer { cStrings.forEach { free($0) } }
        let result = cStrings.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { pointers in
                PQexecParams(handle, sql, Int32(arguments.count), nil, pointers.baseAddress, nil, nil, 0)
            }
        }
        texts.removeAll()
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else { throw error(from: result, sql: sql) }
        let rows = Int(PQntuples(result)), columns = Int(PQnfields(result))
        var out: [[StoredValue]] = []
        out.reserveCapacity(rows)
        for row in 0..<rows {
            var values: [StoredValue] = []
            for column in 0..<columns {
                guard PQgetisnull(result, Int32(row), Int32(column)) == 0 else {
                    values.append(.null)
                    continue
                }
                let text = String(cString: PQgetvalue(result, Int32(row), Int32(column)))
                values.append(Self.value(text, type: PQftype(result, Int32(column))))
            }
            out.append(values)
        }
        return out
    }

    /// A text-format value by its type's OID (pg_type): bool 16, int8 20, int2 21, int4 23,
    /// float4 700, float8 701, bytea 17.
    static func value(_ text: String, type: Oid) -> StoredValue {
        switch type {
        case 16: .integer(text == "t" ? 1 : 0)
        case 20, 21, 23: Int64(text).map(StoredValue.integer) ?? .text(text)
        case 700, 701: Double(text).map(StoredValue.real) ?? .text(text)
        case 17:
            if text.hasPrefix("\\x") {
                .blob(stride(from: 2, to: text.utf8.count, by: 2).compactMap { offset in
                    let start = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
                    return UInt8(String(text.utf8[start..<text.utf8.index(start, offsetBy: 2)]) ?? "", radix: 16)
                })
            } else {
                .text(text)
            }
        default: .text(text)
        }
    }

    // MARK: - Scripts

    /// Where in a script a statement starts: 1-based index and line.
    public struct StatementPosition: Sendable, Equatable {
        public var index: Int
        public var line: Int
    }

    public struct ScriptError: Error, Sendable, CustomStringConvertible {
        public var position: StatementPosition
        public var error: PostgresError
        public var description: String { "statement \(position.index) at line \(position.line): \(error)" }
    }

    /// Runs a script's statements one by one, reporting each before it runs.
    public func executeScript(_ sql: String, willRun: (StatementPosition) -> Void = { _ in }) throws(ScriptError) {
        for (offset, statement) in PostgresScript.statements(in: sql).enumerated() {
            let position = StatementPosition(index: offset + 1, line: statement.line)
            willRun(position)
            do {
                try execute(statement.text)
            } catch {
                throw ScriptError(position: position, error: error)
            }
        }
    }
}

/// Splits PostgreSQL scripts at the semicolons that end statements: not inside quoted strings
/// (with `''` and `E'\''` escapes), quoted names, dollar-quoted bodies (`$$ ... $$`,
/// `$tag$ ... $tag$`) or comments (`--`, and `/* */`, which nest).
public enum PostgresScript {
    public struct Statement: Sendable, Equatable {
        public var text: String
        /// The 1-based line of its first character.
        public var line: Int
    }

    public static func statements(in sql: String) -> [Statement] {
        let scalars = Array(sql.unicodeScalars)
        var result: [Statement] = []
        var index = 0
        var line = 1
        var start: Int?
        var startLine = 1
        func finish(at end: Int) {
            if let from = start {
                let text = String(String.UnicodeScalarView(scalars[from..<end])).trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { result.append(Statement(text: text, line: startLine)) }
            }
            start = nil
        }
        func advance() {
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }
        while index < scalars.count {
            let scalar = scalars[index]
            let next: Unicode.Scalar? = index + 1 < scalars.count ? scalars[index + 1] : nil
            if scalar == "-", next == "-" {
                while index < scalars.count, scalars[index] != "\n" { advance() }
                continue
            }
            if scalar == "/", next == "*" {
                var depth = 0
                repeat {
                    if scalars[index] == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
                        depth += 1
                        advance()
                    } else if scalars[index] == "*", index + 1 < scalars.count, scalars[index + 1] == "/" {
                        depth -= 1
                        advance()
                    }
                    advance()
                } while depth > 0 && index < scalars.count
                continue
            }
            if scalar.properties.isWhitespace {
                advance()
                continue
            }
            if start == nil {
                start = index
                startLine = line
            }
            switch scalar {
            case ";":
                advance()
                finish(at: index)
            case "'", "\"":
                // E'...' strings also take backslash escapes.
                let escapes = scalar == "'" && index > 0 && (scalars[index - 1] == "E" || scalars[index - 1] == "e")
                advance()
                while index < scalars.count {
                    if escapes, scalars[index] == "\\" {
                        advance()
                        if index < scalars.count { advance() }
                        continue
                    }
                    if scalars[index] == scalar {
                        advance()
                        if index < scalars.count, scalars[index] == scalar {
                            advance()
                            continue
                        }
                        break
                    }
                    advance()
                }
            case "$":
                // A dollar quote: $tag$ with an identifier-like tag, or $$.
                var end = index + 1
                while end < scalars.count, scalars[end] == "_" || scalars[end].properties.isAlphabetic || (end > index + 1 && ("0"..."9").contains(scalars[end])) { end += 1 }
                guard end < scalars.count, scalars[end] == "$" else {
                    advance()
                    continue
                }
                let tag = Array(scalars[index...end])
                while index <= end { advance() }
                while index < scalars.count {
                    if scalars[index] == "$", index + tag.count <= scalars.count, Array(scalars[index..<(index + tag.count)]) == tag {
                        for _ in tag { advance() }
                        break
                    }
                    advance()
                }
            default:
                advance()
            }
        }
        finish(at: scalars.count)
        return result
    }
}

/// Connection URLs as messages may show them.
public enum ConnectionURL {
    /// `postgres://user:secret@host/db` as `postgres://user:***@host/db`; `password=secret` in a
    /// key=value string, or `?password=secret` in a URL, as `***` too.
    public static func redacted(_ target: String) -> String {
        var text = target
        if let schemeEnd = text.range(of: "://") {
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        for key in ["password=", "PASSWORD="] {
            var searchStart = text.startIndex
            while let found = text.range(of: key, range: searchStart..<text.endIndex) {
                let valueEnd = text[found.upperBound...].firstIndex(where: { $0 == " " || $0 == "&" }) ?? text.endIndex
                text.replaceSubrange(found.upperBound..<valueEnd, with: "***")
                searchStart = text.index(found.upperBound, offsetBy: 3, limitedBy: text.endIndex) ?? text.endIndex
            }
        }
        return text
    }

    /// The password a target carries, if any (URL user info, or `password=`).
    public static func password(in target: String) -> String? {
        if let schemeEnd = target.range(of: "://") {
            let rest = target[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                let raw = String(rest[rest.index(after: colon)..<at])
                return raw.removingPercentEncoding ?? raw
            }
        }
        if let found = target.range(of: "password=") {
            let end = target[found.upperBound...].firstIndex(where: { $0 == " " || $0 == "&" }) ?? target.endIndex
            return String(target[found.upperBound..<end])
        }
        return nil
    }

    /// Whether a database argument names a PostgreSQL server rather than a SQLite file.
    public static func isPostgres(_ target: String) -> Bool {
        target.hasPrefix("postgres://") || target.hasPrefix("postgresql://")
    }
}
