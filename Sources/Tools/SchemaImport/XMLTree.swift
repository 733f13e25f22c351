/// An XML document as a tree of elements, each with the line and column of its `<`.
///
/// A small, strict reader of our own rather than Foundation's `XMLParser`: on Linux that one
/// traps inside libxml2's callbacks on some damaged files (found by `DamagedInputTests`),
/// and a model file must never crash the tool. It reads what model files hold (the XML
/// declaration, comments, processing instructions, a DOCTYPE, elements, attributes, CDATA,
/// the five predefined entities and character references) and refuses everything else with a
/// position. DOCTYPE declarations are skipped, never expanded, so no entity can grow the
/// document.
struct XMLTree {
    final class Element {
        let name: String
        let attributes: [String: String]
        let line: Int
        let column: Int
        var children: [Element] = []

        init(name: String, attributes: [String: String], line: Int, column: Int) {
            self.name = name
            self.attributes = attributes
            self.line = line
            self.column = column
        }

        subscript(_ attribute: String) -> String? { attributes[attribute] }
        func children(named name: String) -> [Element] { children.filter { $0.name == name } }
        func flag(_ attribute: String) -> Bool { attributes[attribute] == "YES" }
    }

    struct ParseError: Error, Equatable {
        var line: Int
        var column: Int
        var message: String
    }

    /// Deeper nesting than this is refused; model files nest five levels.
    static let maximumDepth = 256

    /// The root element, or where and why the bytes are not well-formed XML.
    static func parse(_ data: [UInt8]) -> Result<Element, ParseError> {
        var reader = Reader(bytes: data)
        do {
            return .success(try reader.document())
        } catch {
            return .failure(error)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0
        /// Byte offsets where lines start, for line and column on demand.
        let lineStarts: [Int]

        init(bytes: [UInt8]) {
            self.bytes = bytes
            var starts = [0]
            for (offset, byte) in bytes.enumerated() where byte == 0x0A { starts.append(offset + 1) }
            lineStarts = starts
        }

        /// 1-based line, and column in characters (UTF-8 scalars), of a byte offset.
        func place(_ offset: Int) -> (line: Int, column: Int) {
            var low = 0, high = lineStarts.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
            }
            let start = lineStarts[low]
            let column = bytes[start..<min(offset, bytes.count)].reduce(0) { $0 + (($1 & 0xC0) == 0x80 ? 0 : 1) }
            return (low + 1, column + 1)
        }

        func failure(_ message: String, at offset: Int? = nil) -> ParseError {
            let (line, column) = place(offset ?? position)
            return ParseError(line: line, column: column, message: message)
        }

        func peek(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            return text.withUTF8Buffer { expected in
                for offset in 0..<count where bytes[position + offset] != expected[offset] { return false }
                return true
            }
        }

        static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D }

        mutating func skipWhitespace() {
            while position < bytes.count, Self.isWhitespace(bytes[position]) { position += 1 }
        }

        /// Moves past `terminator`, or fails naming what was left open.
        mutating func skip(past terminator: StaticString, what: String, from start: Int) throws(ParseError) {
            while position + terminator.utf8CodeUnitCount <= bytes.count {
                if peek(terminator) {
                    position += terminator.utf8CodeUnitCount
                    return
                }
                position += 1
            }
            throw failure("the file ends inside \(what); it is truncated", at: start)
        }

        mutating func document() throws(ParseError) -> Element {
            if let invalid = Self.firstInvalidUTF8(bytes) {
                throw failure("not UTF-8: byte 0x\(String(bytes[invalid], radix: 16, uppercase: true)) cannot start or continue a character here", at: invalid)
            }
            if peek("\u{FEFF}") { position += 3 }
            var root: Element?
            var stack: [Element] = []
            while true {
                if stack.isEmpty { skipWhitespace() }
                guard position < bytes.count else { break }
                let start = position
                if peek("<?") {
                    try skip(past: "?>", what: "a processing instruction", from: start)
                } else if peek("<!--") {
                    try skip(past: "-->", what: "a comment", from: start)
                } else if peek("<![CDATA[") {
                    guard !stack.isEmpty else { throw failure("CDATA outside the root element") }
                    try skip(past: "]]>", what: "a CDATA section", from: start)
                } else if peek("<!DOCTYPE") {
                    guard root == nil, stack.isEmpty else { throw failure("a DOCTYPE after the root element started") }
                    try skipDoctype()
                } else if peek("</") {
                    position += 2
                    let name = try self.name()
                    skipWhitespace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ">") else { throw failure("expected '>' to end </\(name)>") }
                    position += 1
                    guard let open = stack.popLast() else { throw failure("</\(name)> closes nothing", at: start) }
                    guard open.name == name else {
                        throw failure("</\(name)> closes <\(open.name)>, opened at line \(open.line)", at: start)
                    }
                } else if bytes[position] == UInt8(ascii: "<") {
                    guard root == nil || !stack.isEmpty else { throw failure("a second root element; a document has one") }
                    let (element, closed) = try startTag()
                    if let parent = stack.last { parent.children.append(element) } else { root = element }
                    if !closed {
                        guard stack.count < XMLTree.maximumDepth else { throw failure("elements nest deeper than \(XMLTree.maximumDepth) levels", at: start) }
                        stack.append(element)
                    }
                } else {
                    guard !stack.isEmpty else { throw failure("text outside the root element") }
                    try text()
                }
            }
            if let open = stack.last {
                throw failure("the file ends inside <\(open.name)> (line \(open.line)); it is truncated")
            }
            guard let root else { throw failure("the document has no root element") }
            return root
        }

        /// `<!DOCTYPE name ... [ internal subset ]>`: skipped, never expanded.
        mutating func skipDoctype() throws(ParseError) {
            let start = position
            var depth = 0
            var quote: UInt8?
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if let open = quote {
                    if byte == open { quote = nil }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
                case UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "]"): depth -= 1
                case UInt8(ascii: ">") where depth <= 0: return
                default: break
                }
            }
            throw failure("the file ends inside the DOCTYPE; it is truncated", at: start)
        }

        static func isNameByte(_ byte: UInt8) -> Bool {
            switch byte {
            case 0...0x20, UInt8(ascii: "/"), UInt8(ascii: ">"), UInt8(ascii: "="), UInt8(ascii: "<"), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "&"): false
            default: true
            }
        }

        mutating func name() throws(ParseError) -> String {
            let start = position
            while position < bytes.count, Self.isNameByte(bytes[position]) { position += 1 }
            guard position > start else {
                throw failure(position < bytes.count ? "expected a name, found '\(String(decoding: [bytes[position]], as: UTF8.self))'" : "the file ends where a name should be")
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        /// `<name a="v" ...>` or `<name ... />`; whether it closed itself.
        mutating func startTag() throws(ParseError) -> (Element, Bool) {
            let start = position
            let (line, column) = place(start)
            position += 1
            let name = try self.name()
            var attributes: [String: String] = [:]
            while true {
                let hadSpace = position < bytes.count && Self.isWhitespace(bytes[position])
                skipWhitespace()
                guard position < bytes.count else { throw failure("the file ends inside <\(name)> (line \(line)); it is truncated", at: start) }
                if bytes[position] == UInt8(ascii: ">") {
                    position += 1
                    return (Element(name: name, attributes: attributes, line: line, column: column), false)
                }
                if peek("/>") {
                    position += 2
                    return (Element(name: name, attributes: attributes, line: line, column: column), true)
                }
                guard hadSpace else { throw failure("expected a space, '>' or '/>' in <\(name)>") }
                let attributeStart = position
                let key = try self.name()
                skipWhitespace()
                guard position < bytes.count else { throw failure("the file ends inside <\(name)> (line \(line)); it is truncated", at: start) }
                guard position < bytes.count, bytes[position] == UInt8(ascii: "=") else { throw failure("expected '=' after attribute '\(key)' of <\(name)>") }
                position += 1
                skipWhitespace()
                guard position < bytes.count else { throw failure("the file ends inside <\(name)> (line \(line)); it is truncated", at: start) }
                guard bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
                    throw failure("expected a quoted value for attribute '\(key)' of <\(name)>")
                }
                let value = try quotedValue()
                guard attributes.updateValue(value, forKey: key) == nil else {
                    throw failure("attribute '\(key)' appears twice in <\(name)>", at: attributeStart)
                }
            }
        }

        mutating func quotedValue() throws(ParseError) -> String {
            let quote = bytes[position]
            let start = position
            position += 1
            var value: [UInt8] = []
            var plainFrom = position
            while position < bytes.count, bytes[position] != quote {
                switch bytes[position] {
                case UInt8(ascii: "<"): throw failure("'<' in an attribute value")
                case UInt8(ascii: "&"):
                    value += bytes[plainFrom..<position]
                    value += try reference()
                    plainFrom = position
                default:
                    position += 1
                }
            }
            guard position < bytes.count else { throw failure("the file ends inside an attribute value; it is truncated", at: start) }
            let text: String
            if value.isEmpty {
                text = String(decoding: bytes[plainFrom..<position], as: UTF8.self)
            } else {
                value += bytes[plainFrom..<position]
                text = String(decoding: value, as: UTF8.self)
            }
            position += 1
            return text
        }

        /// `&amp;` and the other predefined entities, `&#38;`, `&#x26;`.
        mutating func reference() throws(ParseError) -> [UInt8] {
            let start = position
            guard let end = bytes[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                throw failure("'&' that starts no entity reference (write &amp;)")
            }
            let body = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
            position = end + 1
            switch body {
            case "amp": return Array("&".utf8)
            case "lt": return Array("<".utf8)
            case "gt": return Array(">".utf8)
            case "quot": return Array("\"".utf8)
            case "apos": return Array("'".utf8)
            default:
                let number: UInt32? = body.hasPrefix("#x") ? UInt32(body.dropFirst(2), radix: 16) : body.hasPrefix("#") ? UInt32(body.dropFirst()) : nil
                guard let number, number != 0, let scalar = Unicode.Scalar(number) else {
                    throw failure("unknown entity '&\(body);' (only the five predefined ones and character references are read)", at: start)
                }
                return Array(String(Character(scalar)).utf8)
            }
        }

        mutating func text() throws(ParseError) {
            while position < bytes.count, bytes[position] != UInt8(ascii: "<") {
                if bytes[position] == UInt8(ascii: "&") { _ = try reference() } else { position += 1 }
            }
        }

        /// The offset of the first byte that breaks UTF-8, or nil. NUL is refused too: XML has no NUL.
        static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0 { return index }
                if byte < 0x80 {
                    index += 1
                    continue
                }
                let length = byte >= 0xF0 && byte <= 0xF4 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC2 && byte < 0xE0 ? 2 : 0
                guard length > 0, index + length <= bytes.count else { return index }
                for offset in 1..<length where bytes[index + offset] & 0xC0 != 0x80 { return index + offset }
                let scalar = String(decoding: bytes[index..<index + length], as: UTF8.self)
                if scalar.unicodeScalars.contains(where: { $0 == "\u{FFFD}" }) { return index }
                index += length
            }
            return nil
        }
    }
}
