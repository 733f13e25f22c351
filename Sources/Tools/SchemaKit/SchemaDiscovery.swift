#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds schema files (`*.yaml`, `*.yml`) among paths given by the user.
public enum SchemaDiscovery {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case missing(String)
        case noSchemas(String)
        case unreadableDirectory(String, String)

        public var description: String {
            switch self {
            case .missing(let path): "no such file or directory: '\(path)'"
            case .noSchemas(let path): "no schema files (*.yaml, *.yml) in directory '\(path)'"
            case .unreadableDirectory(let path, let reason): "cannot read directory '\(path)': \(reason)"
            }
        }
    }

    public static let extensions = [".yaml", ".yml"]

    /// Files as given, and for directories every schema file below them (hidden folders skipped),
    /// sorted so output is stable.
    public static func files(in paths: [String]) -> Swift.Result<[String], Failure> {
        var result: [String] = []
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0 else { return .failure(.missing(path)) }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                var found: [String] = []
                if let failure = walk(path, into: &found, depth: 0) { return .failure(failure) }
                guard !found.isEmpty else { return .failure(.noSchemas(path)) }
                result += found.sorted()
            } else {
                result.append(path)
            }
        }
        var seen: Set<String> = []
        return .success(result.filter { seen.insert($0).inserted })
    }

    private static func walk(_ directory: String, into found: inout [String], depth: Int) -> Failure? {
        guard depth < 32 else { return nil }
        guard let handle = opendir(directory) else {
            return .unreadableDirectory(directory, String(cString: strerror(errno)))
        }
        defer { closedir(handle) }
        var subdirectories: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard !name.hasPrefix(".") else { continue }
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                subdirectories.append(path)
            } else if extensions.contains(where: { name.hasSuffix($0) }) {
                found.append(path)
            }
        }
        for subdirectory in subdirectories {
            if let failure = walk(subdirectory, into: &found, depth: depth + 1) { return failure }
        }
        return nil
    }
}
