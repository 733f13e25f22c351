import Dispatch

extension Array where Element: Sendable {
    /// `map` spread over the machine's cores, results in order. For independent, pure work
    /// such as rendering one template per entity.
    public func parallelMap<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> [T] {
        guard count > 1 else { return map(transform) }
        let slots = Slots<T>(count: count)
        let elements = self
        DispatchQueue.concurrentPerform(iterations: count) { index in
            slots.store(transform(elements[index]), at: index)
        }
        return slots.values()
    }
}

/// Result storage written once per index from different threads; each index has one writer.
private final class Slots<T>: @unchecked Sendable {
    private let buffer: UnsafeMutablePointer<T?>
    private let count: Int

    init(count: Int) {
        self.count = count
        buffer = .allocate(capacity: count)
        buffer.initialize(repeating: nil, count: count)
    }

    deinit {
        buffer.deinitialize(count: count)
        buffer.deallocate()
    }

    func store(_ value: T, at index: Int) { buffer[index] = value }

    func values() -> [T] { (0..<count).compactMap { buffer[$0] } }
}
