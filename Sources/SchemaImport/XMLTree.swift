import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML document as a tree of elements with their line and column, read with libxml2
/// through Foundation's `XMLParser` (external entities are not resolved).
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
        func child(named name: String) -> Element? { children.first { $0.name == name } }
        func flag(_ attribute: String) -> Bool { attributes[attribute] == "YES" }
    }

    struct ParseError: Error {
        var line: Int
        var column: Int
        var message: String
    }

    /// The root element, or where and why the text is not well-formed XML.
    static func parse(_ data: Data) -> Result<Element, ParseError> {
        let parser = XMLParser(data: data)
        let builder = Builder()
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let ok = parser.parse()
        guard ok, let root = builder.root else {
            let reason = (parser.parserError as NSError?).map { Self.describe($0) } ?? "the document has no root element"
            return .failure(ParseError(line: max(1, parser.lineNumber), column: max(1, parser.columnNumber), message: reason))
        }
        // libxml2 through Foundation can stop at the end of a truncated file without an error.
        if let open = builder.stack.last {
            return .failure(ParseError(line: max(1, parser.lineNumber), column: max(1, parser.columnNumber),
                                       message: "the file ends inside <\(open.name)> (line \(open.line)); it is truncated"))
        }
        return .success(root)
    }

    private static func describe(_ error: NSError) -> String {
        // libxml2's own message when Foundation passes it on, else the error code.
        if let message = error.userInfo[NSLocalizedDescriptionKey] as? String, !message.isEmpty, !message.hasPrefix("The operation") {
            return message.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return "not well-formed XML (parser error \(error.code))"
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var root: Element?
        var stack: [Element] = []

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            let element = Element(name: elementName, attributes: attributes, line: parser.lineNumber, column: parser.columnNumber)
            if let parent = stack.last { parent.children.append(element) } else if root == nil { root = element }
            stack.append(element)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            _ = stack.popLast()
        }
    }
}
