/// How serious a diagnostic is.
public enum Severity: String, Sendable, Hashable, Comparable, CaseIterable {
    case error
    case warning
    case note

    private var rank: Int {
        switch self {
        case .error: 0
        case .warning: 1
        case .note: 2
        }
    }

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// A 1-based position in a source file, with the length of the text it points at.
public struct SourceLocation: Sendable, Hashable, Comparable {
    public var file: String
    public var line: Int
    public var column: Int
    /// How many characters the diagnostic underlines; at least 1.
    public var length: Int

    public init(file: String, line: Int, column: Int, length: Int = 1) {
        self.file = file
        self.line = line
        self.column = column
        self.length = max(1, length)
    }

    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}

/// A stable, kebab-case diagnostic code such as `unknown-key`, documented for users. Every
/// module declares its codes one way: an enum of `String` raw values conforming to this.
public protocol DiagnosticCode: RawRepresentable, Sendable, CaseIterable where RawValue == String {}

/// One problem found in the input: a value, never a thrown error, so one run reports them all.
public struct Diagnostic: Sendable, Hashable {
    public var severity: Severity
    /// A stable, kebab-case identifier such as `unknown-key`; documented for users.
    public var code: String
    public var message: String
    public var location: SourceLocation?
    /// Related places, such as where a duplicated name was first declared.
    public var notes: [Note]

    /// A secondary message attached to a diagnostic.
    public struct Note: Sendable, Hashable {
        public var message: String
        public var location: SourceLocation?

        public init(_ message: String, at location: SourceLocation? = nil) {
            self.message = message
            self.location = location
        }
    }

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
    public private(set) var diagnostics: [Diagnostic] = []

    public init() {}

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    public var errorCount: Int { diagnostics.count { $0.severity == .error } }
    public var warningCount: Int { diagnostics.count { $0.severity == .warning } }

    public mutating func append(_ diagnostic: Diagnostic) { diagnostics.append(diagnostic) }
    public mutating func append(contentsOf other: [Diagnostic]) { diagnostics.append(contentsOf: other) }

    public mutating func error(
        _ code: some DiagnosticCode, _ message: String, at location: SourceLocation?, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.append(Diagnostic(.error, code: code, message: message, at: location, notes: notes))
    }

    public mutating func warning(
        _ code: some DiagnosticCode, _ message: String, at location: SourceLocation?, notes: [Diagnostic.Note] = []
    ) {
        diagnostics.append(Diagnostic(.warning, code: code, message: message, at: location, notes: notes))
    }
}
