import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// commands on its descriptor 3, answers on 4, each JSON message ended by a NUL), for tests
/// that need a page to live on: a page that updates itself, a page read some time after it
/// loaded. `HeadlessChromium.run` is enough for a page as it loads.
public final class ChromiumSession {
    private let pid: pid_t
    private let commands: Int32
    private let answers: Int32
    private var nextID = 1
    private var received: [UInt8] = []
    private var session: String?

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts Chromium with a fresh profile and opens `url` in a tab.
    public init(opening url: String) throws {
        guard let path = HeadlessChromium.path else { throw Failure(description: HeadlessChromium.skipReason) }
        var toChromium: [Int32] = [0, 0], fromChromium: [Int32] = [0, 0]
        guard pipe(&toChromium) == 0, pipe(&fromChromium) == 0 else { throw Failure(description: "no pipe: \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChromium[0], 3)
        posix_spawn_file_actions_adddup2(&actions, fromChromium[1], 4)
        let null = open("/dev/null", O_WRONLY)
        posix_spawn_file_actions_adddup2(&actions, null, 1)
        posix_spawn_file_actions_adddup2(&actions, null, 2)
        // No other descriptor: a pipe another thread has open for a program it runs would stay
        // open in this long-lived child, and that thread's read would never see its end.
        Spawning.addCloseFrom(&actions, 5)
        let profile = temporaryFolder().path
        let arguments = [path, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile)", "--remote-debugging-pipe", "about:blank"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, path, &actions, nil, &argv, environ)
        Glibc.close(null)
        Glibc.close(toChromium[0])
        Glibc.close(fromChromium[1])
        guard spawned == 0 else { throw Failure(description: "chromium did not start: \(String(cString: strerror(spawned)))") }
        pid = child
        commands = toChromium[1]
        answers = fromChromium[0]
        let target = try send("Target.createTarget", ["url": url])
        guard let targetID = (target["result"] as? [String: Any])?["targetId"] as? String else { throw Failure(description: "no tab: \(target)") }
        let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = (attached["result"] as? [String: Any])?["sessionId"] as? String else { throw Failure(description: "no session: \(attached)") }
        self.session = session
        _ = firstTab
    }

    deinit { close() }

    /// Ends Chromium and its helpers.
    public func close() {
        guard pid > 0, kill(pid, 0) == 0 else { return }
        _ = try? send("Browser.close", [:], timeout: 5)
        for _ in 0..<50 where kill(pid, 0) == 0 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { break }
            usleep(100_000)
        }
        if kill(pid, 0) == 0 {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        Glibc.close(commands)
        Glibc.close(answers)
    }

    /// Opens `url` in another tab of the same browser (sharing its cookies and workers); its
    /// name for `switchTo(_:)`. Commands go on to the current tab until then.
    public func openTab(_ url: String) throws -> String {
        let target = try send("Target.createTarget", ["url": url])
        guard let targetID = (target["result"] as? [String: Any])?["targetId"] as? String else { throw Failure(description: "no tab: \(target)") }
        let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let tab = (attached["result"] as? [String: Any])?["sessionId"] as? String else { throw Failure(description: "no session: \(attached)") }
        return tab
    }

    /// The tab `evaluate`, `act` and `wait` work in from now on: one `openTab(_:)` named, or
    /// the first one (`firstTab`).
    public func switchTo(_ tab: String) { session = tab }

    /// The tab opened with the session.
    public private(set) lazy var firstTab: String = session ?? ""

    /// Runs JavaScript that navigates (a click on a submit button, `location.href = …`) once this
    /// call has returned, so the answer is not lost with the page.
    public func act(_ script: String) throws {
        _ = try evaluate("setTimeout(() => { \(script) }, 0); true")
    }

    /// The value of a JavaScript expression in the page (its result by value).
    public func evaluate(_ expression: String) throws -> Any? {
        let answer = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        return ((answer["result"] as? [String: Any])?["result"] as? [String: Any])?["value"]
    }

    /// The page's HTML now.
    public func html() throws -> String { try evaluate("document.documentElement.outerHTML") as? String ?? "" }

    /// Waits until `condition` (a JavaScript expression) is true in the page, or `seconds` pass.
    @discardableResult
    public func wait(until condition: String, within seconds: Double = 10) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            // While the page navigates, its context is gone for a moment: asked again.
            if (try? evaluate("Boolean(\(condition))")) as? Bool == true { return true }
            usleep(100_000)
        }
        return false
    }

    /// Sends a command and waits for its answer (events in between are dropped).
    @discardableResult
    public func send(_ method: String, _ parameters: [String: Any], timeout: Double = 30) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let session, !method.hasPrefix("Target.") && !method.hasPrefix("Browser.") { message["sessionId"] = session }
        let data = try JSONSerialization.data(withJSONObject: message) + [0]
        _ = data.withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            while let end = received.firstIndex(of: 0) {
                let text = Data(received[..<end])
                received.removeSubrange(...end)
                if let answer = try? JSONSerialization.jsonObject(with: text) as? [String: Any], answer["id"] as? Int == id {
                    if let error = answer["error"] { throw Failure(description: "\(method): \(error)") }
                    return answer
                }
            }
            var ready = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(answers, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "chromium closed the pipe during \(method)") }
            received += buffer[0..<count]
        }
        throw Failure(description: "no answer to \(method) within \(timeout) s")
    }
}
