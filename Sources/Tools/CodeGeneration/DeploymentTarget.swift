/// The oldest Apple OS a SwiftData app runs on (`generate --target swiftdata
/// --deployment-target`), which decides the API the models may use: `#Unique` and `#Index` are
/// iOS 18 and macOS 15 API, and a freestanding macro cannot be put under `if #available`.
///
///     let output = try Generator.generateSwiftData(versions: versions, sourceFile: "Shop.yaml", templates: try .defaults(for: .swiftdata), deploymentTarget: .ios18)
public enum DeploymentTarget: String, Sendable, CaseIterable {
    case ios17, ios18, macos14, macos15

    /// iOS 17: SwiftData's first release, as most apps that adopt it still support.
    public static let `default` = DeploymentTarget.ios17

    /// Whether `#Unique` and `#Index` may be used (iOS 18, macOS 15).
    public var hasConstraintMacros: Bool { self == .ios18 || self == .macos15 }

    /// As a person says it: `iOS 17`, `macOS 15`.
    public var displayName: String {
        switch self {
        case .ios17: "iOS 17"
        case .ios18: "iOS 18"
        case .macos14: "macOS 14"
        case .macos15: "macOS 15"
        }
    }
}
