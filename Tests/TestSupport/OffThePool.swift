import Foundation

/// Runs blocking work (child processes, a long migration, polling sleeps) on a thread of its
/// own and waits for it without holding a thread of Swift's cooperative pool, which has only
/// as many threads as the machine has cores: blocked there, it would starve every async test
/// running beside it. Expectations stay outside `body`: it returns what to check.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// A value handed to `offThePool` that is not `Sendable` by type but is used by one thread at a
/// time (a migrator, a connection): the awaiting task does nothing with it meanwhile.
public struct Handed<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
