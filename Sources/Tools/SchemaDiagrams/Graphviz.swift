import Foundation

/// Runs Graphviz's `dot` to turn dot text into SVG.
public enum Graphviz {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// `dot` on the PATH, or nil.
    public static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        for folder in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/dot"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    public static let installAdvice = "Graphviz's `dot` is not installed: install it with `sudo apt-get install graphviz` (Debian, Ubuntu) or `brew install graphviz`, or use --format mermaid or dot"

    /// Above this many entities `dot` can take minutes (its layout grows much faster than the
    /// graph), so `docs --layout auto` draws the plain layout instead.
    public static let comfortableEntityCount = 80

    /// Collects a pipe's bytes on a thread of its own, so neither pipe can fill and stall `dot`.
    private final class Drain: @unchecked Sendable {
        private let handle: FileHandle
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        init(_ handle: FileHandle) {
            self.handle = handle
            Thread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }.start()
        }

        private var finished = false

        /// Everything read, once the other end closed (waited for the first time only).
        func bytes() -> Data {
            if !finished {
                done.wait()
                finished = true
            }
            return data
        }
    }

    /// The SVG, or a failure: `dot` missing, failing, or still running after `timeout` seconds
    /// (then it is stopped).
    public static func svg(fromDot dot: String, executable: String? = Graphviz.executable(), timeout: TimeInterval = 120) throws(Failure) -> String {
        guard let executable else { throw Failure(message: installAdvice) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-Tsvg"]
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        do { try process.run() } catch { throw Failure(message: "cannot run \(executable): \(error.localizedDescription)") }
        let svg = Drain(output.fileHandleForReading), messages = Drain(error.fileHandleForReading)
        // Closed once both are read to the end: a `Process` is not always released, and would
        // keep them open for good.
        defer {
            _ = svg.bytes()
            _ = messages.bytes()
            try? output.fileHandleForReading.close()
            try? error.fileHandleForReading.close()
        }
        let text = Data(dot.utf8)
        Thread {
            try? input.fileHandleForWriting.write(contentsOf: text)
            try? input.fileHandleForWriting.close()
        }.start()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            let grace = Date().addingTimeInterval(2)
            while process.isRunning, Date() < grace { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let seconds = timeout.rounded() == timeout ? String(Int(timeout)) : String(timeout)
            throw Failure(message: "dot was still laying out the diagram after \(seconds) s and was stopped; draw part of the schema with --entity NAME --depth N, or use --format mermaid")
        }
        process.waitUntilExit()
        let result = svg.bytes(), stderr = messages.bytes()
        guard process.terminationStatus == 0 else {
            throw Failure(message: "dot failed (status \(process.terminationStatus)): \(String(decoding: stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return String(decoding: result, as: UTF8.self)
    }
}
