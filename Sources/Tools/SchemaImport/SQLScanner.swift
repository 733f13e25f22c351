import Foundation

/// Finds clauses in a stored CREATE TABLE statement that the catalogue pragmas do not report:
/// CHECK constraints, AUTOINCREMENT, COLLATE and DEFERRABLE. A tokenizer, not a parser: it
/// skips strings, quoted names and comments, and matches parentheses.
enum SQLScanner {
    struct Token: Equatable {
        enum Kind: Equatable { case word, string, quotedName, number, symbol }
        var kind: Kind
        var text: String
        /// Byte offsets into the statement.
        var start: Int
        var end: Int
    }

    static func tokens(_ sql: String) -> [Token] {
        let bytes = Array(sql.utf8)
        var tokens: [Token] = []
        var index = 0
        func isWordByte(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x24 || byte >= 0x80
        }
        func text(_ start: Int, _ end: Int) -> String { String(decoding: bytes[start..<end], as: UTF8.self) }
        while index < bytes.count {
            let byte = bytes[index]
            let start = index
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C:
                index += 1
            case 0x2D where index + 1 < bytes.count && bytes[index + 1] == 0x2D:  // -- comment
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            case 0x2F where index + 1 < bytes.count && bytes[index + 1] == 0x2A:  // /* comment */
                index += 2
                while index + 1 < bytes.count, !(bytes[index] == 0x2A && bytes[index + 1] == 0x2F) { index += 1 }
                index = min(bytes.count, index + 2)
            case 0x27, 0x22, 0x60, 0x5B:  // 'text', "name", `name`, [name]
                let close: UInt8 = byte == 0x5B ? 0x5D : byte
                index += 1
                while index < bytes.count {
                    if bytes[index] == close {
                        // A doubled quote is an escaped quote (not inside [...]).
                        if close != 0x5D, index + 1 < bytes.count, bytes[index + 1] == close {
                            index += 2
                            continue
                        }
                        break
                    }
                    index += 1
                }
                index = min(bytes.count, index + 1)
                tokens.append(Token(kind: byte == 0x27 ? .string : .quotedName, text: text(start, index), start: start, end: index))
            default:
                if isWordByte(byte) {
                    while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
                    let word = text(start, index)
                    tokens.append(Token(kind: word.first!.isNumber ? .number : .word, text: word, start: start, end: index))
                } else {
                    index += 1
                    tokens.append(Token(kind: .symbol, text: text(start, index), start: start, end: index))
                }
            }
        }
        return tokens
    }

    /// Each `CHECK (...)` clause, as written.
    static func checkClauses(_ sql: String) -> [String] {
        let tokens = tokens(sql)
        let bytes = Array(sql.utf8)
        var clauses: [String] = []
        var index = 0
        while index < tokens.count {
            defer { index += 1 }
            guard tokens[index].kind == .word, tokens[index].text.uppercased() == "CHECK",
                index + 1 < tokens.count, tokens[index + 1].text == "("
            else { continue }
            var depth = 0
            var end = index + 1
            while end < tokens.count {
                if tokens[end].text == "(" { depth += 1 }
                if tokens[end].text == ")" {
                    depth -= 1
                    if depth == 0 { break }
                }
                end += 1
            }
            let last = min(end, tokens.count - 1)
            // Include a `CONSTRAINT name` written before it.
            var first = index
            if index >= 2, tokens[index - 2].text.uppercased() == "CONSTRAINT" { first = index - 2 }
            clauses.append(String(decoding: bytes[tokens[first].start..<tokens[last].end], as: UTF8.self))
            index = last
        }
        return clauses
    }

    /// Whether a keyword appears outside strings, names and comments.
    static func contains(keyword: String, in sql: String) -> Bool {
        tokens(sql).contains { $0.kind == .word && $0.text.uppercased() == keyword }
    }

    /// `COLLATE name` clauses in the column definitions, by column, for columns named in `columns`.
    static func collations(_ sql: String, columns: [String]) -> [(column: String, collation: String)] {
        let tokens = tokens(sql)
        var result: [(String, String)] = []
        // Column definitions start after `(` or `,` at depth 1.
        var depth = 0
        var currentColumn: String?
        var expectName = false
        for (index, token) in tokens.enumerated() {
            if token.text == "(" {
                depth += 1
                if depth == 1 { expectName = true }
                continue
            }
            if token.text == ")" {
                depth -= 1
                continue
            }
            if depth == 1, token.text == "," {
                expectName = true
                continue
            }
            if depth == 1, expectName {
                let name = unquoted(token)
                currentColumn = columns.first { $0.lowercased() == name.lowercased() }
                expectName = false
                continue
            }
            if depth == 1, token.kind == .word, token.text.uppercased() == "COLLATE", let column = currentColumn, index + 1 < tokens.count {
                result.append((column, unquoted(tokens[index + 1])))
            }
        }
        return result
    }

    static func unquoted(_ token: Token) -> String {
        guard token.kind == .quotedName || token.kind == .string, token.text.count >= 2 else { return token.text }
        let quote = token.text.first!
        let inner = String(token.text.dropFirst().dropLast())
        return quote == "[" ? inner : inner.replacingOccurrences(of: String(repeating: quote, count: 2), with: String(quote))
    }
}
