import CSQLite

extension SQLiteConnection {
    /// Where in a script a statement starts.
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
        /// What SQLite reported for it.
        public var error: SQLiteError
        /// `statement 3 at line 12: no such table: flight`.
        public var description: String { "statement \(position.index) at line \(position.line): \(error.message)" }
    }

    /// The statements of a script as SQLite would split it, without preparing them (so a script
    /// may refer to tables its earlier statements create). Comments and blank text between
    /// statements are dropped; text after the last `;` that is not a statement is ignored.
    public static func statements(in sql: String) -> [String] {
        var result: [String] = []
        var bytes = Array(sql.utf8)
        bytes.append(0)
        var start = 0
        bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            for index in 0..<(buffer.count - 1) where buffer[index] == UInt8(ascii: ";") {
                // sqlite3_complete knows strings, quoted names, comments and trigger bodies:
                // a `;` inside any of them does not end the statement.
                let saved = buffer[index + 1]
                buffer[index + 1] = 0
                let complete = sqlite3_complete(UnsafeRawPointer(base + start).assumingMemoryBound(to: CChar.self)) != 0
                buffer[index + 1] = saved
                guard complete else { continue }
                let text = String(decoding: UnsafeBufferPointer(rebasing: buffer[start...index]), as: UTF8.self)
                result.append(Self.droppingLeadingComments(text))
                start = index + 1
            }
        }
        return result
    }

    /// The statement without the blank lines and `--` or `/* */` comments before it.
    static func droppingLeadingComments(_ text: String) -> String {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*"), let end = rest.range(of: "*/") {
                rest = rest[end.upperBound...]
            } else {
                return String(rest)
            }
        }
    }

    /// The number of statements in a script (comments and blank text do not count).
    public func statementCount(_ sql: String) -> Int { Self.statements(in: sql).count }

    /// Runs every statement of a script in order, reporting each before it runs; a failure
    /// (when preparing or running it) names the statement and its line.
    /// `shouldStop` is asked before each statement: true ends the script there, failing as
    /// interrupted (the caller rolls back).
    public func executeScript(_ sql: String, shouldStop: () -> Bool = { false }, willRun: (StatementPosition) -> Void = { _ in }) throws(ScriptError) {
        var failure: ScriptError?
        try forEachStatement(sql) { statement, position in
            if shouldStop() {
                failure = ScriptError(position: position, error: SQLiteError(code: SQLiteError.Code.interrupted.rawValue, message: "interrupted", sql: nil, database: path))
                return false
            }
            willRun(position)
            while true {
                let status = sqlite3_step(statement)
                if status == SQLITE_DONE { break }
                if status == SQLITE_ROW { continue }
                failure = ScriptError(position: position, error: error(status, sql: String(cString: sqlite3_sql(statement))))
                return false
            }
            return true
        }
        if let failure { throw failure }
    }

    /// Prepares each statement in turn (the text after one is where the next starts).
    /// The body returns false to stop.
    private func forEachStatement(_ sql: String, _ body: (OpaquePointer, StatementPosition) -> Bool) throws(ScriptError) {
        let bytes = Array(sql.utf8) + [0]
        try bytes.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) throws(ScriptError) in
            guard let base = buffer.baseAddress else { return }
            let start = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
            let end = buffer.count - 1
            var offset = 0
            var index = 0
            var line = 1
            var lineCountedUpTo = 0
            while offset < end {
                // The next statement's first character: skip blanks and comments before it.
                var begin = offset
                while begin < end {
                    let byte = buffer[begin]
                    if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                        begin += 1
                    } else if byte == UInt8(ascii: "-"), begin + 1 < end, buffer[begin + 1] == UInt8(ascii: "-") {
                        while begin < end, buffer[begin] != 0x0A { begin += 1 }
                    } else if byte == UInt8(ascii: "/"), begin + 1 < end, buffer[begin + 1] == UInt8(ascii: "*") {
                        begin += 2
                        while begin + 1 < end, !(buffer[begin] == UInt8(ascii: "*") && buffer[begin + 1] == UInt8(ascii: "/")) { begin += 1 }
                        begin = min(end, begin + 2)
                    } else {
                        break
                    }
                }
                guard begin < end else { return }
                while lineCountedUpTo < begin {
                    if buffer[lineCountedUpTo] == 0x0A { line += 1 }
                    lineCountedUpTo += 1
                }
                index += 1
                let position = StatementPosition(index: index, line: line)
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let status = sqlite3_prepare_v2(rawHandle, start + begin, -1, &statement, &tail)
                guard status == SQLITE_OK else {
                    sqlite3_finalize(statement)
                    throw ScriptError(position: position, error: error(status, sql: nil))
                }
                guard let prepared = statement else { return }
                let keepGoing = body(prepared, position)
                sqlite3_finalize(prepared)
                guard keepGoing, let tail else { return }
                offset = tail - start
            }
        }
    }

    /// How long a statement waits for another connection's lock before failing with SQLITE_BUSY.
    public func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(rawHandle, milliseconds)
    }

    /// Calls `tick` about every `instructions` virtual-machine steps (for progress during long
    /// copies); nil removes it.
    public func setProgressHandler(every instructions: Int32, _ tick: (() -> Void)?) {
        guard let tick else {
            sqlite3_progress_handler(rawHandle, 0, nil, nil)
            progressBox = nil
            return
        }
        let box = ProgressBox(tick)
        progressBox = box
        sqlite3_progress_handler(
            rawHandle, instructions,
            { context in
                guard let context else { return 0 }
                Unmanaged<ProgressBox>.fromOpaque(context).takeUnretainedValue().tick()
                return 0
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Counts the rows inserted into rowid tables while `body` runs, through SQLite's update
    /// hook (one C call a row); `observe` receives the running total when asked through
    /// `currentInsertCount`. Returns what `body` returns.
    public func countingInsertedRows<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let box = InsertCounter()
        insertCounter = box
        sqlite3_update_hook(
            rawHandle,
            { context, operation, _, table, _ in
                guard let context, operation == SQLITE_INSERT else { return }
                let counter = Unmanaged<InsertCounter>.fromOpaque(context).takeUnretainedValue()
                // The table's name once per statement, not per row.
                if counter.count == 0, let table { counter.table = String(cString: table) }
                counter.count += 1
            }, Unmanaged.passUnretained(box).toOpaque())
        defer {
            sqlite3_update_hook(rawHandle, nil, nil)
            insertCounter = nil
        }
        return try body()
    }

    /// Rows inserted since `countingInsertedRows` began (or the last reset), or nil outside it.
    public var currentInsertCount: Int? { insertCounter?.count }

    /// The table the first row since the last reset went into.
    public var currentInsertTable: String? { insertCounter?.table }

    /// Starts the count of `countingInsertedRows` again from zero.
    public func resetInsertCount() {
        insertCounter?.count = 0
        insertCounter?.table = nil
    }

    /// Whether the connection is inside a transaction.
    public var isInTransaction: Bool { sqlite3_get_autocommit(rawHandle) == 0 }
}

final class InsertCounter {
    var count = 0
    var table: String?
}

final class ProgressBox {
    let tick: () -> Void
    init(_ tick: @escaping () -> Void) { self.tick = tick }
}
