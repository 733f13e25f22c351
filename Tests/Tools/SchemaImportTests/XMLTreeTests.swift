import Testing

@testable import SchemaImport

/// The XML reader behind `import coredata`: what model files hold is read, anything
/// malformed is refused with its line and column, and nothing expands.
@Suite struct XMLTreeTests {
    func parse(_ text: String) -> Result<XMLTree.Element, XMLTree.ParseError> { XMLTree.parse(Array(text.utf8)) }

    func error(_ text: String) -> String {
        switch parse(text) {
        case .success: "parsed"
        case .failure(let error): "\(error.line):\(error.column): \(error.message)"
        }
    }

    @Test func readsElementsAttributesReferencesAndPositions() throws {
        let root = try parse(
            """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- a comment -->
            <!DOCTYPE model>
            <model a='1'>
                <entity name="Caf&#xE9; &amp; &quot;Bar&quot;" note="&lt;&gt;&apos;&#233;"><![CDATA[ <not> an element ]]>text &amp; more</entity>
                <ñame x="ü"/>
            </model>
            """
        ).get()
        #expect(root.name == "model" && root["a"] == "1" && root.line == 4 && root.column == 1)
        let entity = try #require(root.children.first)
        #expect(entity["name"] == "Café & \"Bar\"" && entity["note"] == "<>'é")
        #expect(entity.line == 5 && entity.column == 5)
        #expect(root.children.last.map { "\($0.name) \($0["x"] ?? "") \($0.line):\($0.column)" } == "ñame ü 6:5")
    }

    @Test func malformedDocumentsAreRefusedWithAPlace() {
        #expect(error("<model>\n  <entity>\n</model>") == "3:1: </model> closes <entity>, opened at line 2")
        #expect(error("<model><entity name=\"a\" name=\"b\"/></model>") == "1:25: attribute 'name' appears twice in <entity>")
        #expect(error("<model>\n<entity name=\"a") == "2:14: the file ends inside an attribute value; it is truncated")
        #expect(error("<model></model><model/>") == "1:16: a second root element; a document has one")
        #expect(error("<model a=\"x<y\"/>") == "1:12: '<' in an attribute value")
        #expect(error("<model a=\"&bogus;\"/>") == "1:11: unknown entity '&bogus;' (only the five predefined ones and character references are read)")
        #expect(error("<model>\u{0}</model>") == "1:8: not UTF-8: byte 0x0 cannot start or continue a character here")
        #expect(error(String(decoding: [0x3C, 0x6D, 0x3E, 0xFF, 0x3C, 0x2F, 0x6D, 0x3E], as: UTF8.self)).contains("not UTF-8"))
        #expect(XMLTree.parse([0x3C, 0x6D, 0x3E, 0xC3, 0x28, 0x3C, 0x2F, 0x6D, 0x3E]).failureMessage?.contains("not UTF-8") == true)
        #expect(error("") == "1:1: the document has no root element")
        #expect(error("just text") == "1:1: text outside the root element")
        #expect(error(String(repeating: "<a>", count: 300)) == "1:769: elements nest deeper than 256 levels")
    }

    /// A DOCTYPE's entities are skipped, never expanded: a "billion laughs" file is refused at
    /// its first use of one.
    @Test func declaredEntitiesNeverExpand() {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE lolz [
              <!ENTITY lol "lol">
              <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
              <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
            ]>
            <model name="&lol3;"/>
            """
        #expect(error(laughs) == "7:14: unknown entity '&lol3;' (only the five predefined ones and character references are read)")
    }
}

extension Result where Failure == XMLTree.ParseError {
    var failureMessage: String? { if case .failure(let error) = self { error.message } else { nil } }
}
