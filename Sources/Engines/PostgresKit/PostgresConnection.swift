import CPostgreSQL
import DatabaseLocation
import Foundation
import SQLDialects
import SchemaMetadata

/// What PostgreSQL (or libpq) reported: the SQLSTATE and the message's parts, as the server
/// sent them. Never holds the connection's password.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Five characters such as `42P01` (undefined table); nil when the connection failed.
    public var sqlState: String?
    /// The primary message, as the server or libpq wrote it.
    public var message: String
    /// The server's secondary message (often the offending values), when it sent one.
    public var detail: String?
    /// The server's suggestion of what to do, when it sent one.
    public var hint: String?
    /// The statement that failed, when there was one.
    public var sql: String?
    /// True when the connection is gone (the server stopped, the network dropped).
    public var connectionLost: Bool

    /// An error as the server reported it; `connectionLost` marks a connection that is gone.
    ///
    ///     PostgresError(sqlState: SQLState.uniqueViolation, message: "duplicate key value violates unique constraint \"user_email_key\"")
    public init(sqlState: String?, message: String, detail: String? = nil, hint: String? = nil, sql: String? = nil, connectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.sql = sql
        self.connectionLost = connectionLost
    }

    /// `23505: duplicate key value violates unique constraint "user_email_key"; detail: Key (email)=(a@example.com) already exists.`
    public var description: String {
        var text = (sqlState.map { "\($0): " } ?? "") + message
        if let detail { text += "; detail: \(detail)" }
        if let hint { text += "; hint: \(hint)" }
        return text
    }
}

/// SQLSTATEs the toolkit acts on (PostgreSQL's Appendix A).
public enum SQLState {
    /// A function refused an argument's value (`to_tsquery` given text it cannot read, say).
    public static let invalidParameterValue = "22023"
    /// A statement waited longer than `lock_timeout` for a lock.
    public static let lockNotAvailable = "55P03"
    /// Cancelled: by `statement_timeout`, or by a cancel request.
    public static let queryCanceled = "57014"
    /// The server is starting up or shutting down.
    public static let cannotConnectNow = "57P03"
    /// A row's key or unique value is already taken (a UNIQUE or PRIMARY KEY constraint).
    public static let uniqueViolation = "23505"
    /// Two transactions waited for each other; one was rolled back.
    public static let deadlockDetected = "40P01"
    /// A serializable or repeatable-read transaction met a concurrent change.
    public static let serializationFailure = "40001"
    /// A write in a read-only transaction (or session): on a standby, or a demoted primary.
    public static let readOnlyTransaction = "25006"
    /// The server is shutting down (an administrator's or Patroni's fast shutdown).
    public static let adminShutdown = "57P01"
    /// The server crashed, and ended every session.
    public static let crashShutdown = "57P02"
    /// A prepared statement's name the server does not know.
    public static let invalidStatementName = "26000"
}

/// One libpq connection. Not shared between threads.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    /// The server's warnings since `takeWarnings` last ran (libpq's notice receiver adds them).
    private let warningBox = WarningBox()

    /// The warnings the server sent (`RAISE WARNING`, say) since the last call, oldest first,
    /// the password masked. Notices below a warning are not kept.
    ///
    ///     for warning in connection.takeWarnings() { log("warning: \(warning)") }
    public func takeWarnings() -> [String] { warningBox.take().map(scrub) }
    /// libpq's connection, for the extensions of this module (notifications).
    var rawHandle: OpaquePointer? { handle }
    /// The server as messages may name it: the URL without its password.
    public let label: String
    /// The password, when one was given, so no message that happens to echo it gets out.
    private let secret: String?

    /// Connects with a `postgres://` or `postgresql://` URL, a libpq `key=value` string, or, when
    /// empty, libpq's `PG*` environment variables alone. `applicationName` is what
    /// `pg_stat_activity` shows unless the target names its own (`application_name=`).
    /// `retryFor` keeps trying for that many seconds while the server does not answer or is
    /// still starting up (a deploy that starts both); a server that answers and refuses (a wrong
    /// password, a missing database) fails at once.
    ///
    /// `networkTimeout` bounds how long the connection waits on a network that stopped
    /// answering (a cut link sends no reset): connecting (`connect_timeout`), data the server
    /// has not acknowledged (`tcp_user_timeout`) and an idle link (TCP keepalives) each give up
    /// after about that many seconds, and the call fails as a lost connection. The target's own
    /// settings for these win.
    ///
    ///     let connection = try PostgresConnection("postgres://app@localhost:5432/app", applicationName: "importer", retryFor: 30)
    public init(_ target: String, applicationName: String? = nil, retryFor seconds: Double = 0, networkTimeout: Double? = nil) throws(PostgresError) {
        label = ConnectionURL.redacted(target)
        secret = ConnectionURL.password(in: target)
        let began = Date()
        let deadline = began.addingTimeInterval(seconds)
        var pause = 0.1
        var triedAnswering = false
        while true {
            handle = Self.connect(target, applicationName: applicationName, networkTimeout: networkTimeout)
            if let handle, PQstatus(handle) == CONNECTION_OK { break }
            let message = handle.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(handle)
            handle = nil
            let answering = Self.ping(target, applicationName: applicationName, networkTimeout: networkTimeout) == PQPING_OK
            // The last pause is cut to the time left, so the retries last as long as asked.
            let remaining = deadline.timeIntervalSinceNow
            // A server that finished starting between the attempt ("the database system is
            // starting up") and the ping gets one more attempt before its answer counts.
            if answering, seconds > 0, remaining > 0, !triedAnswering {
                triedAnswering = true
                continue
            }
            guard !answering, remaining > 0 else {
                let elapsed = Date().timeIntervalSince(began)
                let waited = seconds > 0 && !answering ? " (retried for \(Self.seconds((elapsed * 10).rounded() / 10)) s)" : ""
                throw PostgresError(
                    sqlState: nil, message: "cannot connect to \(label)\(waited): " + scrub(message.trimmingCharacters(in: .whitespacesAndNewlines)),
                    connectionLost: true)
            }
            usleep(UInt32(min(pause, remaining) * 1_000_000))
            pause = min(pause * 2, 2)
        }
        // Notices (NOTICE: table "x" does not exist, skipping) are not errors: keep them quiet.
        // Warnings are kept for `takeWarnings`: a program decides whom to tell.
        PQsetNoticeReceiver(
            handle,
            { context, result in
                guard let context, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))), String(cString: severity) == "WARNING",
                    let message = PQresultErrorField(result, Int32(UInt8(ascii: "M")))
                else { return }
                Unmanaged<WarningBox>.fromOpaque(context).takeUnretainedValue().append(String(cString: message))
            }, Unmanaged.passUnretained(warningBox).toOpaque())
        canceller = PostgresCanceller(PQgetCancel(handle))
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    /// Keyword arrays for libpq: the target expanded as a URL or keyword string
    /// (`expand_dbname`), with a fallback application name.
    private static func withParameters<T>(
        _ target: String, applicationName: String?, networkTimeout: Double?,
        _ body: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<UnsafePointer<CChar>?>) -> T
    ) -> T {
        var pairs: [(String, String)] = []
        // Before the target: what the target sets comes later and wins.
        if let networkTimeout {
            let seconds = max(1, Int(networkTimeout.rounded(.up)))
            pairs += [
                ("connect_timeout", String(seconds)), ("tcp_user_timeout", String(seconds * 1000)), ("keepalives", "1"),
                ("keepalives_idle", String(max(1, seconds / 2))), ("keepalives_interval", "1"), ("keepalives_count", String(max(1, seconds / 2))),
            ]
        }
        if !target.isEmpty, target != "postgresql://", target != "postgres://" { pairs.append(("dbname", target)) }
        if let applicationName { pairs.append(("fallback_application_name", applicationName)) }
        let keys: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.0) } + [nil]
        let values: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.1) } + [nil]
        defer { (keys + values).forEach { free($0) } }
        let constKeys = keys.map { UnsafePointer($0) }, constValues = values.map { UnsafePointer($0) }
        return constKeys.withUnsafeBufferPointer { k in constValues.withUnsafeBufferPointer { v in body(k.baseAddress!, v.baseAddress!) } }
    }

    private static func connect(_ target: String, applicationName: String?, networkTimeout: Double?) -> OpaquePointer? {
        withParameters(target, applicationName: applicationName, networkTimeout: networkTimeout) { PQconnectdbParams($0, $1, 1) }
    }

    private static func ping(_ target: String, applicationName: String?, networkTimeout: Double?) -> PGPing {
        withParameters(target, applicationName: applicationName, networkTimeout: networkTimeout) { PQpingParams($0, $1, 1) }
    }

    /// Cancels what the connection is running, from any thread (a signal handler's, say).
    public private(set) var canceller: PostgresCanceller?

    deinit { PQfinish(handle) }

    /// Removes the password from text that reaches a message.
    private func scrub(_ text: String) -> String {
        guard let secret, !secret.isEmpty else { return text }
        return text.replacingOccurrences(of: secret, with: "***")
    }

    /// Whether the connection is open and libpq reports it healthy (`CONNECTION_OK`); false once libpq has seen it drop.
    public var isConnected: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server the connection reached, `host:port` (of a multi-host URL, the one libpq chose).
    public var server: String {
        guard let handle else { return "" }
        let host = PQhost(handle).map { String(cString: $0) } ?? ""
        let port = PQport(handle).map { String(cString: $0) } ?? ""
        return port.isEmpty ? host : "\(host):\(port)"
    }

    /// The server's version number, e.g. 150018.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Whether a transaction is open (or failed and awaits its ROLLBACK).
    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Rows the last INSERT, UPDATE or DELETE of `query` changed.
    public private(set) var changedRowCount = 0

    private func error(from result: OpaquePointer?, sql: String?) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let result, let value = PQresultErrorField(result, code) else { return nil }
            return scrub(String(cString: value))
        }
        let lost = PQstatus(handle) != CONNECTION_OK
        let fallback = scrub(String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
        // libpq's field codes: 'C' SQLSTATE, 'M' message, 'D' detail, 'H' hint.
        return PostgresError(
            sqlState: field(67), message: field(77) ?? (fallback.isEmpty ? "the connection to \(label) was lost" : fallback),
            detail: field(68), hint: field(72), sql: sql, connectionLost: lost)
    }

    /// The command tag of the last `execute` (`COMMIT`, or `ROLLBACK` where a COMMIT found the
    /// transaction failed).
    public private(set) var lastCommandTag = ""

    /// Runs SQL that returns no rows (one statement, or several without parameters).
    public func execute(_ sql: String) throws(PostgresError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw error(from: result, sql: sql)
        }
        lastCommandTag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
    }

    /// Whether `query` prepares each statement once, under a name, and runs it by name after
    /// (a server parses and plans it once per connection). Off, every call sends its text as an
    /// unnamed statement: what a transaction-pooling pgbouncer needs, where the next
    /// transaction may run on another server connection that never saw the name.
    ///
    ///     connection.preparesStatements = true   // a direct connection to the server
    public var preparesStatements = false
    /// Names of the statements this connection prepared, by their text.
    private var preparedNames: [String: String] = [:]
    /// Names are never reused on a connection: a statement forgotten here may live on the server.
    private var preparedCount = 0
    /// Beyond this many, the oldest are forgotten at once (`DEALLOCATE ALL`): predicates built at
    /// run time could otherwise fill the server's memory with one-off statements.
    private static let preparedLimit = 512

    /// Runs one statement with `$1`, `$2`... parameters and returns its rows, typed from the
    /// result's column types: integers, reals, booleans (as 0 and 1), bytea as bytes, the rest text.
    public func query(_ sql: String, _ arguments: [StoredValue] = []) throws(PostgresError) -> [[StoredValue]] {
        var texts: [String?] = arguments.map(Self.parameterText)
        var cStrings: [UnsafeMutablePointer<CChar>?] = texts.map { $0.map { strdup($0) } ?? nil }
        defer { cStrings.forEach { free($0) } }
        let name = preparesStatements ? try preparedName(for: sql, parameterCount: arguments.count) : nil
        let result = cStrings.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { pointers in
                if let name {
                    PQexecPrepared(handle, name, Int32(arguments.count), pointers.baseAddress, nil, nil, 0)
                } else {
                    PQexecParams(handle, sql, Int32(arguments.count), nil, pointers.baseAddress, nil, nil, 0)
                }
            }
        }
        texts.removeAll()
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else {
            let failure = error(from: result, sql: sql)
            // Gone from the server (a `DEALLOCATE`, a pooler's reset): prepared again next time.
            if failure.sqlState == SQLState.invalidStatementName { preparedNames.removeAll() }
            throw failure
        }
        changedRowCount = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
        return Self.rows(of: result)
    }

    /// A result's rows, typed by their columns' types.
    private static func rows(of result: OpaquePointer?) -> [[StoredValue]] {
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

    /// Runs statements in libpq's pipeline mode: all are sent before any result is read, so
    /// the server works through them without waiting for a round trip each; each statement's
    /// rows come back in order. The first failure stops the rest (the server skips them up to
    /// the end of the pipeline) and is thrown. Inside a transaction the pipeline is part of it.
    /// Batches of a few hundred keep both sides' buffers from filling while neither reads.
    ///
    /// `changedRowCount` is then the last statement's count, or the count of the statement at
    /// `rowCountOf`.
    ///
    ///     let keys = try connection.pipeline(rows.map { ("INSERT INTO t (name) VALUES ($1) RETURNING id", [$0][...]) })
    public func pipeline(_ statements: [(sql: String, arguments: ArraySlice<StoredValue>)], rowCountOf counted: Int? = nil) throws(PostgresError) -> [[[StoredValue]]] {
        guard !statements.isEmpty else { return [] }
        var names: [String?] = []
        names.reserveCapacity(statements.count)
        for statement in statements {
            names.append(preparesStatements ? try preparedName(for: statement.sql, parameterCount: statement.arguments.count) : nil)
        }
        guard PQenterPipelineMode(handle) == 1 else { throw error(from: nil, sql: nil) }
        defer { PQexitPipelineMode(handle) }
        var sendFailure: PostgresError?
        for (statement, name) in zip(statements, names) {
            let texts = statement.arguments.map(Self.parameterText)
            let cStrings: [UnsafeMutablePointer<CChar>?] = texts.map { $0.map { strdup($0) } ?? nil }
            defer { cStrings.forEach { free($0) } }
            let sent = cStrings.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { pointers in
                    if let name {
                        PQsendQueryPrepared(handle, name, Int32(texts.count), pointers.baseAddress, nil, nil, 0)
                    } else {
                        PQsendQueryParams(handle, statement.sql, Int32(texts.count), nil, pointers.baseAddress, nil, nil, 0)
                    }
                }
            }
            if sent != 1 {
                sendFailure = error(from: nil, sql: statement.sql)
                break
            }
        }
        if let sendFailure, !isConnected { throw sendFailure }
        guard PQpipelineSync(handle) == 1 else { throw error(from: nil, sql: nil) }
        var results: [[[StoredValue]]] = []
        results.reserveCapacity(statements.count)
        var failure: PostgresError? = sendFailure
        // Each statement's results end with a null; the pipeline ends with its sync result.
        while true {
            guard let result = PQgetResult(handle) else {
                guard isConnected else { throw failure ?? error(from: nil, sql: nil) }
                continue
            }
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC { break }
            switch status {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
                if counted == nil || counted == results.count {
                    changedRowCount = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
                }
                results.append(Self.rows(of: result))
            case PGRES_PIPELINE_ABORTED:
                break
            default:
                let statementFailure = error(from: result, sql: results.count < statements.count ? statements[results.count].sql : nil)
                if statementFailure.sqlState == SQLState.invalidStatementName { preparedNames.removeAll() }
                if failure == nil { failure = statementFailure }
                if statementFailure.connectionLost { throw statementFailure }
            }
        }
        if let failure { throw failure }
        return results
    }

    /// Loads rows with `COPY table (columns) FROM STDIN` (text format), the server's fastest
    /// way in; returns how many rows it took. Values are sent as `query` binds them.
    ///
    ///     let copied = try connection.copy(into: "airports", columns: ["icao", "name"], rows: [[.text("KSFO"), .text("San Francisco")]])
    public func copy<Rows: Sequence>(into table: String, columns: [String], rows: Rows) throws(PostgresError) -> Int
    where Rows.Element: Collection<StoredValue> {
        let sql = ("COPY \(identifier: table) (\(SQL.identifiers(columns))) FROM STDIN" as SQL).rendered(for: PostgresDialect()).text
        let start = PQexec(handle, sql)
        let status = PQresultStatus(start)
        if status != PGRES_COPY_IN {
            defer { PQclear(start) }
            throw error(from: start, sql: sql)
        }
        PQclear(start)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16)
        func flush() -> Bool {
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) == 1 }
            }
        }
        var sent = true
        for row in rows where sent {
            for (index, value) in row.enumerated() {
                if index > 0 { buffer.append(9) }
                guard let text = Self.parameterText(value) else {
                    buffer += [92, 78]  // \N
                    continue
                }
                for byte in text.utf8 {
                    switch byte {
                    case 92: buffer += [92, 92]
                    case 9: buffer += [92, 116]
                    case 10: buffer += [92, 110]
                    case 13: buffer += [92, 114]
                    default: buffer.append(byte)
                    }
                }
            }
            buffer.append(10)
            if buffer.count >= 1 << 16 { sent = flush() }
        }
        if sent, !buffer.isEmpty { sent = flush() }
        PQputCopyEnd(handle, sent ? nil : "the client stopped sending")
        var failure: PostgresError?
        var count = 0
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                count = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
            } else if failure == nil {
                failure = error(from: result, sql: sql)
            }
            PQclear(result)
        }
        if let failure { throw failure }
        return count
    }

    /// The name of `sql` prepared on this connection, preparing it the first time.
    private func preparedName(for sql: String, parameterCount: Int) throws(PostgresError) -> String {
        if let name = preparedNames[sql] { return name }
        if preparedNames.count >= Self.preparedLimit {
            try execute("DEALLOCATE ALL")
            preparedNames.removeAll()
        }
        preparedCount += 1
        let name = "schemagen_\(preparedCount)"
        let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw error(from: result, sql: sql) }
        preparedNames[sql] = name
        return name
    }

    /// A value as a text-format parameter (bytea in hex).
    static func parameterText(_ value: StoredValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): text
        case .blob(let bytes): "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// A text-format value by its type's OID (pg_type): bool 16, int8 20, int2 21, int4 23,
    /// float4 700, float8 701, bytea 17; timestamptz 1184 as ISO 8601 (`2026-12-01T18:00:00.5Z`,
    /// or with its offset), as the rest of the toolkit stores dates.
    static func value(_ text: String, type: Oid) -> StoredValue {
        switch type {
        case 1184: .text(isoTimestamp(text))
        case 16: .integer(text == "t" ? 1 : 0)
        case 20, 21, 23: Int64(text).map(StoredValue.integer) ?? .text(text)
        case 700, 701: Double(text).map(StoredValue.real) ?? .text(text)
        case 17:
            if text.hasPrefix("\\x") {
                .blob(
                    stride(from: 2, to: text.utf8.count, by: 2).compactMap { offset in
                        let start = text.utf8.index(text.utf8.startIndex, offsetBy: offset)
                        return UInt8(String(text.utf8[start..<text.utf8.index(start, offsetBy: 2)]) ?? "", radix: 16)
                    })
            } else {
                .text(text)
            }
        default: .text(text)
        }
    }

    /// PostgreSQL's `2026-12-01 18:00:00.5+00` (ISO DateStyle) as ISO 8601, in UTC exactly as the
    /// toolkit writes dates, `2026-12-01T18:00:00.500Z` (milliseconds padded to three digits, so
    /// `StoredDate` reads it without a formatter); more digits, or another offset, stay as they
    /// are with the offset's minutes added (`+02` -> `+02:00`).
    static func isoTimestamp(_ text: String) -> String {
        var bytes = Array(text.utf8)
        guard bytes.count >= 22, bytes[10] == UInt8(ascii: " ") else { return text }
        bytes[10] = UInt8(ascii: "T")
        if bytes.suffix(3) == Array("+00".utf8) {
            bytes.removeLast(3)
            // Seconds end at 19; then an optional fraction of up to six digits.
            let fraction = bytes.count > 19 && bytes[19] == UInt8(ascii: ".") ? bytes.count - 20 : 0
            if fraction <= 3 {
                if fraction == 0 { bytes.append(UInt8(ascii: ".")) }
                bytes += Array(repeating: UInt8(ascii: "0"), count: 3 - fraction)
            }
            bytes.append(UInt8(ascii: "Z"))
            return String(decoding: bytes, as: UTF8.self)
        }
        var iso = String(decoding: bytes, as: UTF8.self)
        if let sign = iso.lastIndex(where: { $0 == "+" || $0 == "-" }), iso.distance(from: sign, to: iso.endIndex) == 3 { iso += ":00" }
        return iso
    }

    // MARK: - Scripts

    /// Where in a script a statement starts: 1-based index and line.
    public struct StatementPosition: Sendable, Equatable {
        /// 1-based index among the script's statements.
        public var index: Int
        /// 1-based line of the statement's first character.
        public var line: Int
    }

    /// A statement of a script that failed.
    public struct ScriptError: Error, Sendable, CustomStringConvertible {
        /// Where the statement starts.
        public var position: StatementPosition
        /// What PostgreSQL reported for it.
        public var error: PostgresError
        /// `statement 3 at line 12: 42P01: relation "flight" does not exist`.
        public var description: String { "statement \(position.index) at line \(position.line): \(error)" }
    }

    /// Runs a script's statements one by one, reporting each before it runs. `shouldStop` is
    /// asked before each: true ends the script there, failing as cancelled (SQLSTATE 57014).
    public func executeScript(_ sql: String, shouldStop: () -> Bool = { false }, willRun: (StatementPosition) -> Void = { _ in }) throws(ScriptError) {
        for (offset, statement) in PostgresScript.statements(in: sql).enumerated() {
            let position = StatementPosition(index: offset + 1, line: statement.line)
            if shouldStop() {
                throw ScriptError(position: position, error: PostgresError(sqlState: SQLState.queryCanceled, message: "canceling statement due to user request"))
            }
            willRun(position)
            do {
                try execute(statement.text)
            } catch {
                throw ScriptError(position: position, error: error)
            }
        }
    }
}

/// libpq's cancel request for one connection: safe to send from another thread while the
/// connection's own thread waits for a statement (`PQcancel` is made for that).
public final class PostgresCanceller: @unchecked Sendable {
    private let cancel: OpaquePointer?

    init(_ cancel: OpaquePointer?) { self.cancel = cancel }
    deinit { PQfreeCancel(cancel) }

    /// Asks the server to cancel the statement in progress; true when the request was sent.
    @discardableResult
    public func send() -> Bool {
        guard let cancel else { return false }
        var buffer = [CChar](repeating: 0, count: 256)
        return PQcancel(cancel, &buffer, Int32(buffer.count)) == 1
    }
}

/// Splits PostgreSQL scripts at the semicolons that end statements: not inside quoted strings
/// (with `''` and `E'\''` escapes), quoted names, dollar-quoted bodies (`$$ ... $$`,
/// `$tag$ ... $tag$`) or comments (`--`, and `/* */`, which nest).
public enum PostgresScript {
    /// One statement of a script, as `statements(in:)` splits it.
    public struct Statement: Sendable, Equatable {
        /// The statement's text, trimmed, with its closing `;` when it had one.
        public var text: String
        /// The 1-based line of its first character.
        public var line: Int
    }

    /// The script's statements in order, without the comments and blank text between them; text
    /// after the last `;` is a statement too.
    public static func statements(in sql: String) -> [Statement] {
        var scanner = Scanner(Array(sql.unicodeScalars))
        var result: [Statement] = []
        var start: (index: Int, line: Int)?
        func finish(at end: Int) {
            if let from = start {
                let text = String(String.UnicodeScalarView(scanner.scalars[from.index..<end])).trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { result.append(Statement(text: text, line: from.line)) }
            }
            start = nil
        }
        while let scalar = scanner.current {
            if scanner.skipComment() { continue }
            if scalar.properties.isWhitespace {
                scanner.advance()
                continue
            }
            if start == nil { start = (scanner.index, scanner.line) }
            switch scalar {
            case ";":
                scanner.advance()
                finish(at: scanner.index)
            case "'", "\"":
                scanner.skipQuoted()
            case "$":
                scanner.skipDollarQuoted()
            default:
                scanner.advance()
            }
        }
        finish(at: scanner.scalars.count)
        return result
    }

    /// A position in a script's scalars, with its line, and the steps over what can hide a `;`.
    struct Scanner {
        let scalars: [Unicode.Scalar]
        private(set) var index = 0
        private(set) var line = 1

        init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

        var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        func isAt(_ first: Unicode.Scalar, _ second: Unicode.Scalar) -> Bool {
            index + 1 < scalars.count && scalars[index] == first && scalars[index + 1] == second
        }

        mutating func advance() {
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }

        /// Steps over a `--` comment to its line's end, or a `/* */` one (they nest); false
        /// when no comment starts here.
        mutating func skipComment() -> Bool {
            if isAt("-", "-") {
                while let scalar = current, scalar != "\n" { advance() }
                return true
            }
            guard isAt("/", "*") else { return false }
            var depth = 0
            repeat {
                if isAt("/", "*") {
                    depth += 1
                    advance()
                } else if isAt("*", "/") {
                    depth -= 1
                    advance()
                }
                advance()
            } while depth > 0 && index < scalars.count
            return true
        }

        /// Steps over a quoted string or name, its quote doubled inside; `E'...'` strings also
        /// take backslash escapes.
        mutating func skipQuoted() {
            let quote = scalars[index]
            let escapes = quote == "'" && index > 0 && (scalars[index - 1] == "E" || scalars[index - 1] == "e")
            advance()
            while let scalar = current {
                if escapes, scalar == "\\" {
                    advance()
                    if current != nil { advance() }
                    continue
                }
                advance()
                if scalar == quote {
                    guard current == quote else { return }
                    advance()
                }
            }
        }

        /// Steps over a dollar quote, `$tag$ ... $tag$` with an identifier-like tag or
        /// `$$ ... $$`; over the `$` alone when none starts here (a parameter, `$1`).
        mutating func skipDollarQuoted() {
            var end = index + 1
            while end < scalars.count, scalars[end] == "_" || scalars[end].properties.isAlphabetic || (end > index + 1 && ("0"..."9").contains(scalars[end])) { end += 1 }
            guard end < scalars.count, scalars[end] == "$" else {
                advance()
                return
            }
            let tag = Array(scalars[index...end])
            while index <= end { advance() }
            while index < scalars.count {
                if scalars[index] == "$", index + tag.count <= scalars.count, Array(scalars[index..<(index + tag.count)]) == tag {
                    for _ in tag { advance() }
                    return
                }
                advance()
            }
        }
    }
}

/// Connection texts as messages may show them (kept for callers; `DatabaseLocation` decides).
public enum ConnectionURL {
    /// The password masked: `postgres://user:***@host/db`, `password=***`.
    public static func redacted(_ target: String) -> String { DatabaseLocation.redacted(target) }

    /// The password a target carries, if any (URL user info, or `password=`).
    public static func password(in target: String) -> String? { DatabaseLocation.password(in: target) }

    /// The target with `target_session_attrs=read-write` when it names several hosts and does
    /// not say which it wants: for those who write (the store, its listener, the migrator), so
    /// libpq skips the standbys and reaches the primary, wherever it is now.
    ///
    ///     ConnectionURL.requiringPrimary("postgres://app@db1,db2/shop")   // "postgres://app@db1,db2/shop?target_session_attrs=read-write"
    public static func requiringPrimary(_ target: String) -> String {
        guard !target.contains("target_session_attrs") else { return target }
        if target.hasPrefix("postgres://") || target.hasPrefix("postgresql://") {
            let authority = target.drop { $0 != "/" }.dropFirst(2).prefix { $0 != "/" && $0 != "?" }
            guard authority.contains(",") else { return target }
            return target + (target.contains("?") ? "&" : "?") + "target_session_attrs=read-write"
        }
        // The keyword form: `host=db1,db2 ...`.
        guard target.split(separator: " ").contains(where: { ($0.hasPrefix("host=") || $0.hasPrefix("hostaddr=")) && $0.contains(",") }) else { return target }
        return target + " target_session_attrs=read-write"
    }
}

/// The warnings libpq's notice receiver hands over, until they are taken. Only the
/// connection's own thread touches it (libpq calls the receiver inside the call that got the
/// warning).
final class WarningBox {
    private var warnings: [String] = []
    func append(_ warning: String) {
        // Bounded: a loop that warns per row must not grow it without end.
        if warnings.count < 1_000 { warnings.append(warning) }
    }
    func take() -> [String] {
        defer { warnings.removeAll() }
        return warnings
    }
}
