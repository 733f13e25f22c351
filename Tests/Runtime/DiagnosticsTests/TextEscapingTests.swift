import Foundation
import Testing
import TextEscaping

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Each language's escaping reads back as the text it was given, by that language's own reader
/// where Foundation has one.
@Suite struct TextEscapingTests {
    /// Quotes, backslashes, every C0 control, a combining mark after a quote (one `Character`),
    /// C1 controls, line and paragraph separators, a byte order mark, and text outside the BMP.
    static let hostile: [String] = [
        "plain", "a \"quoted\" \\ back", String((0..<32).map { Character(Unicode.Scalar($0)!) }), "\"\u{301}", "\u{85}\u{9F}\u{2028}\u{2029}\u{FEFF}", "🛫 <&> 'x'",
    ]

    @Test(arguments: hostile)
    func jsonReadsBack(_ text: String) throws {
        let literal = TextEscaping.json(text)
        let decoded = try JSONSerialization.jsonObject(with: Data("[\(literal)]".utf8)) as? [String]
        #expect(decoded == [text], "\(literal)")
    }

    @Test(arguments: hostile)
    func xmlAttributesReadBack(_ text: String) throws {
        // XML 1.0 cannot hold C0 controls other than tab, line feed and carriage return at all.
        let allowed = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 || [0x9, 0xA, 0xD].contains($0.value) }))
        let document = "<e a=\"\(TextEscaping.xml(allowed))\">\(TextEscaping.xml(allowed))</e>"
        let read = AttributeReader()
        let parser = XMLParser(data: Data(document.utf8))
        parser.delegate = read
        #expect(parser.parse(), "\(document)")
        #expect(read.attribute == allowed && read.content == allowed, "\(document)")
    }

    @Test func htmlAndDotEscapeWhatTheirReadersWouldTakeAsMarkup() {
        #expect(TextEscaping.html("<a href='x' title=\"y\">&</a>") == "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;&amp;&lt;/a&gt;")
        #expect(TextEscaping.dot("say \"hi\" \\ \"\u{301}") == "\"say \\\"hi\\\" \\\\ \\\"\u{301}\"")
        #expect(TextEscaping.yaml("a\u{85}\u{2028}\u{FEFF}\"\\") == "\"a\\x85\\u2028\\uFEFF\\\"\\\\\"")
    }

    final class AttributeReader: NSObject, XMLParserDelegate {
        var attribute: String?
        var content = ""
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            attribute = attributes["a"]
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { content += string }
    }
}
