import Foundation

/// Type-checks code written for SwiftData on Linux, against the shim in
/// `Tests/Fixtures/SwiftDataShim`: its macro plugin is compiled with `swiftc` against the
/// toolchain's own SwiftSyntax, its `SwiftData` module against that plugin, once per test
/// process; then each check runs `swiftc -typecheck` in Swift 6 language mode.
public enum SwiftDataShim {
    /// What a check said: the compiler's status and its messages.
    public struct Check: Sendable {
        public let status: Int32
        public let output: String
        public var passed: Bool { status == 0 }
    }

    struct Built: Sendable {
        let folder: URL
        let plugin: URL
    }

    private static let lock = NSLock()
    /// The shim built for iOS 18 and later (false) and for earlier targets (true).
    nonisolated(unsafe) private static var built: [Bool: Result<Built, ShimError>] = [:]

    public struct ShimError: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The toolchain's host libraries (SwiftSyntax and its macro support).
    static var hostLibraries: String {
        let compiler = (try? standardOutput(of: "which", ["swiftc"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "swiftc"
        let resolved = URL(fileURLWithPath: compiler).resolvingSymlinksInPath()
        return resolved.deletingLastPathComponent().appendingPathComponent("../lib/swift/host").standardized.path
    }

    static func build(beforeIOS18: Bool) throws -> Built {
        try lock.withLock {
            if let built = built[beforeIOS18] { return try built.get() }
            let result = Result<Built, any Error> {
                let folder = temporaryFolder()
                let shim = repositoryRoot.appendingPathComponent("Tests/Fixtures/SwiftDataShim")
                let plugin = folder.appendingPathComponent("libShimMacros.so")
                let host = hostLibraries
                let steps: [[String]] = [
                    [
                        "swiftc", "-emit-library", "-module-name", "ShimMacros", "-I", host, "-L", host, "-lSwiftSyntax", "-lSwiftSyntaxMacros", "-lSwiftSyntaxBuilder",
                        "-lSwiftDiagnostics", shim.appendingPathComponent("Macros.swift").path, "-o", plugin.path,
                    ],
                    [
                        "swiftc", "-emit-module", "-module-name", "SwiftData", "-parse-as-library", "-swift-version", "6", shim.appendingPathComponent("SwiftData.swift").path,
                        "-emit-module-path", folder.appendingPathComponent("SwiftData.swiftmodule").path, "-load-plugin-library", plugin.path,
                    ] + (beforeIOS18 ? ["-D", "SWIFTDATA_BEFORE_IOS18"] : []),
                ]
                for step in steps {
                    let run = try compile(step, in: folder)
                    guard run.status == 0 else { throw ShimError(description: "building the SwiftData shim failed:\n\(run.output)") }
                }
                return Built(folder: folder, plugin: plugin)
            }
            let outcome = result.mapError { $0 as? ShimError ?? ShimError(description: "\($0)") }
            built[beforeIOS18] = outcome
            return try outcome.get()
        }
    }

    static func compile(_ arguments: [String], in folder: URL) throws -> Check {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let log = folder.appendingPathComponent("compiler-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let status = exitStatus(of: process)
        try handle.close()
        return Check(status: status, output: (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    /// Type-checks Swift files (name -> text) that `import SwiftData`, as one module, for a
    /// deployment target of iOS 18 and macOS 15 (or, `beforeIOS18`, iOS 17 and macOS 14,
    /// where `#Unique` and `#Index` are unavailable).
    public static func typecheck(_ files: [String: String], beforeIOS18: Bool = false) throws -> Check {
        let shim = try build(beforeIOS18: beforeIOS18)
        let folder = temporaryFolder()
        var paths: [String] = []
        for (name, text) in files.sorted(by: { $0.key < $1.key }) {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            paths.append(url.path)
        }
        return try compile(
            ["swiftc", "-typecheck", "-swift-version", "6", "-I", shim.folder.path, "-load-plugin-library", shim.plugin.path] + paths, in: folder)
    }
}
