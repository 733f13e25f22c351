/// How a device reaches its server: a push and a pull, each answered or failed. The toolkit's
/// HTTP transport speaks `SyncJSON` to a server's endpoint; `SyncServer.transport(for:)` calls a
/// server in the same process (tests, previews). An error means the answer did not arrive: the
/// device sends the same push again later, and the server answers it without applying it twice.
///
///     let answer = try await transport.push(push)
public protocol SyncTransport: Sendable {
    /// Sends a push and waits for its answer.
    func push(_ push: SyncPush) async throws -> SyncPushAnswer
    /// Sends a pull and waits for its page.
    func pull(_ pull: SyncPull) async throws -> SyncPullAnswer
}

/// What a transport tells a device about a request that failed, where the device acts on it.
public enum SyncTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server pruned the history after the pull's cursor: pull again from the start.
    case cursorExpired
    /// The server purged deletes this device has not seen: pull again from the start, forget
    /// what the server no longer holds, then push.
    case tombstonesPurged
    /// The server refused the request (its message; never a secret).
    case refused(String)
    /// The server could not be reached, or its answer did not arrive.
    case unreachable(String)

    /// What happened, for a log.
    public var description: String {
        switch self {
        case .cursorExpired: "the server cannot go on from this device's cursor (its history was pruned, or a large move): the device pulls everything again"
        case .tombstonesPurged: "the server purged deletes this device has not seen: it pulls everything again"
        case .refused(let message): "the server refused the request: \(message)"
        case .unreachable(let message): "the server could not be reached: \(message)"
        }
    }
}
