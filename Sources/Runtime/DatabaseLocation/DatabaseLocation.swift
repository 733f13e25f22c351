import Foundation

/// Where a database is, from what a user typed after `--database`, in `DATABASE_URL`, in a config
/// file or in `Store(path:)`: a SQLite file, or a PostgreSQL server.
///
/// A value is a SQLite path only when it is a path. Anything that looks like a URL (`scheme:`)
/// or a libpq keyword string (`host=... dbname=...`) is never taken for a file name, so a typo
/// such as `postgress://` is refused instead of creating a file named after the URL, password
/// and all.
///
/// ```swift
/// switch try DatabaseLocation.parse("postgres://app:secret@db/shop") {
/// case .sqlite(let path): open(path)
/// case .postgres(let connection): connect(connection)   // the text as libpq takes it
/// }
/// ```
public enum DatabaseLocation: Sendable, Hashable {
    /// A SQLite file (or `:memory:`), with any `sqlite:` or `file:` prefix removed.
    case sqlite(path: String)
    /// A PostgreSQL server: a `postgres://`/`postgresql://` URL, a libpq keyword string, or ""
    /// for libpq's `PG*` environment variables alone.
    case postgres(connection: String)

    /// The prefixes that name a SQLite file, longest first.
    static let sqlitePrefixes = ["sqlite:///", "sqlite://", "sqlite:", "file://", "file:"]
    static let postgresSchemes = ["postgres", "postgresql"]

    /// The accepted forms, for messages.
    public static let acceptedForms = "a SQLite path (app.sqlite, ./dir/app.sqlite, sqlite:path, file:path), a postgres:// or postgresql:// URL, or a libpq keyword string (host=... dbname=...)"

    /// Classifies `text`; an unknown scheme is refused (with the password masked).
    public static func parse(_ text: String) throws(DatabaseLocationError) -> DatabaseLocation {
        let trimmed = text.trimmingSpaces
        guard !trimmed.isEmpty else { throw .empty }
        // `db1:5432/shop` or `app@db1:5432/shop` is a server typed without its scheme (a
        // hostname would otherwise read as a scheme, an address as a file), never a file.
        if let server = hostAndPort(trimmed) {
            // Masked as the URL it should have been: without a scheme no password is found.
            let suggestion = redacted("postgres://" + server)
            throw .serverWithoutScheme(redacted: String(suggestion.dropFirst("postgres://".count)), suggestion: suggestion)
        }
        if let scheme = scheme(of: trimmed) {
            let lowered = scheme.lowercased()
            if postgresSchemes.contains(lowered) {
                guard trimmed.dropFirst(scheme.count).hasPrefix("://") else {
                    throw .unknownScheme(scheme: scheme, redacted: redacted(trimmed), suggestion: lowered + "://")
                }
                return .postgres(connection: trimmed)
            }
            if lowered == "sqlite" || lowered == "file" {
                let rest = String(trimmed.dropFirst(scheme.count + 1))
                if rest.hasPrefix("///") { return .sqlite(path: String(rest.dropFirst(2))) }
                if rest.hasPrefix("//") { return .sqlite(path: String(rest.dropFirst(2))) }
                return .sqlite(path: rest)
            }
            throw .unknownScheme(scheme: scheme, redacted: redacted(trimmed), suggestion: suggestion(for: lowered))
        }
        if isKeywordString(trimmed) { return .postgres(connection: trimmed) }
        return .sqlite(path: text)
    }

    /// The location as messages may show it: the password masked.
    public var label: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let connection): connection.isEmpty ? "PostgreSQL (from the PG* environment variables)" : Self.redacted(connection)
        }
    }

    /// Whether the location is a PostgreSQL server.
    public var isPostgres: Bool { if case .postgres = self { true } else { false } }

    // MARK: - Recognising the forms

    /// The scheme of `scheme:rest` (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`),
    /// when the text starts with one. Two letters or more, so nothing is read into `C:` alone.
    static func scheme(of text: String) -> String? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let candidate = text[..<colon]
        guard candidate.count >= 2, let first = candidate.unicodeScalars.first, first.isASCIILetter,
            candidate.unicodeScalars.allSatisfy({ $0.isASCIILetter || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) })
        else { return nil }
        return String(candidate)
    }

    /// `text` when its first path component is `[user[:password]@]host:port` (a port of digits;
    /// the host a name, an IPv4 address or a bracketed IPv6 one), as a server address is typed.
    static func hostAndPort(_ text: String) -> String? {
        let first = text.prefix { $0 != "/" && $0 != "?" }
        let authority = first.lastIndex(of: "@").map { first[first.index(after: $0)...] } ?? first
        let hostEnd = authority.hasPrefix("[") ? authority.firstIndex(of: "]").map(authority.index(after:)) : authority.lastIndex(of: ":")
        guard let hostEnd, hostEnd < authority.endIndex, authority[hostEnd] == ":" else { return nil }
        let host = authority[..<hostEnd], port = authority[authority.index(after: hostEnd)...]
        guard !host.isEmpty, !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let hostIsName = host.unicodeScalars.allSatisfy { $0.isASCIILetter || ("0"..."9").contains($0) || "-.".unicodeScalars.contains($0) }
        guard hostIsName || (host.hasPrefix("[") && host.hasSuffix("]")), !(sqlitePrefixes + postgresSchemes).contains(where: { $0.hasPrefix(host.lowercased() + ":") || $0 == host.lowercased() })
        else { return nil }
        return text
    }

    /// `key=value` pairs as libpq reads them: the text starts with a keyword and `=`.
    static func isKeywordString(_ text: String) -> Bool {
        guard let equals = text.firstIndex(of: "=") else { return false }
        let key = text[..<equals].trimmingSpaces
        guard let first = key.unicodeScalars.first, first.isASCIILetter || first == "_" else { return false }
        return key.unicodeScalars.allSatisfy { $0.isASCIILetter || $0 == "_" || ("0"..."9").contains($0) }
    }

    /// The accepted scheme closest to a mistyped one (`postgress`, `postgresq`, `sqllite`).
    static func suggestion(for scheme: String) -> String? {
        let candidates = [("postgres", "postgres://"), ("postgresql", "postgresql://"), ("sqlite", "sqlite:"), ("file", "file:")]
        let scored = candidates.map { (distance(scheme, $0.0), $0.1) }.filter { $0.0 <= 2 }
        return scored.min { $0.0 < $1.0 }?.1
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: - Passwords

    /// `scheme://user:secret@host/db` as `scheme://user:***@host/db`, and the value of every
    /// `password=` and `sslpassword=` (libpq's client key passphrase; in a URL's query or a
    /// keyword string, quoted or not) as `***`.
    public static func redacted(_ text: String) -> String {
        var out = text
        if let range = userInfoPasswordRange(in: out) { out.replaceSubrange(range, with: "***") }
        var searchStart = out.startIndex
        while let found = out.range(of: "password", options: .caseInsensitive, range: searchStart..<out.endIndex) {
            // Only a key: at the start, or after a space, `?` or `&`; then optional spaces and `=`.
            var keyStart = found.lowerBound
            if let ssl = out.index(keyStart, offsetBy: -3, limitedBy: out.startIndex), out[ssl..<keyStart].lowercased() == "ssl" { keyStart = ssl }
            let before = keyStart == out.startIndex ? nil : out[out.index(before: keyStart)]
            var cursor = found.upperBound
            while cursor < out.endIndex, out[cursor] == " " { cursor = out.index(after: cursor) }
            guard before == nil || before == " " || before == "?" || before == "&", cursor < out.endIndex, out[cursor] == "=" else {
                searchStart = found.upperBound
                continue
            }
            cursor = out.index(after: cursor)
            while cursor < out.endIndex, out[cursor] == " " { cursor = out.index(after: cursor) }
            let valueEnd = endOfValue(in: out, from: cursor)
            out.replaceSubrange(cursor..<valueEnd, with: "***")
            searchStart = out.index(cursor, offsetBy: 3, limitedBy: out.endIndex) ?? out.endIndex
        }
        return out
    }

    /// The password a connection text carries, if any: the URL's user info, or `password=`.
    public static func password(in text: String) -> String? {
        if let range = userInfoPasswordRange(in: text) {
            let raw = String(text[range])
            return raw.removingPercentEncodingIfValid
        }
        guard let found = text.range(of: "password", options: .caseInsensitive) else { return nil }
        var cursor = found.upperBound
        while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
        guard cursor < text.endIndex, text[cursor] == "=" else { return nil }
        cursor = text.index(after: cursor)
        while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
        var value = String(text[cursor..<endOfValue(in: text, from: cursor)])
        if value.hasPrefix("'"), value.hasSuffix("'"), value.count >= 2 {
            value = String(value.dropFirst().dropLast()).replacingEscapes
        }
        return value
    }

    /// Where the password of `scheme://user:password@host` is.
    static func userInfoPasswordRange(in text: String) -> Range<String.Index>? {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else { return nil }
        return text.index(after: colon)..<at
    }

    /// The end of a keyword value: a quoted value ends at its closing quote (`\'` escapes one),
    /// a bare one at a space or `&`.
    static func endOfValue(in text: String, from start: String.Index) -> String.Index {
        guard start < text.endIndex, text[start] == "'" else {
            return text[start...].firstIndex(where: { $0 == " " || $0 == "&" }) ?? text.endIndex
        }
        var cursor = text.index(after: start)
        while cursor < text.endIndex {
            if text[cursor] == "\\" {
                cursor = text.index(after: cursor)
                if cursor < text.endIndex { cursor = text.index(after: cursor) }
                continue
            }
            if text[cursor] == "'" { return text.index(after: cursor) }
            cursor = text.index(after: cursor)
        }
        return text.endIndex
    }
}

/// Why a database location was refused. Every message masks passwords.
public enum DatabaseLocationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text was empty or only whitespace.
    case empty
    /// A scheme no supported database uses (`postgress://`), or `postgres:` without `//`:
    /// `redacted` is the text with its password masked, `suggestion` the accepted prefix meant.
    case unknownScheme(scheme: String, redacted: String, suggestion: String?)
    /// `host:port/db` without `postgres://`.
    case serverWithoutScheme(redacted: String, suggestion: String)

    /// A message for users: what was given, password masked, and the forms that are accepted.
    public var description: String {
        switch self {
        case .empty:
            "the database is empty; give \(DatabaseLocation.acceptedForms)"
        case .unknownScheme(let scheme, let redacted, let suggestion):
            "'\(redacted)' is not a database this tool knows: the scheme '\(scheme):' is not supported"
                + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
                + " Give \(DatabaseLocation.acceptedForms); a file whose name contains ':' is written ./\(scheme):..."
        case .serverWithoutScheme(let redacted, let suggestion):
            "'\(redacted)' reads as a server and port, not a file; did you mean '\(suggestion)'? Give \(DatabaseLocation.acceptedForms); a file whose name contains ':' is written ./\(redacted)"
        }
    }
}

extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}

extension StringProtocol {
    var trimmingSpaces: String { String(self).trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension String {
    /// `%40` as `@`; the text as it is when its escapes are not valid.
    var removingPercentEncodingIfValid: String {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return self }
            bytes.append(value)
        }
        return String(bytes: bytes, encoding: .utf8) ?? self
    }

    /// libpq's quoted keyword values: `\'` and `\\` stand for `'` and `\`.
    var replacingEscapes: String {
        var out = ""
        var escaped = false
        for character in self {
            if escaped {
                out.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return out
    }
}
