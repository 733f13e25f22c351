import Diagnostics
import Dispatch

/// Reads a large document in two halves, one per core. A schema is a mapping whose biggest
/// entry (`entities:`) is a block mapping of many entries, each starting on a line indented by
/// two spaces. Such a line is a boundary of the block structure: the text before it is a
/// document of its own, and so is `entities:` followed by the text from it on. The two are
/// read at the same time and their trees joined, the second's lines shifted back into place.
///
/// Only a clean read counts. When either half reports anything (a syntax error, an anchor
/// defined in the other half, a duplicate key across the cut, a limit), or the halves do not
/// join as expected, the caller reads the whole document as one, so every diagnostic and
/// every tree is the one a whole read gives.
enum YAMLSplitLoading {
    /// Smaller documents are read whole: starting a second thread costs more than it saves.
    static let minimumSize = 256 * 1024
    /// The block mapping must have at least this many entries to be worth cutting.
    static let minimumEntries = 64

    /// Where to cut: the key of the top-level entry whose block mapping is cut, the byte offset
    /// and the 1-based line of the entry line the second half starts with.
    struct Cut: Equatable {
        let key: String
        let offset: Int
        let line: Int
    }

    static func load(_ source: SourceFile, limits: YAMLLoader.Limits) -> YAMLNode? {
        guard source.bytes.count >= minimumSize, let cut = cut(in: source.bytes) else { return nil }
        let secondText = Array("\(cut.key):\n".utf8) + source.bytes[cut.offset...]
        let halves = [Array(source.bytes[..<cut.offset]), secondText]
        // The second half's line 2 is the file's line `cut.line`.
        let offsets = [0, cut.line - 2]
        let builders = halves.indices.map { $0 }.parallelRead { index in
            var builder = TreeBuilder(source: source, limits: limits)
            builder.lineOffset = offsets[index]
            let outcome = halves[index].withUnsafeBufferPointer { builder.run($0) }
            guard case .document = outcome, builder.diagnostics.diagnostics.isEmpty else { return nil }
            return builder
        }
        guard let first = builders[0], let second = builders[1], !first.usesAnchorsOrMerges, !second.usesAnchorsOrMerges,
            first.expandedNodes + second.expandedNodes <= limits.maximumExpandedNodes,
            let firstRoot = first.root, let secondRoot = second.root
        else { return nil }
        // A whole read ends the collections the cut closes where the next entry's key starts.
        let nextKey = YAMLMark(line: cut.line, column: 3)
        return join(closing(firstRoot, at: YAMLMark(line: cut.line, column: 1), movedTo: nextKey), secondRoot, key: cut.key)
    }

    /// `node` with every collection on its last path that ends at `end` (the first half's end)
    /// ending at `movedTo` instead.
    static func closing(_ node: YAMLNode, at end: YAMLMark, movedTo: YAMLMark) -> YAMLNode {
        var node = node
        switch node.content {
        case .mapping(var pairs) where !pairs.isEmpty:
            let last = pairs.count - 1
            pairs[last] = YAMLPair(key: pairs[last].key, value: closing(pairs[last].value, at: end, movedTo: movedTo))
            node.content = .mapping(pairs)
        case .sequence(var items) where !items.isEmpty:
            items[items.count - 1] = closing(items[items.count - 1], at: end, movedTo: movedTo)
            node.content = .sequence(items)
        default:
            return node
        }
        if node.end == end { node.end = movedTo }
        return node
    }

    /// The first half's root with the cut mapping's entries from both halves, then the second
    /// half's other top-level entries; nil when any key would appear twice.
    static func join(_ first: YAMLNode, _ second: YAMLNode, key: String) -> YAMLNode? {
        guard case .mapping(let firstPairs) = first.content, first.tag == nil,
            case .mapping(let secondPairs) = second.content, second.tag == nil,
            let cutIndex = firstPairs.firstIndex(where: { $0.key.scalarText == key }),
            secondPairs.first?.key.scalarText == key,
            case .mapping(let head) = firstPairs[cutIndex].value.content, firstPairs[cutIndex].value.tag == nil,
            case .mapping(let tail) = secondPairs[0].value.content, secondPairs[0].value.tag == nil,
            cutIndex == firstPairs.count - 1
        else { return nil }
        var entryKeys = Set<String>()
        for pair in head + tail {
            guard let name = pair.key.scalarText, pair.key.tag == nil, name != "<<", entryKeys.insert(name).inserted else { return nil }
        }
        var rootKeys = Set<String>()
        for pair in firstPairs + secondPairs.dropFirst() {
            guard let name = pair.key.scalarText, pair.key.tag == nil, name != "<<", rootKeys.insert(name).inserted else { return nil }
        }
        let cutValue = firstPairs[cutIndex].value
        let joinedValue = YAMLNode(content: .mapping(head + tail), start: cutValue.start, end: secondPairs[0].value.end, tag: nil)
        var pairs = firstPairs
        pairs[cutIndex] = YAMLPair(key: firstPairs[cutIndex].key, value: joinedValue)
        pairs += secondPairs.dropFirst()
        return YAMLNode(content: .mapping(pairs), start: first.start, end: second.end, tag: nil)
    }

    /// The middle entry line of the largest top-level block mapping, or nil when the document
    /// has none worth cutting or uses what a cut could change the meaning of (directives,
    /// several documents, tabs).
    static func cut(in bytes: [UInt8]) -> Cut? {
        var best: (key: String, entries: [(offset: Int, line: Int)])?
        var current: (key: String, entries: [(offset: Int, line: Int)])?
        var lineStart = 0
        var line = 1
        var sawContent = false
        func finishBlock() {
            if let block = current, block.entries.count > (best?.entries.count ?? 0) { best = block }
            current = nil
        }
        while lineStart < bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count, bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            let first = bytes[lineStart]
            switch first {
            case UInt8(ascii: "%"), UInt8(ascii: "\t"):
                return nil
            case UInt8(ascii: "-"), UInt8(ascii: "."):
                // A document marker after the first content would start another document.
                if lineEnd - lineStart >= 3, bytes[lineStart + 1] == first, bytes[lineStart + 2] == first {
                    if sawContent { return nil }
                } else {
                    finishBlock()
                }
            case UInt8(ascii: " "):
                if lineEnd - lineStart > 2, bytes[lineStart + 1] == UInt8(ascii: " "), isEntryStart(bytes[lineStart + 2]), current != nil {
                    current?.entries.append((lineStart, line))
                }
            case UInt8(ascii: "#"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                break
            default:
                sawContent = true
                finishBlock()
                if let key = blockKey(bytes[lineStart..<lineEnd]) { current = (key, []) }
            }
            lineStart = lineEnd + 1
            line += 1
        }
        finishBlock()
        guard let best, best.entries.count >= minimumEntries else { return nil }
        let middle = best.entries[best.entries.count / 2]
        return Cut(key: best.key, offset: middle.offset, line: middle.line)
    }

    /// A character that can start a block mapping entry's key (not a space, a comment, a
    /// sequence item, a flow or quoting character, an anchor, alias or tag).
    private static func isEntryStart(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// `name:` with nothing after it but spaces or a comment: a top-level key whose value is a
    /// block node on the following lines.
    private static func blockKey(_ line: ArraySlice<UInt8>) -> String? {
        var index = line.startIndex
        while index < line.endIndex, isEntryStart(line[index]) || line[index] == UInt8(ascii: "-") { index += 1 }
        guard index > line.startIndex, index < line.endIndex, line[index] == UInt8(ascii: ":") else { return nil }
        let key = String(decoding: line[line.startIndex..<index], as: UTF8.self)
        index += 1
        while index < line.endIndex, line[index] == UInt8(ascii: " ") || line[index] == UInt8(ascii: "\r") { index += 1 }
        guard index == line.endIndex || line[index] == UInt8(ascii: "#") else { return nil }
        return key
    }
}

private extension Array where Element == Int {
    /// Each index's result computed on its own thread, in order.
    func parallelRead(_ body: @Sendable (Int) -> TreeBuilder?) -> [TreeBuilder?] {
        let results = ResultSlots(count: count)
        let indices = self
        DispatchQueue.concurrentPerform(iterations: count) { position in
            results.store(body(indices[position]), at: position)
        }
        return results.values
    }
}

/// One slot per thread, each written once by its own thread before `concurrentPerform` returns.
private final class ResultSlots: @unchecked Sendable {
    private(set) var values: [TreeBuilder?]
    private let lock = DispatchSemaphore(value: 1)

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func store(_ value: TreeBuilder?, at index: Int) {
        lock.wait()
        values[index] = value
        lock.signal()
    }
}
