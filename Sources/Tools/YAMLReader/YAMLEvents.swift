import CYAML

/// One libyaml event, copied out of libyaml's memory: the tree builder never sees C types.
struct YAMLEvent: Sendable {
    enum Kind: Sendable {
        case streamStart, streamEnd, documentStart, documentEnd
        case scalar, alias, sequenceStart, sequenceEnd, mappingStart, mappingEnd
    }

    var kind: Kind
    var start: YAMLMark
    var end: YAMLMark
    /// A scalar's value, or the anchor an alias names.
    var text = ""
    var style = YAMLScalarStyle.plain
    var tag: String?
    var anchor: String?
}

/// Why libyaml stopped, copied out of the parser.
struct YAMLParserFailure: Sendable {
    /// A reader error (bad encoding, a control character) carries a byte offset, not a mark.
    var isReaderError: Bool
    var problem: String?
    var problemOffset: Int
    var problemMark: YAMLMark
    /// The byte the problem mark points at.
    var problemByteOffset: Int
    var context: String?
    var contextMark: YAMLMark
}

/// Reads events from libyaml.
enum YAMLEventReader {
    /// Reads `input`, handing each event to `sink` until the stream ends or `sink` returns
    /// false. Returns libyaml's failure, if any.
    /// `lineOffset` is added to every line: for a part of a file read on its own.
    static func read(_ input: UnsafeBufferPointer<UInt8>, lineOffset: Int = 0, sink: (YAMLEvent) -> Bool) -> YAMLParserFailure? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            return YAMLParserFailure(
                isReaderError: false, problem: "the YAML parser could not start (out of memory)", problemOffset: 0,
                problemMark: YAMLMark(line: 1, column: 1), problemByteOffset: 0, context: nil, contextMark: YAMLMark(line: 1, column: 1))
        }
        defer { yaml_parser_delete(&parser) }
        // An empty buffer may have no base address; libyaml still needs a valid pointer.
        let empty: [UInt8] = [0]
        return empty.withUnsafeBufferPointer { emptyBuffer in
            if let base = input.baseAddress, input.count > 0 {
                yaml_parser_set_input_string(&parser, base, input.count)
            } else {
                yaml_parser_set_input_string(&parser, emptyBuffer.baseAddress, 0)
            }
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) == 1 else { return failure(parser) }
                var copied = copy(event)
                if lineOffset != 0 {
                    copied.start.line += lineOffset
                    copied.end.line += lineOffset
                }
                yaml_event_delete(&event)
                guard sink(copied), copied.kind != .streamEnd else { return nil }
            }
        }
    }

    private static func copy(_ event: yaml_event_t) -> YAMLEvent {
        let start = mark(event.start_mark), end = mark(event.end_mark)
        switch event.type {
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let style: YAMLScalarStyle =
                switch scalar.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: .literal
                case YAML_FOLDED_SCALAR_STYLE: .folded
                default: .plain
                }
            let text = scalar.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(scalar.length)), as: UTF8.self) } ?? ""
            return YAMLEvent(
                kind: .scalar, start: start, end: end, text: text, style: style,
                tag: cString(scalar.tag), anchor: cString(scalar.anchor))
        case YAML_SEQUENCE_START_EVENT:
            let data = event.data.sequence_start
            return YAMLEvent(kind: .sequenceStart, start: start, end: end, tag: cString(data.tag), anchor: cString(data.anchor))
        case YAML_MAPPING_START_EVENT:
            let data = event.data.mapping_start
            return YAMLEvent(kind: .mappingStart, start: start, end: end, tag: cString(data.tag), anchor: cString(data.anchor))
        case YAML_ALIAS_EVENT:
            return YAMLEvent(kind: .alias, start: start, end: end, text: cString(event.data.alias.anchor) ?? "")
        case YAML_SEQUENCE_END_EVENT: return YAMLEvent(kind: .sequenceEnd, start: start, end: end)
        case YAML_MAPPING_END_EVENT: return YAMLEvent(kind: .mappingEnd, start: start, end: end)
        case YAML_DOCUMENT_START_EVENT: return YAMLEvent(kind: .documentStart, start: start, end: end)
        case YAML_DOCUMENT_END_EVENT: return YAMLEvent(kind: .documentEnd, start: start, end: end)
        case YAML_STREAM_START_EVENT: return YAMLEvent(kind: .streamStart, start: start, end: end)
        default: return YAMLEvent(kind: .streamEnd, start: start, end: end)
        }
    }

    private static func failure(_ parser: yaml_parser_t) -> YAMLParserFailure {
        YAMLParserFailure(
            isReaderError: parser.error == YAML_READER_ERROR,
            problem: cString(parser.problem),
            problemOffset: Int(parser.problem_offset),
            problemMark: mark(parser.problem_mark),
            problemByteOffset: Int(parser.problem_mark.index),
            context: cString(parser.context),
            contextMark: mark(parser.context_mark))
    }

    private static func mark(_ mark: yaml_mark_t) -> YAMLMark {
        YAMLMark(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    private static func cString(_ pointer: UnsafeMutablePointer<UInt8>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    private static func cString(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
