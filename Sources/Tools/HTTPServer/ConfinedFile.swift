import Foundation

/// A file named by untrusted text (a URL path, a file name stored in a database) that must lie
/// inside one folder: refused when the name is absolute, climbs out with `..`, holds a NUL or a
/// backslash, or resolves (through symbolic links) outside the folder.
///
///     guard let url = ConfinedFile.resolve("3f2a.bin", inside: externalFolder) else { return .text("not found", status: .notFound) }
public enum ConfinedFile {
    /// The file's real path when it exists inside `folder` (itself resolved) and is a regular
    /// file; nil otherwise.
    public static func resolve(_ name: String, inside folder: String) -> String? {
        guard !name.isEmpty, !name.hasPrefix("/"), !name.utf8.contains(0), !name.contains("\\") else { return nil }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else { return nil }
        guard let root = realPath(folder), let resolved = realPath(root + "/" + name) else { return nil }
        guard resolved.hasPrefix(root + "/") else { return nil }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder), !isFolder.boolValue else { return nil }
        return resolved
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
