import Diagnostics

/// Reads one YAML document into a `YAMLNode` tree with libyaml's event parser.
///
/// libyaml checks syntax but not duplicate keys, anchors that do not exist or the size of
/// what aliases expand to; this loader does, so hostile input ends in a diagnostic, not in a
/// crash, a hang or runaway memory.
public enum YAMLLoader {
    /// Bounds that keep hostile documents from exhausting the stack, memory or time.
    public struct Limits: Sendable {
        /// Deepest nesting of sequences and mappings.
        public var maximumDepth: Int
        /// Nodes in the document counting every alias as a full copy of what it names
        /// (stops "billion laughs" alias bombs).
        public var maximumExpandedNodes: Int

        public init(maximumDepth: Int = 256, maximumExpandedNodes: Int = 2_000_000) {
            self.maximumDepth = maximumDepth
            self.maximumExpandedNodes = maximumExpandedNodes
        }
    }

    /// What loading produced.
    public enum Outcome: Sendable {
        case document(YAMLNode)
        /// The input holds no document (empty, or only comments).
        case empty
        /// A fatal problem, already reported to the diagnostics.
        case failed
    }

    /// Diagnostic codes this loader reports.
    public enum Code: String, DiagnosticCode {
        case syntax = "yaml-syntax"
        case duplicateKey = "duplicate-key"
        case tooDeep = "nesting-too-deep"
        case aliasExpansion = "alias-expansion-too-large"
        case unknownAnchor = "unknown-anchor"
        case multipleDocuments = "multiple-documents"
        case invalidMerge = "invalid-merge"
    }

    public static func load(
        _ source: SourceFile, limits: Limits = Limits(), diagnostics: inout DiagnosticBag
    ) -> Outcome {
        var builder = TreeBuilder(source: source, limits: limits)
        let outcome = source.bytes.withUnsafeBufferPointer { buffer in
            builder.run(buffer)
        }
        diagnostics.append(contentsOf: builder.diagnostics.diagnostics)
        return outcome
    }
}

// MARK: - Building the tree from events

struct TreeBuilder: Sendable {
    let source: SourceFile
    let limits: YAMLLoader.Limits
    /// Added to every line: for the second part of a file read in two (`YAMLSplitLoading`).
    var lineOffset = 0
    var diagnostics = DiagnosticBag()

    /// A collection being read. Its finished children wait on `children` from `firstChild` on
    /// (keys and values alternating in a mapping), so each collection's array is allocated once,
    /// at its exact size, when it closes.
    private struct Frame {
        let isMapping: Bool
        let start: YAMLMark
        let tag: String?
        let anchor: String?
        let firstChild: Int
        var weight = 1
    }

    /// The finished children of every open collection, innermost last.
    private var children = NodeStack()
    private var stack: [Frame] = []
    private var anchors: [String: (node: YAMLNode, weight: Int)] = [:]
    private(set) var expandedNodes = 0
    /// Whether the document defines anchors or merges keys: what a split read cannot join.
    private(set) var usesAnchorsOrMerges = false
    private(set) var root: YAMLNode?
    private var documentCount = 0

    init(source: SourceFile, limits: YAMLLoader.Limits) {
        self.source = source
        self.limits = limits
    }

    mutating func run(_ input: UnsafeBufferPointer<UInt8>) -> YAMLLoader.Outcome {
        var stoppedByDiagnostic = false
        let failure = YAMLEventReader.read(input, lineOffset: lineOffset) { event in
            let keepGoing = handle(event)
            stoppedByDiagnostic = !keepGoing
            return keepGoing
        }
        if let failure {
            reportParserError(failure)
            return .failed
        }
        if stoppedByDiagnostic { return .failed }
        if let root { return .document(root) }
        return .empty
    }

    /// Handles one event; false stops the parse after a fatal diagnostic.
    private mutating func handle(_ event: YAMLEvent) -> Bool {
        let start = event.start
        let end = event.end
        switch event.kind {
        case .documentStart:
            documentCount += 1
            if documentCount > 1 {
                diagnostics.error(
                    YAMLLoader.Code.multipleDocuments,
                    "a schema file holds one YAML document; split the others into files of their own",
                    at: location(start, length: 3))
                return false
            }
        case .scalar:
            let node = YAMLNode(content: .scalar(event.text, event.style), start: start, end: end, tag: event.tag)
            return add(node, weight: 1, anchor: event.anchor)
        case .sequenceStart:
            guard push(Frame(isMapping: false, start: start, tag: event.tag, anchor: event.anchor, firstChild: children.count), at: start)
            else { return false }
        case .mappingStart:
            guard push(Frame(isMapping: true, start: start, tag: event.tag, anchor: event.anchor, firstChild: children.count), at: start)
            else { return false }
        case .sequenceEnd:
            guard let frame = stack.popLast(), !frame.isMapping else { return true }
            let items = children.takeAll(from: frame.firstChild)
            return add(YAMLNode(content: .sequence(items), start: frame.start, end: end, tag: frame.tag), weight: frame.weight, anchor: frame.anchor)
        case .mappingEnd:
            guard let frame = stack.popLast(), frame.isMapping else { return true }
            let pairs = mappingPairs(from: frame.firstChild)
            return add(YAMLNode(content: .mapping(pairs), start: frame.start, end: end, tag: frame.tag), weight: frame.weight, anchor: frame.anchor)
        case .alias:
            let name = event.text
            guard let target = anchors[name] else {
                diagnostics.error(YAMLLoader.Code.unknownAnchor, "alias '*\(name)' names no anchor defined before it", at: location(start, length: name.count + 1))
                return false
            }
            return add(target.node, weight: target.weight, anchor: nil)
        case .streamStart, .streamEnd, .documentEnd:
            break
        }
        return true
    }

    private mutating func push(_ frame: Frame, at start: YAMLMark) -> Bool {
        guard stack.count < limits.maximumDepth else {
            diagnostics.error(
                YAMLLoader.Code.tooDeep,
                "the document nests deeper than \(limits.maximumDepth) levels; a schema needs only a few",
                at: location(start))
            return false
        }
        stack.append(frame)
        return true
    }

    /// Attaches a finished node to its parent, counting its expanded size.
    private mutating func add(_ node: YAMLNode, weight: Int, anchor: String?) -> Bool {
        expandedNodes += weight
        if expandedNodes > limits.maximumExpandedNodes {
            diagnostics.error(
                YAMLLoader.Code.aliasExpansion,
                "the document expands to more than \(limits.maximumExpandedNodes) nodes (aliases count as copies); refusing to load it",
                at: location(node.start))
            return false
        }
        if let anchor {
            anchors[anchor] = (node, weight)
            usesAnchorsOrMerges = true
        }
        guard !stack.isEmpty else {
            root = node
            return true
        }
        stack[stack.count - 1].weight += weight
        children.append(node)
        return true
    }

    /// The pairs of the mapping whose keys and values alternate on `children` from `first` on.
    /// Reports duplicate keys (keeping the first) and applies YAML merge keys (`<<: *base`).
    private mutating func mappingPairs(from first: Int) -> [YAMLPair] {
        let pairs = children.takePairs(from: first)
        // Nearly every mapping has neither: its pairs are taken as they are.
        guard Self.hasMergeOrRepeatedKey(pairs) else { return pairs }
        let count = pairs.count
        var result: [YAMLPair] = []
        result.reserveCapacity(count)
        // Small mappings (nearly all of them) find duplicates by a scan; large ones by hashing.
        let hashes = count > 16
        var firstSeen: [String: YAMLNode] = [:]
        if hashes { firstSeen.reserveCapacity(count) }
        var merges: [YAMLPair] = []
        for pair in pairs {
            if case .scalar("<<", .plain) = pair.key.content, pair.key.tag == nil {
                merges.append(pair)
                usesAnchorsOrMerges = true
                continue
            }
            if let key = pair.key.scalarText {
                let earlier = hashes ? firstSeen[key] : result.first { $0.key.scalarText == key }?.key
                if let earlier {
                    reportDuplicate(key, at: pair.key, first: earlier)
                    continue
                }
                if hashes { firstSeen[key] = pair.key }
            }
            result.append(pair)
        }
        guard !merges.isEmpty else { return result }
        // Merged keys are checked by hashing: merges are rare, and may bring many keys.
        if !hashes {
            for pair in result {
                if let key = pair.key.scalarText { firstSeen[key] = pair.key }
            }
        }
        for merge in merges {
            let sources: [YAMLNode]
            switch merge.value.content {
            case .mapping: sources = [merge.value]
            case .sequence(let items) where items.allSatisfy({ $0.pairs != nil }): sources = items
            default:
                diagnostics.error(
                    YAMLLoader.Code.invalidMerge,
                    "a merge key '<<' takes a mapping or a list of mappings, found \(merge.value.kindDescription)",
                    at: location(merge.value.start, length: merge.value.length))
                continue
            }
            for source in sources {
                for pair in source.pairs ?? [] {
                    guard let key = pair.key.scalarText, firstSeen[key] == nil else { continue }
                    firstSeen[key] = pair.key
                    result.append(pair)
                }
            }
        }
        return result
    }

    /// Whether a mapping holds a merge key (`<<`) or a key that repeats: what `mappingPairs`
    /// must filter. Small mappings are scanned; large ones hashed.
    private static func hasMergeOrRepeatedKey(_ pairs: [YAMLPair]) -> Bool {
        func isMerge(_ key: YAMLNode) -> Bool {
            if case .scalar("<<", .plain) = key.content, key.tag == nil { return true }
            return false
        }
        if pairs.count > 16 {
            var seen = Set<String>(minimumCapacity: pairs.count)
            for pair in pairs {
                if isMerge(pair.key) { return true }
                if let key = pair.key.scalarText, !seen.insert(key).inserted { return true }
            }
            return false
        }
        for index in pairs.indices {
            guard case .scalar(let key, _) = pairs[index].key.content else { continue }
            if isMerge(pairs[index].key) { return true }
            for earlier in 0..<index {
                if case .scalar(let other, _) = pairs[earlier].key.content, other == key { return true }
            }
        }
        return false
    }

    private mutating func reportDuplicate(_ key: String, at node: YAMLNode, first: YAMLNode) {
        diagnostics.error(
            YAMLLoader.Code.duplicateKey,
            "duplicate key '\(key)'; keep one of the two",
            at: location(node.start, length: node.length),
            notes: [.init("'\(key)' first defined here", at: location(first.start, length: first.length))])
    }

    // MARK: - Errors and positions

    private mutating func reportParserError(_ failure: YAMLParserFailure) {
        let problem = failure.problem ?? "malformed YAML"
        if failure.isReaderError {
            // Reader errors (bad encoding, control characters) carry a byte offset, not a mark.
            let offset = failure.problemOffset
            let message =
                switch problem {
                case "invalid leading UTF-8 octet", "invalid trailing UTF-8 octet", "incomplete UTF-8 octet sequence", "invalid Unicode character":
                    "the file is not valid UTF-8 (\(problem) at byte \(offset)); save it as UTF-8"
                case "control characters are not allowed":
                    "the file contains a control character at byte \(offset); is it a binary file?"
                default:
                    "\(problem) at byte \(offset)"
                }
            diagnostics.error(YAMLLoader.Code.syntax, message, at: locationOfByte(offset))
            return
        }
        var message = problem
        let offset = failure.problemByteOffset
        if offset < source.bytes.count, source.bytes[offset] == UInt8(ascii: "\t") {
            message = "a tab character here is not allowed in YAML indentation; indent with spaces"
        } else if let context = failure.context {
            message += " (\(context) at line \(failure.contextMark.line), column \(failure.contextMark.column))"
        }
        diagnostics.error(YAMLLoader.Code.syntax, "YAML syntax error: " + message, at: location(failure.problemMark))
    }

    private func location(_ mark: YAMLMark, length: Int = 1) -> SourceLocation {
        SourceLocation(file: source.path, line: mark.line, column: mark.column, length: length)
    }

    private func location(line: Int, column: Int) -> SourceLocation {
        SourceLocation(file: source.path, line: line, column: column)
    }

    /// Line and column (in characters) of a byte offset, counted from the source.
    private func locationOfByte(_ offset: Int) -> SourceLocation {
        var line = 1
        var column = 1
        var index = 0
        let bytes = source.bytes
        while index < min(offset, bytes.count) {
            if bytes[index] == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if bytes[index] & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return location(line: line, column: column)
    }
}
