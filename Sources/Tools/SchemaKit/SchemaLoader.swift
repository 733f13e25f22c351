import Diagnostics
import YAMLReader

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loads and validates schema files.
public enum SchemaLoader {
    /// Files larger than this are refused before reading: a schema of a thousand entities is
    /// about 1 MiB.
    public static let maximumFileSize = 16 * 1024 * 1024

    /// The outcome of loading one file.
    public struct FileResult: Sendable {
        public var path: String
        /// The schema, present only when the file had no errors.
        public var schema: Schema?
        public var diagnostics: [Diagnostic]
        /// The file's text, for quoting lines in diagnostics; nil if it could not be read.
        public var source: SourceFile?
    }

    /// The outcome of loading several files, with checks across them.
    public struct Result: Sendable {
        public var files: [FileResult]

        public init(files: [FileResult]) {
            self.files = files
        }

        public var diagnostics: [Diagnostic] { files.flatMap(\.diagnostics) }
        public var schemas: [Schema] { files.compactMap(\.schema) }
        public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    }

    /// Parses and validates schema text.
    public static func load(source: SourceFile) -> FileResult {
        var diagnostics = DiagnosticBag()
        var schema: Schema?
        switch YAMLLoader.load(source, diagnostics: &diagnostics) {
        case .failed:
            break
        case .empty:
            diagnostics.error(
                SchemaDiagnosticCode.emptySchema,
                "the schema file is empty; it needs at least 'schema', 'version' and 'entities'",
                at: SourceLocation(file: source.path, line: 1, column: 1))
        case .document(let root):
            var parser = SchemaParser(file: source.path)
            schema = parser.parse(root: root)
            diagnostics.append(contentsOf: parser.diagnostics.diagnostics)
        }
        let sorted = diagnostics.diagnostics.enumerated().sorted { lhs, rhs in
            // Stable: diagnostics at the same place keep the order they were found in.
            if Diagnostic.sourceOrder(lhs.element, rhs.element) { return true }
            if Diagnostic.sourceOrder(rhs.element, lhs.element) { return false }
            return lhs.offset < rhs.offset
        }.map(\.element)
        let hasErrors = sorted.contains { $0.severity == .error }
        return FileResult(path: source.path, schema: hasErrors ? nil : schema, diagnostics: sorted, source: source)
    }

    /// Reads, parses and validates one file. Unreadable or oversized files give a diagnostic.
    public static func load(file path: String) -> FileResult {
        switch readFile(path) {
        case .success(let bytes):
            return load(source: SourceFile(path: path, bytes: bytes))
        case .failure(let failure):
            let code = failure.isTooLarge ? SchemaDiagnosticCode.fileTooLarge : .fileUnreadable
            let diagnostic = Diagnostic(.error, code: code, message: failure.message, at: SourceLocation(file: path, line: 1, column: 1))
            return FileResult(path: path, schema: nil, diagnostics: [diagnostic], source: nil)
        }
    }

    /// Loads several files and checks that no two declare the same schema name.
    public static func load(files paths: [String]) -> Result {
        load(files: paths, read: { _ in nil })
    }

    /// The same, taking a file's bytes from `read` where it has them (a caller that read them
    /// already); a file it has not is read here, with the size limit.
    ///
    ///     let loaded = SchemaLoader.load(files: ["Schemas/Shop.yaml"], read: { path in FileManager.default.contents(atPath: path).map { [UInt8]($0) } })
    public static func load(files paths: [String], read: (String) -> [UInt8]?) -> Result {
        var files = paths.map { path in
            guard let bytes = read(path), bytes.count <= maximumFileSize else { return load(file: path) }
            return load(source: SourceFile(path: path, bytes: bytes))
        }
        var firstByName: [String: (path: String, location: SourceLocation?)] = [:]
        for index in files.indices {
            guard let schema = files[index].schema else { continue }
            let here = SourceLocation(file: files[index].path, line: 1, column: 1)
            if let first = firstByName[schema.name] {
                files[index].diagnostics.append(
                    Diagnostic(
                        .error, code: SchemaDiagnosticCode.nameCollision,
                        message: "schema '\(schema.name)' is also declared in \(first.path); schema names must be unique",
                        at: here, notes: [.init("first declared here", at: first.location)]))
                files[index].schema = nil
            } else {
                firstByName[schema.name] = (files[index].path, here)
            }
        }
        return Result(files: files)
    }

    // MARK: - Files

    struct ReadFailure: Error {
        var message: String
        var isTooLarge = false
    }

    /// Reads a whole file with POSIX calls, refusing files over `maximumFileSize` before reading them.
    static func readFile(_ path: String) -> Swift.Result<[UInt8], ReadFailure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return .failure(ReadFailure(message: "cannot open '\(path)': \(String(cString: strerror(errno)))"))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            return .failure(ReadFailure(message: "cannot read '\(path)': \(String(cString: strerror(errno)))"))
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            return .failure(ReadFailure(message: "'\(path)' is a directory"))
        }
        if Int(info.st_size) > maximumFileSize {
            return .failure(
                ReadFailure(
                    message:
                        "the file is \(Int(info.st_size) / 1024 / 1024) MiB; schema files are limited to \(maximumFileSize / 1024 / 1024) MiB (a thousand entities take about 1 MiB): split the schema",
                    isTooLarge: true))
        }
        // Read straight into the result when the size is known (a regular file); special files
        // that report no size are read in chunks.
        let size = Int(info.st_size)
        if size > 0 {
            var failure: String?
            let whole = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                while initialized < size {
                    let count = read(descriptor, buffer.baseAddress! + initialized, size - initialized)
                    if count < 0 {
                        if errno == EINTR { continue }
                        failure = String(cString: strerror(errno))
                        return
                    }
                    if count == 0 { return }
                    initialized += count
                }
            }
            if let failure { return .failure(ReadFailure(message: "cannot read '\(path)': \(failure)")) }
            // A file that grew meanwhile is read on in chunks below; one that shrank is what it is.
            guard whole.count == size else { return .success(whole) }
            var extra: [UInt8] = [0]
            let more = extra.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, 1) }
            if more <= 0 { return .success(whole) }
            var bytes = whole
            bytes.append(extra[0])
            return readRest(descriptor, path: path, into: bytes)
        }
        return readRest(descriptor, path: path, into: [])
    }

    /// Reads what is left of a file in chunks, within the size limit.
    private static func readRest(_ descriptor: Int32, path: String, into start: [UInt8]) -> Swift.Result<[UInt8], ReadFailure> {
        var bytes = start
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ReadFailure(message: "cannot read '\(path)': \(String(cString: strerror(errno)))"))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            // Special files may report no size; the limit holds for them too.
            if bytes.count > maximumFileSize {
                return .failure(ReadFailure(message: "the file is larger than \(maximumFileSize / 1024 / 1024) MiB, the limit for schema files", isTooLarge: true))
            }
        }
        return .success(bytes)
    }
}
