import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Another machine on this one: a network namespace of its own, reaching the host over a veth
/// link (../shared/guides/environment.md). The host end can be taken down and up again, which
/// is a network partition as the app inside sees it: packets vanish, nothing is reset.
/// Needs root and `ip`; `available` tries it once.
public final class NetworkNamespace: @unchecked Sendable {
    public static let ip = "/usr/sbin/ip"

    /// Whether namespaces can be made here (root, `ip`, a kernel that allows them).
    public static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: ip) else { return false }
        guard let probe = try? NetworkNamespace(subnet: 250) else { return false }
        probe.remove()
        return true
    }()

    public static let skipReason = "SKIPPED: network namespaces need root and iproute2 (`ip netns`); these tests simulate machines with them"

    public let name: String
    /// The host end's address (where the server listens) and the app's.
    public let hostAddress: String
    public let appAddress: String
    private let hostLink: String

    /// A namespace on 10.231.`subnet`.0/24.
    public init(subnet: Int) throws {
        let tag = "\(getpid() % 100_000)x\(subnet)"
        name = "sg-\(tag)"
        hostLink = "sgh\(tag)"
        hostAddress = "10.231.\(subnet).1"
        appAddress = "10.231.\(subnet).2"
        let appLink = "sga\(tag)"
        do {
            try Self.ip(["netns", "add", name])
            try Self.ip(["link", "add", hostLink, "type", "veth", "peer", "name", appLink])
            try Self.ip(["link", "set", appLink, "netns", name])
            try Self.ip(["addr", "add", "\(hostAddress)/24", "dev", hostLink])
            try Self.ip(["link", "set", hostLink, "up"])
            try Self.ip(["netns", "exec", name, "ip", "addr", "add", "\(appAddress)/24", "dev", appLink])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", appLink, "up"])
            try Self.ip(["netns", "exec", name, "ip", "link", "set", "lo", "up"])
        } catch {
            remove()
            throw error
        }
    }

    /// Cuts the link: the app inside can no longer reach the host, and nothing tells it so.
    public func cut() throws { try Self.ip(["link", "set", hostLink, "down"]) }

    /// Restores the link.
    public func restore() throws { try Self.ip(["link", "set", hostLink, "up"]) }

    /// Starts a tool inside the namespace.
    public func start(_ tool: BuiltTool, _ arguments: [String], environment: [String: String]? = nil) throws -> BuiltTool.Running {
        try BuiltTool(path: Self.ip).start(["netns", "exec", name, tool.url.path] + arguments, environment: environment)
    }

    public func remove() {
        _ = try? Self.ip(["link", "del", hostLink])
        _ = try? Self.ip(["netns", "del", name])
    }

    deinit { remove() }

    private static func ip(_ arguments: [String]) throws {
        try PostgresServer.run(ip, arguments)
    }
}
