/// How serious a diagnostic is.
public enum Severity: String, Sendable, Hashable, Comparable, CaseIterable {
    /// A problem that makes the input unusable; a stage that reports one returns no result.
    case error
    /// Something suspicious that does not stop the input from being used.
    case warning
    /// Information only; nothing needs to change.
    case note

    private var rank: Int {
        switch self {
        case .error: 0
        case .warning: 1
        case .note: 2
        }
    }

    /// Orders by seriousness: errors come before warnings, warnings before notes.
    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// A 1-based position in a source file, with the length of the text it points at.
public struct SourceLocation: Sendable, Hashable, Comparable {
    /// The file's path as shown to users.
    public var file: String
    /// The 1-based line number.
    public var line: Int
    /// The 1-based column, counted in characters.
    public var column: Int
    /// How many characters the diagnostic underlines; at least 1.
    public var length: Int

    /// Creates a location; a `length` below 1 is raised to 1.
    ///
    ///     let location = SourceLocation(file: "Schemas/Flights.yaml", line: 12, column: 5, length: 8)
    public init(file: String, line: Int, column: Int, length: Int = 1) {
        self.file = file
        self.line = line
        self.column = column
        self.length = max(1, length)
    }

    /// Orders by file, then line, then column; the length is ignored.
    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}

/// A stable, kebab-case diagnostic code such as `unknown-key`, documented for users. Every
/// module declares its codes one way: an enum of `String` raw values conforming to this.
public protocol DiagnosticCode: RawRepresentable, Sendable, CaseIterable where RawValue == String {}

/// One problem found in the input: a value, never a thrown error, so one run reports them all.
public struct Diagnostic: Sendable, Hashable {
    /// Whether this is an error, a warning or a note.
    public var severity: Severity
    /// A stable, kebab-case identifier such as `unknown-key`; documented for users.
    public var code: String
    /// What is wrong, in one sentence for users.
    public var message: String
    /// Where the problem is, or nil when it has no place in a file.
    public var location: SourceLocation?
    /// Related places, such as where a duplicated name was first declared.
    public var notes: [Note]

    /// A secondary message attached to a diagnostic.
    public struct Note: Sendable, Hashable {
        /// The note's text.
        public var message: String
        /// The place the note points at, or nil for a note without one.
        public var location: SourceLocation?

        /// Creates a note, optionally pointing at a place in a file.
        ///
        ///     let note = Diagnostic.Note("first declared here", at: SourceLocation(file: "Flights.yaml", line: 3, column: 5))
        public init(_ message: String, at location: SourceLocation? = nil) {
            self.message = message
            self.location = location
        }
    }

    /// Creates a diagnostic; the code is stored as its raw string value.
    ///
    ///     let diagnostic = Diagnostic(.error, code: SchemaDiagnosticCode.unknownKey, message: "unknown key 'uniqe'", at: location)
    public init(
        _ severity: Severity, code: some DiagnosticCode, message: String,
        at location: SourceLocation?, notes: [Note] = []
    ) {
        self.severity = severity
        self.code = code.rawValue
        self.message = message
        self.location = location
        self.notes = notes
    }

    /// Whether this diagnostic has the given code.
    public func has(_ code: some DiagnosticCode) -> Bool { self.code == code.rawValue }

    /// Orders diagnostics by file, line and column; those without location come first.
    public static func sourceOrder(_ lhs: Diagnostic, _ rhs: Diagnostic) -> Bool {
        switch (lhs.location, rhs.location) {
        case let (l?, r?): return l < r
        case (nil, _?): return true
        default: return false
        }
    }
}

/// Collects diagnostics while a stage runs.
public struct DiagnosticBag: Sendable {
    /// Everything reported so far, in the order it was reported.
    public private(set) var diagnostics: [Diagnostic] = []

    /// Creates an empty bag.
    ///
    ///     var bag = DiagnosticBag()
    public init() {}

    /// Whether any diagnostic is an error.
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    /// The number of errors reported.
    public var errorCount: Int { diagnostics.count { $0.severity == .error } }
    /// The number of warnings reported.
    public var warningCount: Int { diagnostics.count { $0.severity == .warning } }

    /// Adds one diagnostic.
    public mutating func append(_ diagnostic: Diagnostic) { diagnostics.append(diagnostic) }
    /// Adds several diagnostics, keeping their order.
    public mutating func append(contentsOf other: [Diagnostic]) { diagnostics.append(contentsOf: other) }

    /// Reports an error with the given code and message.
    public mutating func error(
        _ code: some DiagnosticCode, _ message: String, at location: SourceLocation?, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.append(Diagnostic(.error, code: code, message: message, at: location, notes: notes))
    }

    /// Reports a warning with the given code and message.
    public mutating func warning(
        _ code: some DiagnosticCode, _ message: String, at location: SourceLocation?, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.append(Diagnostic(.warning, code: code, message: message, at: location, notes: notes))
    }
}
