import Foundation

/// Debian's chromium, headless, as the tests drive pages in a real browser.
public enum HeadlessChromium {
    /// Chromium on the PATH, or nil.
    public static let path: String? = ["chromium", "chromium-browser", "google-chrome"].lazy.compactMap { name in
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }.first

    /// Why a test that needs it is skipped.
    public static let skipReason = "SKIPPED: chromium is not installed; `sh .ci/install-deps --tests` installs it"

    /// The page's DOM after its scripts ran, or its picture saved to `screenshot`; the exit
    /// status and the output. A fresh profile each time, so no cookie carries over.
    public static func run(_ url: String, screenshot: String? = nil, windowSize: String = "1280,1400") throws -> (status: Int32, dom: String) {
        guard let path else { return (-1, "") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        let profile = temporaryFolder().path
        var arguments = ["90", path, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile)"]
        if let screenshot { arguments += ["--screenshot=\(screenshot)", "--window-size=\(windowSize)"] } else { arguments.append("--dump-dom") }
        process.arguments = arguments + [url]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        try? output.fileHandleForReading.close()
        return (exitStatus(of: process), String(decoding: data, as: UTF8.self))
    }
}
