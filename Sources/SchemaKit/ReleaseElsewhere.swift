import Dispatch

/// Hands a value the caller is done with to another thread to be freed. Large trees of small
/// values (a YAML tree, template contexts) take a tenth of a large run to free, and nothing
/// waits for that. The caller must hold no other reference (pass it with `consume`).
public func releaseOnAnotherThread<T>(_ value: consuming T) {
    let box = ReleaseBox(value)
    DispatchQueue.global(qos: .utility).async { box.release() }
}

private final class ReleaseBox<T>: @unchecked Sendable {
    private var value: T?
    init(_ value: consuming T) { self.value = value }
    func release() { value = nil }
}
