import Testing

@testable import Mustache

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Cases written from the rules of the Mustache specification's core modules (interpolation,
/// sections, inverted sections, comments, partials, set delimiters) and of its inheritance
/// module, one rule per case.
struct SpecCase: CustomTestStringConvertible, Sendable {
    let name: String
    let template: String
    let data: MustacheValue
    let partials: [String: String]
    let expected: String
    var testDescription: String { name }

    init(_ name: String, _ template: String, _ data: MustacheValue = [:], partials: [String: String] = [:], _ expected: String) {
        self.name = name
        self.template = template
        self.data = data
        self.partials = partials
        self.expected = expected
    }

    init(_ name: String, _ template: String, _ expected: String) {
        self.init(name, template, [:], partials: [:], expected)
    }

    init(_ name: String, _ template: String, partials: [String: String], _ expected: String) {
        self.init(name, template, [:], partials: partials, expected)
    }

    func render() throws -> String {
        var parsed: [String: Template] = [:]
        for (name, source) in partials { parsed[name] = try Template(name: name, source: source) }
        return try Template(name: "test", source: template).render(data, partials: parsed)
    }
}

@Suite struct InterpolationSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("text without tags passes through", "Just text\n", "Just text\n"),
        SpecCase("basic interpolation", "Hi {{who}}!", ["who": "there"], "Hi there!"),
        SpecCase("double mustache escapes HTML", "{{x}}", ["x": "<a & \"b\">"], "&lt;a &amp; &quot;b&quot;&gt;"),
        SpecCase("triple mustache does not escape", "{{{x}}}", ["x": "<a & \"b\">"], "<a & \"b\">"),
        SpecCase("ampersand does not escape", "{{&x}}", ["x": "<a>"], "<a>"),
        SpecCase("integers print without a fraction", "{{n}} {{{n}}} {{&n}}", ["n": 85], "85 85 85"),
        SpecCase("decimals keep their fraction", "{{n}}", ["n": .number(1.21)], "1.21"),
        SpecCase("null prints nothing", "[{{n}}][{{{n}}}][{{&n}}]", ["n": nil], "[][][]"),
        SpecCase("a missing key prints nothing", "[{{missing}}]", "[]"),
        SpecCase("dotted names descend", "{{a.b.c}} {{{a.b.c}}} {{&a.b.c}}", ["a": ["b": ["c": "deep"]]], "deep deep deep"),
        SpecCase("dotted names of any depth", "{{a.b.c.d.e}}", ["a": ["b": ["c": ["d": ["e": "five"]]]]], "five"),
        SpecCase("a broken chain prints nothing", "[{{a.b.c}}]", ["a": [:]], "[]"),
        SpecCase("a broken chain does not resolve further up", "[{{a.b.c}}]", ["a": ["b": [:]], "c": "no"], "[]"),
        SpecCase("the first part resolves up the stack", "{{#a}}{{b.c}}{{/a}}", ["a": ["x": 1], "b": ["c": "found"]], "found"),
        SpecCase("the closest first part wins even if the rest misses", "{{#a}}[{{b.c}}]{{/a}}", ["a": ["b": [:]], "b": ["c": "no"]], "[]"),
        SpecCase("the implicit iterator prints the current value", "{{.}}", "<x>", "&lt;x&gt;"),
        SpecCase("the implicit iterator in triple form", "{{{.}}}", "<x>", "<x>"),
        SpecCase("interpolation keeps surrounding whitespace", "| {{x}} |", ["x": "y"], "| y |"),
        SpecCase("a standalone interpolation keeps its line", "  {{x}}\n", ["x": "y"], "  y\n"),
        SpecCase("padding inside tags is ignored", "|{{ x }}|{{{ x }}}|{{& x }}|", ["x": "y"], "|y|y|y|"),
        SpecCase("booleans print as words", "{{t}} {{f}}", ["t": true, "f": false], "true false"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct SectionSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("true renders the content", "{{#b}}yes{{/b}}", ["b": true], "yes"),
        SpecCase("false skips the content", "[{{#b}}yes{{/b}}]", ["b": false], "[]"),
        SpecCase("null skips the content", "[{{#b}}yes{{/b}}]", ["b": nil], "[]"),
        SpecCase("a missing key skips the content", "[{{#b}}yes{{/b}}]", "[]"),
        SpecCase("an object becomes the context", "{{#o}}{{name}}{{/o}}", ["o": ["name": "Joe"]], "Joe"),
        SpecCase("outer contexts stay visible", "{{#a}}{{#b}}{{x}}-{{y}}{{/b}}{{/a}}", ["a": ["x": "ax"], "b": ["y": "by"]], "ax-by"),
        SpecCase("a list renders once per item", "{{#l}}{{n}},{{/l}}", ["l": [["n": 1], ["n": 2], ["n": 3]]], "1,2,3,"),
        SpecCase("an empty list is falsey", "[{{#l}}x{{/l}}]", ["l": []], "[]"),
        SpecCase("strings and numbers are truthy and become the context", "{{#s}}<{{.}}>{{/s}}{{#n}}<{{.}}>{{/n}}", ["s": "str", "n": 0], "<str><0>"),
        SpecCase("an empty string is truthy", "{{#s}}x{{/s}}", ["s": ""], "x"),
        SpecCase("the implicit iterator over strings", "{{#l}}({{.}}){{/l}}", ["l": ["a", "b"]], "(a)(b)"),
        SpecCase("the implicit iterator over numbers", "{{#l}}({{.}}){{/l}}", ["l": [1, .number(2.5)]], "(1)(2.5)"),
        SpecCase("the implicit iterator over nested lists", "{{#l}}({{#.}}{{.}}{{/.}}){{/l}}", ["l": [["a", "b"], ["c"]]], "(ab)(c)"),
        SpecCase("a section may repeat", "{{#b}}1{{/b}}-{{#b}}2{{/b}}", ["b": true], "1-2"),
        SpecCase("nested truthy sections", "{{#a}}A{{#b}}B{{/b}}{{/a}}", ["a": true, "b": true], "AB"),
        SpecCase("nested falsey sections", "[{{#a}}A{{#b}}B{{/b}}{{/a}}]", ["a": true, "b": false], "[A]"),
        SpecCase("dotted names in sections", "{{#a.b.c}}yes{{/a.b.c}}", ["a": ["b": ["c": true]]], "yes"),
        SpecCase("dotted names with a broken chain are falsey", "[{{#a.b.c}}yes{{/a.b.c}}]", ["a": [:]], "[]"),
        SpecCase("surrounding whitespace stays", " | {{#b}}\t|\t{{/b}} | \n", ["b": true], " | \t|\t | \n"),
        SpecCase("internal whitespace stays", " | {{#b}} {{! c }} {{/b}} | \n", ["b": true], " |    | \n"),
        SpecCase("inline indented sections keep their indentation", " {{#b}}YES{{/b}}\n {{#b}}GOOD{{/b}}\n", ["b": true], " YES\n GOOD\n"),
        SpecCase("standalone section lines disappear", "|\n{{#b}}\n|\n{{/b}}\n|\n", ["b": true], "|\n|\n|\n"),
        SpecCase("indented standalone lines disappear", "|\n  {{#b}}\n|\n  {{/b}}\n|\n", ["b": true], "|\n|\n|\n"),
        SpecCase("standalone lines with CRLF", "|\r\n{{#b}}\r\n{{/b}}\r\n|", ["b": true], "|\r\n|"),
        SpecCase("standalone at the start of the template", "  {{#b}}\n#{{/b}}\n/", ["b": true], "#\n/"),
        SpecCase("standalone at the end of the template", "#{{#b}}\n/\n  {{/b}}", ["b": true], "#\n/\n"),
        SpecCase("padding inside section tags", "|{{# b }}={{/ b }}|", ["b": true], "|=|"),
        SpecCase("a list of objects sees the outer context", "{{#l}}{{n}}{{sep}}{{/l}}", ["l": [["n": 1], ["n": 2]], "sep": ";"], "1;2;"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct InvertedSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("false renders the content", "{{^b}}no{{/b}}", ["b": false], "no"),
        SpecCase("true skips the content", "[{{^b}}no{{/b}}]", ["b": true], "[]"),
        SpecCase("null renders the content", "{{^b}}no{{/b}}", ["b": nil], "no"),
        SpecCase("a missing key renders the content", "{{^b}}no{{/b}}", "no"),
        SpecCase("an object skips the content", "[{{^o}}no{{/o}}]", ["o": ["x": 1]], "[]"),
        SpecCase("a list skips the content", "[{{^l}}no{{/l}}]", ["l": [1]], "[]"),
        SpecCase("an empty list renders the content", "{{^l}}none{{/l}}", ["l": []], "none"),
        SpecCase("the context does not change", "{{^b}}{{x}}{{/b}}", ["b": false, "x": "kept"], "kept"),
        SpecCase("dotted names", "{{^a.b}}no{{/a.b}}", ["a": ["b": false]], "no"),
        SpecCase("dotted names with a broken chain are falsey", "{{^a.b.c}}no{{/a.b.c}}", ["a": [:]], "no"),
        SpecCase("standalone inverted lines disappear", "|\n{{^b}}\n|\n{{/b}}\n|\n", ["b": false], "|\n|\n|\n"),
        SpecCase("padding inside inverted tags", "|{{^ b }}={{/ b }}|", ["b": false], "|=|"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct CommentSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("inline comments vanish", "12345{{! note }}67890", "1234567890"),
        SpecCase("multiline comments vanish", "12345{{!\n  line\n  line\n}}67890", "1234567890"),
        SpecCase("standalone comment lines disappear", "A\n{{! note }}\nB\n", "A\nB\n"),
        SpecCase("indented standalone comments disappear", "A\n   {{! note }}\nB\n", "A\nB\n"),
        SpecCase("standalone comments with CRLF", "|\r\n{{! x }}\r\n|", "|\r\n|"),
        SpecCase("standalone comment without a previous line", "  {{! x }}\n!", "!"),
        SpecCase("standalone comment without a following newline", "!\n  {{! x }}", "!\n"),
        SpecCase("multiline standalone comments disappear", "A\n{{!\nnote\n}}\nB\n", "A\nB\n"),
        SpecCase("inline comments keep surrounding text", "  12 {{! 34 }}\n", "  12 \n"),
        SpecCase("comments may contain opening delimiters", "a{{! {{x }}b", "ab"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct PartialSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("a partial renders in place", "[{{>p}}]", partials: ["p": "inner"], "[inner]"),
        SpecCase("a missing partial renders nothing", "[{{>missing}}]", "[]"),
        SpecCase("a partial sees the context", "[{{>p}}]", ["x": "ctx"], partials: ["p": "*{{x}}*"], "[*ctx*]"),
        SpecCase(
            "partials may recurse through data", "{{>node}}",
            ["content": "X", "nodes": [["content": "Y", "nodes": []]]],
            partials: ["node": "{{content}}<{{#nodes}}{{>node}}{{/nodes}}>"], "X<Y<>>"),
        SpecCase("partials may nest", "{{>outer}}", ["a": "A", "b": "B"], partials: ["outer": "*{{a}} {{>inner}}*", "inner": "!{{b}}!"], "*A !B!*"),
        SpecCase("an inline partial keeps surrounding whitespace", "| {{>p}} |", partials: ["p": "\t|\t"], "| \t|\t |"),
        SpecCase("an inline partial is not indented", "  {{x}} {{>p}}\n", ["x": "<"], partials: ["p": ">\n>"], "  &lt; >\n>\n"),
        SpecCase("standalone partial with CRLF", "|\r\n{{>p}}\r\n|", partials: ["p": ">"], "|\r\n>|"),
        SpecCase("standalone partial without a previous line", "  {{>p}}\n>", partials: ["p": ">\n>"], "  >\n  >>"),
        SpecCase("standalone partial without a following newline", ">\n  {{>p}}", partials: ["p": ">\n>"], ">\n  >\n  >"),
        SpecCase(
            "a standalone partial indents every template line but not data", "\\\n {{>p}}\n/\n", ["content": "<\n->"],
            partials: ["p": "|\n{{{content}}}\n|\n"], "\\\n |\n <\n->\n |\n/\n"),
        SpecCase("padding inside partial tags", "|{{> p }}|", partials: ["p": "[]"], "|[]|"),
        SpecCase("partials start with the default delimiters", "{{=| |=}}|>p|", ["x": "v"], partials: ["p": "{{x}}"], "v"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct DelimiterSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("a new pair takes over", "{{=<% %>=}}(<%x%>)", ["x": "v"], "(v)"),
        SpecCase("delimiters may be special characters", "({{=[ ]=}}[x])", ["x": "v"], "(v)"),
        SpecCase(
            "sections use the new delimiters", "[\n{{#s}}\n{{x}}\n{{=| |=}}\n|x|\n|/s|\n{{x}}\n]\n", ["s": true, "x": "v"],
            "[\nv\nv\n{{x}}\n]\n"),
        SpecCase("inverted sections use the new delimiters", "{{=| |=}}|^b|no|/b|", ["b": false], "no"),
        SpecCase("delimiters do not leak into partials", "{{=| |=}}|>p|", ["x": "v"], partials: ["p": "[{{x}}]"], "[v]"),
        SpecCase("delimiters changed in a partial do not leak out", "[{{>p}}][{{x}}]", ["x": "v"], partials: ["p": "{{=| |=}}|x|"], "[v][v]"),
        SpecCase("surrounding whitespace stays", "| {{=@ @=}} |", "|  |"),
        SpecCase("outlying whitespace inline stays", " | {{=@ @=}}\n", " | \n"),
        SpecCase("a standalone delimiter tag disappears", "Begin.\n{{=@ @=}}\nEnd.\n", "Begin.\nEnd.\n"),
        SpecCase("an indented standalone delimiter tag disappears", "Begin.\n  {{=@ @=}}\nEnd.\n", "Begin.\nEnd.\n"),
        SpecCase("standalone delimiter tag with CRLF", "|\r\n{{= @ @ =}}\r\n|", "|\r\n|"),
        SpecCase("padding inside a delimiter tag", "|{{= @   @ =}}|", "||"),
        SpecCase("triple mustache and ampersand after a change", "{{=<% %>=}}<%{x}%> <%&x%>", ["x": "<"], "< <"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct InheritanceSpecTests {
    static let cases: [SpecCase] = [
        SpecCase("a block renders its default", "{{$title}}Default{{/title}}", "Default"),
        SpecCase("default content renders tags", "{{$b}}x {{y}} {{#s}}{{z}}{{/s}}{{/b}}", ["y": "Y", "s": ["z": "Z"]], "x Y Z"),
        SpecCase("a parent without overrides is a partial", "{{<p}}{{/p}}|{{>p}}", partials: ["p": "{{$b}}dflt{{/b}}"], "dflt|dflt"),
        SpecCase(
            "an override replaces the default", "{{<super}}{{$title}}mine{{/title}}{{/super}}",
            partials: ["super": "<{{$title}}theirs{{/title}}>"], "<mine>"),
        SpecCase("data does not override a block", "{{<p}}{{$v}}template{{/v}}{{/p}}", ["v": "data"], partials: ["p": "{{$v}}parent{{/v}}"], "template"),
        SpecCase("only overridden blocks change", "{{<p}}{{$b}}B!{{/b}}{{/p}}", partials: ["p": "{{$a}}A{{/a}},{{$b}}B{{/b}}"], "A,B!"),
        SpecCase(
            "two uses of a parent with different overrides", "{{<p}}{{$s}}1{{/s}}{{/p}} {{<p}}{{$s}}2{{/s}}{{/p}}",
            partials: ["p": "|{{$s}}.{{/s}}|"], "|1| |2|"),
        SpecCase("text inside a parent is ignored", "{{<p}} ignored {{$b}}kept{{/b}} ignored {{/p}}", partials: ["p": "{{$b}}d{{/b}}"], "kept"),
        SpecCase(
            "the outermost override wins across levels", "{{<parent}}{{$a}}c{{/a}}{{/parent}}",
            partials: ["parent": "{{<older}}{{$a}}p{{/a}}{{/older}}", "older": "{{<grand}}{{$a}}o{{/a}}{{/grand}}", "grand": "{{$a}}g{{/a}}"], "c"),
        SpecCase(
            "an intermediate parent's override applies without a child override", "{{<parent}}{{/parent}}",
            partials: ["parent": "{{<older}}{{$a}}p{{/a}}{{/older}}", "older": "{{<grand}}{{$a}}o{{/a}}{{/grand}}", "grand": "{{$a}}g{{/a}}"], "p"),
        SpecCase(
            "an override is rendered in the parent's context", "{{<p}}{{$b}}I say {{fruit}}.{{/b}}{{/p}}",
            ["fruit": "apples", "nested": ["fruit": "bananas"]], partials: ["p": "{{#nested}}{{$b}}You say {{fruit}}.{{/b}}{{/nested}}"], "I say bananas."),
        SpecCase("a standalone parent indents its lines", "Hi,\n  {{<p}}\n  {{/p}}\n", partials: ["p": "one\ntwo\n"], "Hi,\n  one\n  two\n"),
        SpecCase(
            "an override takes the indentation of the block it replaces", "{{<p}}{{$n}}hammer time{{/n}}{{/p}}",
            partials: ["p": "stop:\n  {{$n}}collaborate{{/n}}\n"], "stop:\n  hammer time\n"),
        SpecCase(
            "a standalone override loses its own indentation and takes the block's", "{{<p}}\n{{$block}}\n    one\n    two\n{{/block}}\n{{/p}}\n",
            partials: ["p": "Hi,\n  {{$block}}\n  {{/block}}\n"], "Hi,\n  one\n  two\n"),
        SpecCase(
            "intrinsic indentation comes from the default content", "{{<p}}\n{{$block}}\none\ntwo\n{{/block}}\n{{/p}}\n",
            partials: ["p": "Hi,\n{{$block}}\n  default\n{{/block}}\n"], "Hi,\n  one\n  two\n"),
        SpecCase(
            "text after a tag inside an override keeps its spaces", "{{<p}}\n{{$b}}\n    x {{y}} z\n{{/b}}\n{{/p}}\n", ["y": "Y"],
            partials: ["p": "  {{$b}}\n  {{/b}}\n"], "  x Y z\n"),
        SpecCase(
            "overrides pass through recursion", "{{<parent}}{{$foo}}override{{/foo}}{{/parent}}",
            partials: [
                "parent": "{{$foo}}default{{/foo}} {{$bar}}{{<parent2}}{{/parent2}}{{/bar}}",
                "parent2": "{{$foo}}p2{{/foo}} {{<parent}}{{$bar}}stop{{/bar}}{{/parent}}",
            ], "override override override stop"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

/// The standalone and re-indentation rules the inheritance module gained in specification v1.4:
/// tag pairs that stand alone together, and block content that is de-indented where it is written
/// and re-indented where it is expanded.
@Suite struct InheritanceIndentationTests {
    static let cases: [SpecCase] = [
        SpecCase(
            "a parent pair on one line is standalone and indents the parent", "A\n    {{<box}}{{/box}}\nZ\n",
            partials: ["box": "top\nbottom\n"], "A\n    top\n    bottom\nZ\n"),
        SpecCase("a standalone parent pair loses its line break like a partial", "{{<box}}{{/box}}\n", partials: ["box": "[{{$b}}x{{/b}}]"], "[x]"),
        SpecCase(
            "a parent pair spanning lines is standalone when it begins and ends lines", "{{<box}}{{$b}}y{{/b}}\n{{/box}}\nZ",
            partials: ["box": "<{{$b}}x{{/b}}>"], "<y>Z"),
        SpecCase("a parent pair after text is not standalone", "A {{<box}}{{/box}}\n", partials: ["box": "x"], "A x\n"),
        SpecCase("a block pair on one line keeps its line break around the default", "{{$b}}plain{{/b}}\nnext\n", "plain\nnext\n"),
        SpecCase(
            "a block pair on one line indents a multi-line override", "{{<f}}{{$body}}\nalpha\nbeta{{/body}}\n{{/f}}\n",
            partials: ["f": "begin\n   {{$body}}{{/body}}\nend\n"], "begin\n   alpha\n   beta\nend\n"),
        SpecCase(
            "an empty override removes the block's standalone line", "{{<f}}{{$body}}{{/body}}{{/f}}",
            partials: ["f": "begin\n  {{$body}}{{/body}}\nend\n"], "begin\nend\n"),
        SpecCase("a line break after an argument's open tag is not content", "{{<f}}{{$t}}\nnew{{/t}}{{/f}}", partials: ["f": "({{$t}}old{{/t}})"], "(new)"),
        SpecCase(
            "an argument loses the indentation of its first line", "{{<f}}{{$t}}\n      a\n        b\n{{/t}}{{/f}}",
            partials: ["f": "x:\n  {{$t}}\n  {{/t}}\n"], "x:\n  a\n    b\n"),
        SpecCase(
            "an argument's indentation comes from its first non-blank line", "{{<f}}{{$t}}\n\n    a\n{{/t}}{{/f}}",
            partials: ["f": "  {{$t}}\n  {{/t}}\n"], "\n  a\n"),
        SpecCase(
            "whitespace before an argument's close tag is not content", "{{<f}}{{$t}}\n  a\n  {{/t}}{{/f}}",
            partials: ["f": "[{{$t}}{{/t}}]"], "[a\n]"),
        SpecCase(
            "a replaced block takes the indentation of its default content", "{{<f}}{{$t}}\nq\n{{/t}}{{/f}}",
            partials: ["f": "{{$t}}\n      d\n{{/t}}"], "      q\n"),
        SpecCase("default content keeps its own indentation", "{{<f}}{{/f}}", partials: ["f": "  {{$t}}\n    d\n  {{/t}}\n"], "    d\n"),
        SpecCase(
            "a block nested in an argument is indented relative to it", "{{<mid}}{{$inner}}\nthree\n{{/inner}}{{/mid}}",
            partials: [
                "mid": "{{<base}}{{$outer}}\n    one\n    {{$inner}}\n        two\n    {{/inner}}\n{{/outer}}{{/base}}\n",
                "base": "{{$outer}}-{{/outer}}",
            ], "one\n    three\n"),
        SpecCase("a restored line break keeps CRLF", "{{<f}}{{$t}}v{{/t}}{{/f}}", partials: ["f": "{{$t}}d{{/t}}\r\nnext"], "v\r\nnext"),
        SpecCase(
            "tags on a standalone pair's line do not stand alone", "{{<f}}{{$t}}\nv\n{{/t}}{{/f}}\n{{#s}}\nin\n{{/s}}\n",
            ["s": true], partials: ["f": "{{$t}}{{/t}}"], "v\nin\n"),
    ]

    @Test(arguments: cases) func rule(_ c: SpecCase) throws { #expect(try c.render() == c.expected) }
}

@Suite struct TemplateErrorTests {
    func parseError(_ source: String) -> MustacheError? {
        do {
            _ = try Template(name: "t.mustache", source: source)
            return nil
        } catch {
            return error
        }
    }

    @Test func unclosedSectionNamesItsOpeningTag() {
        #expect(parseError("line\n  {{#items}}\n{{name}}\n")?.description == "t.mustache:2:3: unclosed section 'items': add {{/items}}")
    }

    @Test func mismatchedClosingTag() {
        #expect(parseError("{{#a}}\n{{#b}}{{/a}}")?.description == "t.mustache:2:7: closing tag 'a' does not match section 'b' opened at 2:1")
    }

    @Test func closingWithoutOpening() {
        #expect(parseError("x {{/a}}")?.description == "t.mustache:1:3: closing tag 'a' has no opening section")
    }

    @Test func badDelimiters() {
        #expect(parseError("{{=<% %>=}}\n<%= a b c =%>")?.line == 2)
        #expect(parseError("{{=x=}}")?.message.hasPrefix("bad delimiter change") == true)
    }

    @Test func unclosedTag() {
        #expect(parseError("ok\nthen {{name")?.description == "t.mustache:2:6: unclosed tag: no '}}' after '{{'")
    }

    @Test func emptyAndSpacedTags() {
        #expect(parseError("{{}}")?.message == "empty tag")
        #expect(parseError("{{a b}}")?.message == "tag name 'a b' contains whitespace")
    }

    @Test func runawayRecursionIsAnError() throws {
        let loop = try Template(name: "loop", source: "{{>loop}}")
        #expect(throws: MustacheError.self) { try loop.render([:], partials: ["loop": loop]) }
    }

    @Test func parsedOnceRenderedManyTimes() throws {
        let template = try Template(name: "t", source: "{{#l}}{{.}}{{/l}}")
        for count in 0..<5 {
            let items = MustacheValue.array((0..<count).map { .number(Double($0)) })
            #expect(try template.render(["l": items]) == (0..<count).map(String.init).joined())
        }
    }

    @Test func escapingCanBeTurnedOffForSourceCode() throws {
        let template = try Template(name: "t", source: "let x: Array<{{t}}> = \"{{v}}\"")
        #expect(try template.render(["t": "Int", "v": "a&b"], escaping: .none) == "let x: Array<Int> = \"a&b\"")
    }
}

/// Lazy objects compute a field on first read, keep it, and give every thread the same value.
@Suite struct LazyObjectTests {
    final class Counting: MustacheFieldSource, @unchecked Sendable {
        private let lock = NSLockLike()
        private(set) var computed: [Int] = []
        func value(ofField index: Int, in object: MustacheLazyObject) -> MustacheValue {
            lock.run { computed.append(index) }
            // A field may read another one of the same object.
            if index == 1 { return .string("b(\(object.value(ofField: 0).interpolated))") }
            return .string("a")
        }
    }

    @Test func fieldsAreComputedOnFirstReadAndKept() {
        let source = Counting()
        let object = MustacheLazyObject(fieldNames: MustacheFieldNames(["first", "second", "unread"]), source: source)
        #expect(MustacheValue.lazy(object)["second"]?.interpolated == "b(a)")
        #expect(MustacheValue.lazy(object)["first"]?.interpolated == "a")
        #expect(MustacheValue.lazy(object)["missing"] == nil)
        #expect(source.computed == [1, 0])
        let rendered = try? Template(name: "t", source: "{{#o}}{{second}}-{{first}}{{/o}}").render(["o": .lazy(object)], partials: [:], escaping: .none)
        #expect(rendered == "b(a)-a")
        #expect(source.computed == [1, 0], "nothing computed twice, 'unread' never")
    }

    @Test func manyThreadsReadOneObject() async {
        let source = Counting()
        let object = MustacheLazyObject(fieldNames: MustacheFieldNames((0..<64).map { "f\($0)" }), source: source)
        let values = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { (0..<64).map { object.value(ofField: $0).interpolated } } }
            return await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(Set(values).count == 1)
        #expect(Set(source.computed) == Set(0..<64))
    }
}

/// A lock for the test's counter.
final class NSLockLike: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    init() { pthread_mutex_init(&mutex, nil) }
    func run(_ body: () -> Void) {
        pthread_mutex_lock(&mutex)
        body()
        pthread_mutex_unlock(&mutex)
    }
}
