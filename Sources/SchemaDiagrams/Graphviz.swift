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

    public static func svg(fromDot dot: String, executable: String? = Graphviz.executable()) throws(Failure) -> String {
        guard let executable else { throw Failure(message: installAdvice) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-Tsvg"]
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        do { try process.run() } catch { throw Failure(message: "cannot run \(executable): \(error.localizedDescription)") }
        // Write and read on separate threads: a large diagram fills a pipe either way.
        let writer = Thread {
            input.fileHandleForWriting.write(Data(dot.utf8))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let svg = output.fileHandleForReading.readDataToEndOfFile()
        let messages = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(message: "dot failed (status \(process.terminationStatus)): \(String(decoding: messages, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return String(decoding: svg, as: UTF8.self)
    }
}
