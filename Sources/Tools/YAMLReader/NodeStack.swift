/// The finished children of a tree builder's open collections, innermost last. A collection
/// that closes takes its children by moving them out, so building a tree copies no node:
/// copying would retain and release every string and array in it once more.
final class NodeStack: @unchecked Sendable {
    // Sendable because its one owner, a `TreeBuilder`, may finish on another thread than it
    // started on; nothing else ever holds it.
    private var storage: UnsafeMutablePointer<YAMLNode>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 64) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    func append(_ node: consuming YAMLNode) {
        if count == capacity {
            let larger = UnsafeMutablePointer<YAMLNode>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: storage, count: count)
            storage.deallocate()
            storage = larger
            capacity *= 2
        }
        (storage + count).initialize(to: node)
        count += 1
    }

    /// The nodes from `start` on, moved out in order; the stack ends at `start`.
    func takeAll(from start: Int) -> [YAMLNode] {
        let taken = count - start
        let nodes = [YAMLNode](unsafeUninitializedCapacity: taken) { buffer, initialized in
            buffer.baseAddress!.moveInitialize(from: storage + start, count: taken)
            initialized = taken
        }
        count = start
        return nodes
    }

    /// The nodes from `start` on as key and value pairs, moved out in order; the stack ends at
    /// `start`. A mapping always closes with whole pairs.
    func takePairs(from start: Int) -> [YAMLPair] {
        let taken = (count - start) / 2
        let pairs = [YAMLPair](unsafeUninitializedCapacity: taken) { buffer, initialized in
            for offset in 0..<taken {
                let key = storage + start + offset * 2
                (buffer.baseAddress! + offset).initialize(to: YAMLPair(key: key.move(), value: (key + 1).move()))
            }
            initialized = taken
        }
        let end = start + taken * 2
        if count > end { (storage + end).deinitialize(count: count - end) }
        count = start
        return pairs
    }
}
