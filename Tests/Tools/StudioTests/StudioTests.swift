import Foundation
import SQLiteKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `schemagen studio` as a person meets it: started on the example database the README's first
/// command makes, reached with curl and a real browser, stopped with a signal.
final class StudioProcess {
    let running: BuiltTool.Running
    /// The address it printed, token included.
    let address: String
    /// The address without the token.
    let base: String
    let startup: String

    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        running = try BuiltTool("schemagen").start(["studio"] + arguments, environment: environment)
        startup = running.read(until: { $0.contains("Stop with ^C") }, within: 60)
        guard let line = startup.split(separator: "\n").first(where: { $0.hasPrefix("Studio: ") }) else {
            kill(running.processIdentifier, SIGKILL)
            let run = running.finish()
            throw StudioTestFailure(description: "the studio did not start: \(startup) \(run.error)")
        }
        address = String(line.dropFirst("Studio: ".count))
        base = address.components(separatedBy: "/?token=")[0]
    }

    /// Stops it with a signal; what it printed, and its exit status.
    func stop(_ signal: Int32 = SIGTERM) -> BuiltTool.Run {
        kill(running.processIdentifier, signal)
        return running.finish()
    }

    deinit {
        if running.process.isRunning {
            kill(running.processIdentifier, SIGKILL)
            _ = running.finish()
        }
    }
}

struct StudioTestFailure: Error, CustomStringConvertible {
    let description: String
}

/// Runs curl; its status line's code and its body (`--cookie-jar` keeps the token's cookie).
func curl(_ url: String, jar: String? = nil) throws -> (code: Int, body: String) {
    var arguments = ["--silent", "--show-error", "--max-time", "20", "--location", "--write-out", "\n%{http_code}"]
    if let jar { arguments += ["--cookie-jar", jar, "--cookie", jar] }
    let run = try runProgram("/usr/bin/curl", arguments + [url], in: temporaryFolder())
    let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false)
    return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
}

/// The example database: every schema migrated, and the flights dataset loaded by `flights`.
func exampleDatabase() throws -> String {
    let path = temporaryFolder().appendingPathComponent("examples.sqlite").path
    let up = try BuiltTool("migrate").run(["up", "--database", path])
    guard up.status == 0 else { throw StudioTestFailure(description: "migrate up: \(up.error)") }
    let load = try BuiltTool("flights").run(["load", "Tests/Fixtures/Flights", "--database", path])
    guard load.status == 0 else { throw StudioTestFailure(description: "flights load: \(load.error)") }
    return path
}

/// Waits for a condition (JavaScript) in the page; an issue with the page when it never holds.
func expectPage(_ browser: ChromiumSession, _ condition: String, within seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) throws {
    guard try !browser.wait(until: condition, within: seconds) else { return }
    Issue.record("the page never had \(condition): \(try browser.html().suffix(1500))", sourceLocation: sourceLocation)
}

/// Every match of a pattern's first group.
func captures(_ pattern: String, in text: String) -> [String] {
    let regex = try! NSRegularExpression(pattern: pattern)
    return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
        Range(match.range(at: 1), in: text).map { String(text[$0]) }
    }
}

@Suite(.serialized) struct StudioTests {
    /// The newcomer's path: the README's database, the printed address, the flights.
    @Test func aNewcomerBrowsesTheFlightsWithTheToken() throws {
        let database = try exampleDatabase()
        let studio = try StudioProcess(["--database", database])
        #expect(studio.startup.contains("Flights v5"), "\(studio.startup)")
        // No token, a wrong one: 401 and no data.
        let none = try curl(studio.base + "/e/Flights/Airport")
        #expect(none.code == 401 && !none.body.contains("KSFO"), "\(none)")
        let wrong = try curl(studio.base + "/?token=0000")
        #expect(wrong.code == 401)
        // The printed address sets the cookie; later pages need only that.
        let jar = temporaryFolder().appendingPathComponent("cookies").path
        let home = try curl(studio.address, jar: jar)
        #expect(home.code == 200 && home.body.contains(">Flights</h2>"), "\(home.body.prefix(500))")
        let connection = try SQLiteConnection(path: database, readOnly: true)
        func count(_ sql: String) throws -> Int {
            guard case .integer(let value)? = try connection.query(sql).first?.first else { return -1 }
            return Int(value)
        }
        for (entity, table) in [("Airport", "airports"), ("Airline", "airlines"), ("Flight", "flights")] {
            #expect(home.body.contains("<a href=\"/e/Flights/\(entity)\">\(entity)</a></td><td class=\"number\">\(try count("SELECT count(*) FROM \(table)"))</td>"), "\(entity)")
        }
        // Each entity links to its diagram and docs in the schema site, served by the studio.
        let docs = try #require(captures("<a href=\"(/site/Flights\\.html#entity-Flight)\"", in: home.body).first, "\(home.body.prefix(2000))")
        let site = try curl(studio.base + docs, jar: jar)
        #expect(site.code == 200 && site.body.contains("id=\"entity-Flight\""), "\(site.body.prefix(300))")
        // Sorted by distance, longest first, ten a page: the cursor links reach every flight once.
        var idents: [String] = []
        var page = "/e/Flights/Flight?sort=route_distance&dir=desc&limit=10"
        var pages = 0
        while pages < 10 {
            let list = try curl(studio.base + page, jar: jar)
            #expect(list.code == 200 && list.body.contains("aria-sort=\"descending\""))
            idents += captures("<tr><td><a href=\"/r/Flights/Flight\\?k\\.id=\\d+\">\\d+</a></td><td>([^<]*)</td>", in: list.body)
            pages += 1
            guard let next = captures("rel=\"next\" href=\"([^\"]*)\"", in: list.body).first else { break }
            page = next.replacingOccurrences(of: "&amp;", with: "&")
        }
        #expect(idents.count == (try count("SELECT count(*) FROM flights")) && Set(idents).count == idents.count, "\(idents)")
        // A filter, as the store runs it.
        let united = try curl(studio.base + "/e/Flights/Flight?op.ident=contains&v.ident=ua", jar: jar)
        let expected = try count("SELECT count(*) FROM flights WHERE lower(ident) LIKE '%ua%'")
        #expect(united.body.contains("\(expected) of \(try count("SELECT count(*) FROM flights")) records match"), "\(united.body.prefix(300))")
        let bad = try curl(studio.base + "/e/Flights/Flight?op.route_distance=eq&v.route_distance=far", jar: jar)
        #expect(bad.code == 400 && bad.body.contains("&#39;far&#39; is not a value of routeDistance"), "\(bad.body)")
        // A relationship both ways: a flight's origin is its airport's page, whose flights list
        // holds that flight.
        guard case .integer(let flightID)? = try connection.query("SELECT id FROM flights WHERE origin_id IS NOT NULL LIMIT 1").first?.first,
            case .integer(let originID)? = try connection.query("SELECT origin_id FROM flights WHERE id = \(flightID)").first?.first,
            case .text(let icao)? = try connection.query("SELECT icao FROM airports WHERE id = \(originID)").first?.first
        else {
            Issue.record("the dataset has a flight with an origin")
            return
        }
        let flight = try curl(studio.base + "/r/Flights/Flight?k.id=\(flightID)", jar: jar)
        let originLink = try #require(captures("<a href=\"(/r/Flights/Airport\\?k\\.id=\(originID))\" title=\"Airport\">", in: flight.body).first, "\(flight.body)")
        let airport = try curl(studio.base + originLink, jar: jar)
        #expect(airport.body.contains(icao))
        let flightsLink = try #require(captures("<dt>flightsFrom</dt><dd><a href=\"([^\"]*)\">", in: airport.body).first, "\(airport.body)").replacingOccurrences(of: "&amp;", with: "&")
        let fromThere = try curl(studio.base + flightsLink, jar: jar)
        let departing = try count("SELECT count(*) FROM flights WHERE origin_id = \(originID)")
        #expect(fromThere.body.contains("\(departing) of"), "\(fromThere.body.prefix(400))")
        #expect(fromThere.body.contains("/r/Flights/Flight?k.id=\(flightID)\""))

        // The list as filtered and sorted, exported whole: CSV and JSON.
        let csv = try curl(studio.base + "/x/Flights/Flight.csv?op.ident=contains&v.ident=ua&sort=ident&dir=asc", jar: jar)
        let lines = csv.body.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(csv.code == 200 && lines.count == expected + 1 && lines.first?.hasPrefix("id,ident,") == true, "\(csv.body.prefix(400))")
        let json = try curl(studio.base + "/x/Flights/Flight.json?op.ident=contains&v.ident=ua&sort=ident&dir=asc", jar: jar)
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [[String: Any]], "\(json.body.prefix(300))")
        #expect(objects.count == expected && objects.map { $0["ident"] as? String ?? "" } == objects.map { $0["ident"] as? String ?? "" }.sorted())
        #expect(objects.first?["id"] is Int, "numbers stay numbers")

        let stopped = studio.stop(SIGTERM)
        #expect(stopped.status == 0 && stopped.error.contains("studio stopped (SIGTERM)"), "\(stopped.error)")
    }

    /// A real browser: the printed address, followed through the cookie redirect, shows the
    /// entities; a page without the token shows none. The list is saved as a picture.
    @Test(.enabled(if: HeadlessChromium.path != nil, Comment(rawValue: HeadlessChromium.skipReason)))
    func aBrowserOpensThePrintedAddress() throws {
        let database = try exampleDatabase()
        let studio = try StudioProcess(["--database", database])
        defer { _ = studio.stop(SIGINT) }
        let home = try HeadlessChromium.run(studio.address)
        #expect(home.status == 0 && home.dom.contains("<a href=\"/e/Flights/Flight\">Flight</a>"), "\(home.dom.prefix(600))")
        let denied = try HeadlessChromium.run(studio.base + "/e/Flights/Airport")
        #expect(denied.dom.contains("Token needed") && !denied.dom.contains("KSFO"))
        // The pictures in docs/studio.md come from here: with SCHEMAGEN_STUDIO_SCREENSHOTS set
        // to a folder (never in CI, which must not write into the work tree), they go there.
        let folder = ProcessInfo.processInfo.environment["SCHEMAGEN_STUDIO_SCREENSHOTS"].map { URL(fileURLWithPath: $0) } ?? temporaryFolder()
        for (name, path) in [("studio-home.png", "/?token="), ("studio-flights.png", "/e/Flights/Flight?sort=route_distance&dir=desc&limit=12&token=")] {
            let picture = folder.appendingPathComponent(name).path
            let shot = try HeadlessChromium.run(studio.address.replacingOccurrences(of: "/?token=", with: path), screenshot: picture, windowSize: "1280,760")
            #expect(shot.status == 0 && (try? Data(contentsOf: URL(fileURLWithPath: picture)))?.starts(with: [0x89, 0x50, 0x4E, 0x47]) == true)
        }
    }

    /// The same pages on PostgreSQL, and the URL's password in no output and no page.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func theFlightsOnPostgreSQLWithoutThePasswordAnywhere() throws {
        let plain = try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        // The test server trusts every connection: any password is accepted, and must not show.
        let url = plain.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:Sup3rSecretPw@")
        let up = try BuiltTool("migrate").run(["up", "--database", url, "--dir", "Migrations/Flights"])
        #expect(up.status == 0, "\(up.error)")
        let load = try BuiltTool("flights").run(["load", "Tests/Fixtures/Flights", "--database", url])
        #expect(load.status == 0, "\(load.error)")
        let studio = try StudioProcess(["--database", url, "--schema", "Schemas/Flights.yaml"])
        let jar = temporaryFolder().appendingPathComponent("jar").path
        let home = try curl(studio.address, jar: jar)
        #expect(home.body.contains("<a href=\"/e/Flights/Flight\">Flight</a></td><td class=\"number\">30</td>"), "\(home.body.prefix(600))")
        var idents: [String] = []
        var page = "/e/Flights/Flight?sort=route_distance&dir=desc&limit=7"
        for _ in 0..<10 {
            let list = try curl(studio.base + page, jar: jar)
            #expect(!list.body.contains("Sup3rSecretPw"))
            idents += captures("<tr><td><a href=\"/r/Flights/Flight\\?k\\.id=\\d+\">\\d+</a></td><td>([^<]*)</td>", in: list.body)
            guard let next = captures("rel=\"next\" href=\"([^\"]*)\"", in: list.body).first else { break }
            page = next.replacingOccurrences(of: "&amp;", with: "&")
        }
        #expect(idents.count == 30 && Set(idents).count == 30, "\(idents)")
        let united = try curl(studio.base + "/e/Flights/Flight?op.ident=contains&v.ident=UA", jar: jar)
        #expect(united.body.contains(" of 30 records match"), "\(united.body.prefix(400))")
        let stopped = studio.stop(SIGINT)
        #expect(stopped.status == 0)
        for text in [studio.startup, stopped.output, stopped.error, home.body] { #expect(!text.contains("Sup3rSecretPw"), "\(text.prefix(300))") }
    }

    /// The browser on PostgreSQL, through a multi-host URL whose first host is down (and no
    /// password anywhere on the pages), and on SQLite: the same walk through.
    @Test(.enabled(if: PostgresServer.available && HeadlessChromium.path != nil, Comment(rawValue: PostgresServer.skipReason + " / " + HeadlessChromium.skipReason)))
    func theBrowserOnPostgreSQLThroughAMultiHostURL() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let plain = try server.createDatabase()
        for dir in ["Migrations/Flights", "Migrations/Garage"] {
            let up = try BuiltTool("migrate").run(["up", "--database", plain, "--dir", dir])
            #expect(up.status == 0, "\(up.error)")
        }
        #expect(try BuiltTool("flights").run(["load", "Tests/Fixtures/Flights", "--database", plain]).status == 0)
        // Port 1 refuses at once: libpq goes on to the next host, as on a cluster whose first node is down.
        let url = plain.replacingOccurrences(of: "postgresql://postgres@127.0.0.1:", with: "postgresql://postgres:Sup3rSecretPw@127.0.0.1:1,127.0.0.1:")
        try walkThrough(database: url, writable: ["--allow-writes"], readOnly: [], isPostgres: true) { sql in
            try runProgram("/usr/bin/psql", [plain, "-tAX", "-v", "ON_ERROR_STOP=1", "-c", sql], in: temporaryFolder()).output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test(.enabled(if: HeadlessChromium.path != nil, Comment(rawValue: HeadlessChromium.skipReason)))
    func theBrowserOnSQLite() throws {
        let database = try exampleDatabase()
        let connection = try SQLiteConnection(path: database)
        try walkThrough(database: database, writable: [], readOnly: ["--read-only"], isPostgres: false) { sql in
            guard !sql.contains(";") else {
                try connection.execute(sql)
                return ""
            }
            return try connection.query(sql).first?.first.map(StudioTests.text) ?? ""
        }
    }

    static func text(_ value: SQLiteValue) -> String {
        switch value {
        case .null: ""
        case .integer(let number): String(number)
        case .real(let number): String(number)
        case .text(let text): text
        case .blob(let bytes): "\(bytes.count) bytes"
        }
    }

    /// The token, a filter, a sort and its next page, a relationship both ways (a to-one and a
    /// many-to-many), an edit found in the database and in the history, another process's
    /// write arriving live, a stale edit refused; read-only, and a wrong token.
    func walkThrough(database url: String, writable: [String], readOnly: [String], isPostgres: Bool, value: (String) throws -> String) throws {
        _ = try value(
            """
            INSERT INTO people (id, full_name) VALUES (1, 'Ann');
            INSERT INTO car (id, vin, make, model, owner_id) VALUES (1, 'V1', 'Ford', 'T', 1), (2, 'V2', 'Fiat', '500', 1);
            INSERT INTO mechanic (id, name) VALUES (1, 'Bo'), (2, 'Cy'), (3, 'Di');
            INSERT INTO car_mechanics VALUES (1, 1), (1, 2), (2, 3)
            """)
        let schemas = ["--schema", "Schemas/Flights.yaml", "--schema", "Schemas/Garage.yaml"]
        let studio = try StudioProcess(["--database", url] + writable + schemas)
        defer { _ = studio.stop() }
        #expect(!studio.startup.contains("Sup3rSecretPw"), "\(studio.startup)")
        let browser = try ChromiumSession(opening: studio.address)
        defer { browser.close() }
        try expectPage(browser, "document.querySelector('a[href=\"/e/Flights/Flight\"]') !== null")
        try browser.act("location.href = '/e/Flights/Flight?limit=10'")
        try expectPage(browser, "document.body.innerText.includes('30 records')")
        // A sort by clicking its heading, then the next page by its link.
        try browser.act("document.querySelector('th a[href*=\"sort=route_distance\"]').click()")
        // The whole page, not a URL or heading that arrived before the table did.
        try expectPage(browser, "document.readyState === 'complete' && document.querySelector('th[aria-sort=\"ascending\"]') !== null")
        let firstPage = try browser.evaluate("[...document.querySelectorAll('table.records tbody tr')].map(r => r.cells[0].innerText).join(',')") as? String ?? ""
        try browser.act("document.querySelector('a[rel=next]').click()")
        try expectPage(browser, "location.search.includes('after=') && document.readyState === 'complete' && document.querySelectorAll('table.records tbody tr').length > 0")
        let secondPage = try browser.evaluate("[...document.querySelectorAll('table.records tbody tr')].map(r => r.cells[0].innerText).join(',')") as? String ?? ""
        #expect(!firstPage.isEmpty && !secondPage.isEmpty && Set(firstPage.split(separator: ",")).isDisjoint(with: secondPage.split(separator: ",")), "\(firstPage) / \(secondPage)")
        let shortest =
            isPostgres
            ? try value(
                "SELECT string_agg(id::text, ',' ORDER BY route_distance NULLS FIRST, id) FROM (SELECT id, route_distance FROM flights ORDER BY route_distance NULLS FIRST, id LIMIT 10) AS first")
            : try value("SELECT group_concat(id, ',') FROM (SELECT id FROM flights ORDER BY route_distance NULLS FIRST, id LIMIT 10)")
        #expect(firstPage == shortest, "\(firstPage) / \(shortest)")
        // A filter from the form.
        try browser.act(
            "document.querySelector('details').open = true; document.getElementById('f-ident-op').value = 'contains'; document.getElementById('f-ident').value = 'ua'; document.querySelector('details form button[type=submit]').click()"
        )
        let united = try value("SELECT count(*) FROM flights WHERE lower(ident) LIKE '%ua%'")
        try expectPage(browser, "document.body.innerText.includes('\(united) of 30 records match')")
        // A to-one link and back through the to-many list.
        let flightID = try value("SELECT id FROM flights WHERE origin_id IS NOT NULL ORDER BY id LIMIT 1")
        let originID = try value("SELECT origin_id FROM flights WHERE id = \(flightID)")
        try browser.act("location.href = '/r/Flights/Flight?k.id=\(flightID)'")
        try expectPage(browser, "document.readyState === 'complete' && document.querySelector('a[title=Airport]') !== null")
        // Followed by its address, not a click: a live refresh of the page (another write
        // committing) can replace the element between finding and clicking it.
        try browser.act("location.href = document.querySelector('a[title=Airport]').href")
        try expectPage(browser, "document.readyState === 'complete' && location.pathname === '/r/Flights/Airport' && location.search === '?k.id=\(originID)'")
        try browser.act("location.href = [...document.querySelectorAll('dt')].find(d => d.textContent === 'flightsFrom').nextElementSibling.querySelector('a').href")
        try expectPage(browser, "document.readyState === 'complete' && location.pathname === '/e/Flights/Flight' && document.querySelector('a[href=\"/r/Flights/Flight?k.id=\(flightID)\"]') !== null")
        #expect(try browser.html().contains("\(try value("SELECT count(*) FROM flights WHERE origin_id = \(originID)")) of 30 records match"))
        // A many-to-many link, both ways: a car's mechanics, and one mechanic's cars.
        try browser.act("location.href = '/r/Garage/Car?k.id=1'")
        try expectPage(browser, "document.body.innerText.includes('Mechanic list')")
        try browser.act("location.href = [...document.querySelectorAll('dt')].find(d => d.textContent === 'mechanics').nextElementSibling.querySelector('a').href")
        try expectPage(browser, "document.body.innerText.includes('Only those linked to Car 1')")
        let mechanics = try browser.evaluate("[...document.querySelectorAll('table.records tbody tr')].map(r => r.cells[1].innerText).join(',')") as? String
        #expect(mechanics == "Bo,Cy", "\(String(describing: mechanics))")
        try browser.act("location.href = document.querySelector('a[href=\"/r/Garage/Mechanic?k.id=2\"]').href")
        try expectPage(browser, "document.body.innerText.includes('Car list')")
        try browser.act("location.href = [...document.querySelectorAll('dt')].find(d => d.textContent === 'cars').nextElementSibling.querySelector('a').href")
        try expectPage(browser, "document.body.innerText.includes('Only those linked to Mechanic 2') && document.body.innerText.includes('1 of 2 records match')")
        // An edit, in the database and in the history under `studio`.
        let airport = try value("SELECT min(id) FROM airports")
        try browser.act("location.href = '/r/Flights/Airport?k.id=\(airport)'")
        try expectPage(browser, "document.getElementById('c-name') !== null")
        try browser.act("document.getElementById('c-name').value = 'Edited on the server'; document.querySelector('#edit ~ form button[type=submit]').click()")
        try expectPage(browser, "document.body.innerText.includes('Saved.') && document.body.innerText.includes('name = Edited on the server')")
        #expect(try value("SELECT name FROM airports WHERE id = \(airport)") == "Edited on the server")
        #expect(try browser.html().contains("<td>studio</td><td>update</td>"))
        // Another process's write arrives in the open list; then, with the form focused, a
        // save over that change is refused showing both values.
        let other = try StudioProcess(["--database", url] + writable + schemas)
        defer { _ = other.stop() }
        let jar = temporaryFolder().appendingPathComponent("jar").path
        _ = try curl(other.address, jar: jar)
        func post(_ name: String, to key: String) throws -> String {
            let page = try curl(other.base + "/r/Flights/Airport?k.id=\(key)", jar: jar)
            let version = try #require(captures("name=\"version\" value=\"([^\"]*)\"", in: page.body).first)
            return try runProgram(
                "/usr/bin/curl",
                [
                    "--silent", "--cookie", jar, "--write-out", "%{http_code}", "--output", "/dev/null", "--data-urlencode", "version=\(version)", "--data-urlencode", "c.name=\(name)",
                    other.base + "/r/Flights/Airport?k.id=\(key)",
                ],
                in: temporaryFolder()
            ).output
        }
        try browser.act("location.href = '/e/Flights/Airport?limit=100'")
        try expectPage(browser, "document.readyState === 'complete' && location.pathname === '/e/Flights/Airport' && document.body.innerText.includes('Edited on the server')")
        #expect(try post("Renamed by another process", to: airport) == "303")
        try expectPage(browser, "document.body.innerText.includes('Renamed by another process')", within: 5)
        try browser.act("location.href = '/r/Flights/Airport?k.id=\(airport)'")
        try expectPage(browser, "document.getElementById('c-name') !== null")
        try browser.evaluate("document.getElementById('c-name').focus(); true")
        #expect(try post("Someone else", to: airport) == "303")
        try expectPage(browser, "document.getElementById('live').textContent.includes('reload to see it')")
        try browser.act("document.getElementById('c-name').value = 'My late edit'; document.querySelector('#edit ~ form button[type=submit]').click()")
        try expectPage(browser, "document.body.innerText.includes('Changed meanwhile')")
        #expect(try browser.html().contains("Someone else"))
        #expect(try value("SELECT name FROM airports WHERE id = \(airport)") == "Someone else")
        // Read-only (a URL without --allow-writes); a wrong token sees nothing.
        let readOnly = try StudioProcess(["--database", url] + readOnly + schemas)
        defer { _ = readOnly.stop() }
        let readOnlyJar = temporaryFolder().appendingPathComponent("jar").path
        _ = try curl(readOnly.address, jar: readOnlyJar)
        let shown = try curl(readOnly.base + "/r/Flights/Airport?k.id=\(airport)", jar: readOnlyJar)
        #expect(shown.body.contains("Read-only") && !shown.body.contains("name=\"version\""), "\(shown.body.suffix(600))")
        let refused = try runProgram(
            "/usr/bin/curl", ["--silent", "--cookie", readOnlyJar, "--write-out", "%{http_code}", "--output", "/dev/null", "--data", "c.name=x", readOnly.base + "/r/Flights/Airport?k.id=\(airport)"],
            in: temporaryFolder())
        #expect(refused.output == "403")
        let wrong = try HeadlessChromium.run(readOnly.base + "/e/Flights/Airport?token=0000")
        #expect(wrong.dom.contains("Token needed") && !wrong.dom.contains("Someone else"), "\(wrong.dom.prefix(400))")
    }

    /// A page follows the store's change feed: a write from another process shows in the open
    /// page without a reload, within a second or two. A record's page shows its history.
    @Test(.enabled(if: HeadlessChromium.path != nil, Comment(rawValue: HeadlessChromium.skipReason)))
    func anOpenPageShowsAnotherProcesssWriteAndARecordItsHistory() throws {
        let folder = temporaryFolder()
        let database = folder.appendingPathComponent("todo.sqlite").path
        let keys = ["SCHEMAGEN_KEYS": "k1=" + Data((0..<32).map { UInt8($0) }).base64EncodedString()]
        let added = try BuiltTool("todo").run(["add", "pay", "rent", "--database", database], environment: keys)
        let id = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(added.status == 0 && id.count == 36, "\(added.error)")
        #expect(try BuiltTool("todo").run(["done", String(id.prefix(8)), "--database", database, "--author", "alice"], environment: keys).status == 0)
        let studio = try StudioProcess(["--database", database, "--schema", "Schemas/Todo.yaml"], environment: keys)
        defer { _ = studio.stop() }
        let browser = try ChromiumSession(opening: studio.address.replacingOccurrences(of: "/?token=", with: "/e/Todo/TodoItem?token="))
        defer { browser.close() }
        let loaded = try browser.wait(until: "document.body && document.body.innerText.includes('pay rent')")
        let first = try browser.html()
        #expect(loaded, "\(first.prefix(500))")
        let written = Date()
        #expect(try BuiltTool("todo").run(["add", "water", "the", "plants", "--database", database], environment: keys).status == 0)
        let arrived = try browser.wait(until: "document.body.innerText.includes('water the plants')", within: 10)
        let after = try browser.html()
        #expect(arrived, "\(after.suffix(1500))")
        #expect(Date().timeIntervalSince(written) < 5)
        #expect(try browser.evaluate("document.getElementById('live').textContent") as? String ?? "" != "", "the change is announced")
        // Nine tabs open on the studio: each loads (the pages share one event stream; a
        // browser opens six connections to a host), and a write arrives in the last one.
        var tabs: [String] = []
        for _ in 0..<8 { tabs.append(try browser.openTab(studio.base + "/e/Todo/TodoItem")) }
        for tab in tabs {
            browser.switchTo(tab)
            try expectPage(browser, "document.body && document.body.innerText.includes('water the plants')")
        }
        #expect(try BuiltTool("todo").run(["add", "feed", "the", "cat", "--database", database], environment: keys).status == 0)
        try expectPage(browser, "document.body.innerText.includes('feed the cat')")
        browser.switchTo(browser.firstTab)
        // The record's history: the insert by `todo`, the update by alice.
        let jar = folder.appendingPathComponent("jar").path
        _ = try curl(studio.address, jar: jar)
        let record = try curl(studio.base + "/r/Todo/TodoItem?k.id=\(id)", jar: jar)
        let history = try #require(record.body.components(separatedBy: "id=\"history\"").last)
        #expect(history.contains("<td>alice</td><td>update</td><td>isCompleted = true"), "\(history)")
        #expect(history.contains("<td>todo</td><td>insert</td>"))
        // A page carries where its data was read; a commit after that and before the page's
        // event stream connects still reaches it.
        let before = try curl(studio.base + "/e/Todo/TodoItem", jar: jar)
        let since = try #require(captures("data-since=\"([^\"]*)\"", in: before.body).first, "\(before.body.prefix(400))")
        #expect(since.hasPrefix("Todo:"), "\(since)")
        // A deleted record stays in the list's history, with the values it kept.
        #expect(try BuiltTool("todo").run(["remove", String(id.prefix(8)), "--database", database, "--author", "bob"], environment: keys).status == 0)
        let late = try runProgram(
            "/usr/bin/curl", ["--silent", "--max-time", "3", "--cookie", jar, studio.base + "/events?since=" + since.replacingOccurrences(of: ":", with: "%3A")], in: folder)
        #expect(late.output.contains("event: change\nid: Todo:") && late.output.contains("data: {\"schema\":\"Todo\",\"entities\":[\"TodoItem\"]"), "\(late.output)")
        let list = try curl(studio.base + "/e/Todo/TodoItem", jar: jar)
        #expect(list.body.contains("<summary>Recently deleted (1)</summary>") && list.body.contains("<td>bob</td><td>\(id)</td><td>taskName = pay rent</td>"), "\(list.body.suffix(1200))")
        // An export writes Booleans as words and enum values by their case names, as the page shows them.
        let exported = try curl(studio.base + "/x/Todo/TodoItem.csv", jar: jar)
        let plants = try #require(exported.body.components(separatedBy: "\r\n").first { $0.contains("water the plants") }, "\(exported.body)")
        #expect(plants.contains(",false"), "\(plants)")
        // Its own page says it was deleted, and shows its history.
        let tombstone = try curl(studio.base + "/r/Todo/TodoItem?k.id=\(id)", jar: jar)
        #expect(tombstone.code == 404 && tombstone.body.contains("was deleted") && tombstone.body.contains("<td>bob</td><td>delete</td>"), "\(tombstone.body.suffix(1200))")
        // Searchable attributes get a search box; the store's full-text search answers it.
        let search = try curl(studio.base + "/e/Todo/TodoItem?q=plants", jar: jar)
        #expect(search.body.contains("<label for=\"q\">Search</label>") && search.body.contains("1 best matches for “plants”"), "\(search.body.prefix(1200))")
        #expect(search.body.contains("water the plants") && !search.body.contains("pay rent"))
    }

    /// Edits in the browser go through the store: a saved value is in the database and in the
    /// history under `studio`; a save over a record someone else changed since is refused with
    /// both values; a delete shows its rules first; an insert takes the form's values. Read-only
    /// mode and a wrong token refuse writes.
    @Test(.enabled(if: HeadlessChromium.path != nil, Comment(rawValue: HeadlessChromium.skipReason)))
    func editsInTheBrowserGoThroughTheStore() throws {
        let database = try exampleDatabase()
        let connection = try SQLiteConnection(path: database, readOnly: true)
        func text(_ sql: String) throws -> String? { if case .text(let value)? = try connection.query(sql).first?.first { value } else { nil } }
        func number(_ sql: String) throws -> Int64? { if case .integer(let value)? = try connection.query(sql).first?.first { value } else { nil } }
        guard let airport = try number("SELECT origin_id FROM flights WHERE origin_id IS NOT NULL GROUP BY origin_id ORDER BY count(*) DESC LIMIT 1") else {
            Issue.record("an airport with flights")
            return
        }
        let departing = try number("SELECT count(*) FROM flights WHERE origin_id = \(airport)") ?? 0
        let studio = try StudioProcess(["--database", database, "--schema", "Schemas/Flights.yaml"])
        defer { _ = studio.stop() }
        let recordPath = "/r/Flights/Airport?k.id=\(airport)&token="
        let browser = try ChromiumSession(opening: studio.address.replacingOccurrences(of: "/?token=", with: recordPath.replacingOccurrences(of: "&token=", with: "&token=")))
        defer { browser.close() }
        try expectPage(browser, "document.getElementById('c-name') !== null")
        try browser.act("document.getElementById('c-name').value = 'Edited in a browser'; document.querySelector('#edit ~ form button[type=submit]').click()")
        try expectPage(browser, "document.body.innerText.includes('Saved.')")
        #expect(try text("SELECT name FROM airports WHERE id = \(airport)") == "Edited in a browser")
        try expectPage(browser, "document.body.innerText.includes('studio') && document.body.innerText.includes('name = Edited in a browser')")
        // Someone else saves while the person is in the form (so the page is not refreshed
        // under them, it only says that something changed): their form is now stale.
        try browser.evaluate("document.getElementById('c-name').focus(); true")
        let jar = temporaryFolder().appendingPathComponent("jar").path
        _ = try curl(studio.address, jar: jar)
        let page = try curl(studio.base + "/r/Flights/Airport?k.id=\(airport)", jar: jar)
        let version = try #require(captures("name=\"version\" value=\"([^\"]*)\"", in: page.body).first)
        let other = try runProgram(
            "/usr/bin/curl",
            [
                "--silent", "--cookie", jar, "--write-out", "%{http_code}", "--output", "/dev/null", "--data-urlencode", "version=\(version)", "--data-urlencode", "c.name=Someone else",
                studio.base + "/r/Flights/Airport?k.id=\(airport)",
            ], in: temporaryFolder())
        #expect(other.output == "303", "\(other.output)")
        try expectPage(browser, "document.getElementById('live').textContent.includes('reload to see it')")
        try browser.act("document.getElementById('c-name').value = 'My late edit'; document.querySelector('#edit ~ form button[type=submit]').click()")
        try expectPage(browser, "document.body.innerText.includes('Changed meanwhile')")
        let conflict = try browser.html()
        #expect(conflict.contains("My late edit") && conflict.contains("Someone else"))
        #expect(try text("SELECT name FROM airports WHERE id = \(airport)") == "Someone else")
        // A delete says what its rules will do, then does it.
        try browser.act("location.href = document.querySelector('a[href^=\"/d/\"]').getAttribute('href')")
        try expectPage(browser, "document.body.innerText.includes('kept, their link cleared (nullify)')")
        #expect(try browser.html().contains("<td class=\"number\">\(departing) Flight</td>"))
        try browser.act("document.querySelector('form button[type=submit]').click()")
        try expectPage(browser, "document.readyState === 'complete' && location.pathname === '/e/Flights/Airport'")
        #expect(try number("SELECT count(*) FROM airports WHERE id = \(airport)") == 0)
        #expect(try number("SELECT count(*) FROM flights WHERE origin_id IS NULL") ?? 0 >= departing)
        // A new airport from the form.
        try browser.act("location.href = '/n/Flights/Airport'")
        try expectPage(browser, "document.getElementById('c-icao') !== null")
        try browser.act("document.getElementById('c-icao').value = 'KNEW'; document.getElementById('c-name').value = 'New Field'; document.querySelector('form button[type=submit]').click()")
        try expectPage(browser, "document.body.innerText.includes('Saved.')")
        #expect(try text("SELECT name FROM airports WHERE icao = 'KNEW'") == "New Field")
        // A wrong token writes nothing.
        let forged = try runProgram(
            "/usr/bin/curl",
            ["--silent", "--write-out", "%{http_code}", "--output", "/dev/null", "--cookie", "schemagen_studio=nope", "--data", "c.name=x", studio.base + "/r/Flights/Airport?k.id=1"],
            in: temporaryFolder())
        #expect(forged.output == "401")

        let readOnly = try StudioProcess(["--database", database, "--schema", "Schemas/Flights.yaml", "--read-only"])
        defer { _ = readOnly.stop() }
        let readOnlyJar = temporaryFolder().appendingPathComponent("jar").path
        _ = try curl(readOnly.address, jar: readOnlyJar)
        let kept = try number("SELECT min(id) FROM airports") ?? 0
        let shown = try curl(readOnly.base + "/r/Flights/Airport?k.id=\(kept)", jar: readOnlyJar)
        #expect(shown.body.contains("Read-only: started with --read-only") && !shown.body.contains("name=\"version\""))
        let refused = try runProgram(
            "/usr/bin/curl", ["--silent", "--cookie", readOnlyJar, "--write-out", "%{http_code}", "--output", "/dev/null", "--data", "c.name=x", readOnly.base + "/r/Flights/Airport?k.id=\(kept)"],
            in: temporaryFolder())
        #expect(refused.output == "403")
    }

    /// What a support engineer meets on a real database: a refused edit says why and keeps
    /// what was typed (a wrong date, a number too wide, a day not on the calendar, a taken
    /// unique value); a row whose file is gone still shows and can be deleted; dates filter as
    /// dates; a damaged page link is the request's mistake; the token's redirect stays on the
    /// studio; a search exports its matches; stopping does not wait for an open live page.
    @Test func refusalsMissingFilesAndDatesAsASupportEngineerMeetsThem() throws {
        let database = try exampleDatabase()
        let connection = try SQLiteConnection(path: database)
        func text(_ sql: String) throws -> String? { if case .text(let value)? = try connection.query(sql).first?.first { value } else { nil } }
        func number(_ sql: String) throws -> Int64? { if case .integer(let value)? = try connection.query(sql).first?.first { value } else { nil } }
        try connection.execute(
            """
            INSERT INTO people (id, full_name) VALUES (1, 'Ann');
            INSERT INTO car (id, vin, make, model, owner_id, photo) VALUES (1, 'V1', 'Ford', 'T', 1, 'nonexistent-file'), (2, 'V2', 'Fiat', '500', 1, NULL);
            INSERT INTO mechanic (id, name, hired_on) VALUES (1, 'Bo', '2024-01-02')
            """)
        let studio = try StudioProcess(["--database", database])
        let jar = temporaryFolder().appendingPathComponent("jar").path
        _ = try curl(studio.address, jar: jar)
        /// Posts a record's form with `fields` over what its page shows; the status and body.
        func save(_ path: String, _ fields: [(String, String)]) throws -> (code: Int, body: String) {
            let page = try curl(studio.base + path, jar: jar)
            let version = try #require(captures("name=\"version\" value=\"([^\"]*)\"", in: page.body).first, "\(page.body.suffix(800))")
            let run = try runProgram(
                "/usr/bin/curl",
                ["--silent", "--cookie", jar, "--write-out", "\n%{http_code}", "--data-urlencode", "version=\(version)"] + fields.flatMap { ["--data-urlencode", "\($0.0)=\($0.1)"] } + [
                    studio.base + path
                ],
                in: temporaryFolder())
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }
        let flight = try #require(try number("SELECT id FROM flights ORDER BY id LIMIT 1"))
        let before = try text("SELECT actual_off FROM flights WHERE id = \(flight)")
        let garbage = try save("/r/Flights/Flight?k.id=\(flight)", [("c.actual_off", "garbage")])
        #expect(garbage.code == 422 && garbage.body.contains("Flight.actualOff takes a date") && garbage.body.contains("value=\"garbage\""), "\(garbage.body.suffix(1500))")
        #expect(try text("SELECT actual_off FROM flights WHERE id = \(flight)") == before)
        #expect(try save("/r/Flights/Flight?k.id=\(flight)", [("c.actual_off", "2024-03-01T06:37:00Z")]).code == 303)
        #expect(try text("SELECT actual_off FROM flights WHERE id = \(flight)") == "2024-03-01T06:37:00.000Z")
        let taken = try #require(try text("SELECT ident FROM flights WHERE id <> \(flight) LIMIT 1"))
        let duplicate = try save("/r/Flights/Flight?k.id=\(flight)", [("c.ident", taken)])
        #expect(duplicate.code == 422 && duplicate.body.contains("the database refused it") && !duplicate.body.contains("UPDATE "), "\(duplicate.body.suffix(1200))")
        #expect(try save("/r/Garage/Car?k.id=2", [("c.mileage", "5000000000")]).body.contains("Car.mileage takes a whole number from -2147483648 to 2147483647"))
        #expect(try save("/r/Garage/Mechanic?k.id=1", [("c.hired_on", "2024-02-30")]).code == 422)
        #expect(try text("SELECT hired_on FROM mechanic WHERE id = 1") == "2024-01-02")

        // Dates filter as dates: another spelling of the moment, and a whole day.
        let moment = try curl(studio.base + "/e/Flights/Flight?op.actual_off=eq&v.actual_off=2024-03-01T06:37:00%2B00:00", jar: jar)
        #expect(moment.body.contains("1 of "), "\(moment.body.prefix(600))")
        let day = try curl(studio.base + "/e/Flights/Flight?op.actual_off=range&v.actual_off=2024-03-01..2024-03-01", jar: jar)
        let onThatDay = try number("SELECT count(*) FROM flights WHERE actual_off LIKE '2024-03-01%'") ?? -1
        #expect(day.body.contains("\(onThatDay) of "), "\(day.body.prefix(600))")
        #expect(try curl(studio.base + "/e/Flights/Flight?op.actual_off=eq&v.actual_off=notadate", jar: jar).code == 400)
        #expect(try curl(studio.base + "/e/Flights/Flight?after=i1&sort=ident", jar: jar).code == 400)

        // A car whose photo file is gone: listed, said so, deleted.
        let cars = try curl(studio.base + "/e/Garage/Car", jar: jar)
        #expect(cars.code == 200 && cars.body.contains("unreadable: ") && cars.body.contains(">V2<"), "\(cars.body.suffix(1500))")
        let preview = try curl(studio.base + "/d/Garage/Car?k.id=1", jar: jar)
        #expect(preview.code == 200 && !preview.body.contains(">owner<"), "a link the car holds is no effect on its owner: \(preview.body.suffix(800))")
        let version = try #require(captures("name=\"version\" value=\"([^\"]*)\"", in: preview.body).first)
        let deleted = try runProgram(
            "/usr/bin/curl", ["--silent", "--cookie", jar, "--write-out", "%{http_code}", "--output", "/dev/null", "--data", "version=\(version)", studio.base + "/d/Garage/Car?k.id=1"],
            in: temporaryFolder())
        let remaining = try number("SELECT count(*) FROM car WHERE id = 1")
        #expect(deleted.output == "303" && remaining == 0)

        // The token's redirect never leaves the studio.
        let token = try #require(studio.address.components(separatedBy: "token=").last)
        let redirect = try runProgram("/usr/bin/curl", ["--silent", "--include", "--output", "-", studio.base + "/%2F%2Fevil.example?token=\(token)"], in: temporaryFolder())
        #expect(redirect.output.contains("Location: /evil.example\r\n"), "\(redirect.output.prefix(400))")

        // A search exports its matches.
        let searched = try curl(studio.base + "/e/Flights/Airport?q=intl", jar: jar)
        let exportLink = try #require(captures("href=\"(/x/Flights/Airport\\.csv[^\"]*)\"", in: searched.body).first).replacingOccurrences(of: "&amp;", with: "&")
        #expect(exportLink.contains("q=intl"), "\(exportLink)")
        let matches = captures("(\\d+) best matches", in: searched.body).first.flatMap { Int($0) } ?? -1
        let csv = try curl(studio.base + exportLink, jar: jar)
        #expect(csv.body.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == matches + 1, "\(matches): \(csv.body.prefix(300))")

        // A live page open does not hold up stopping.
        let events = Process()
        events.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        events.arguments = ["--silent", "--no-buffer", "--max-time", "30", "--cookie", jar, studio.base + "/events"]
        events.standardOutput = FileHandle.nullDevice
        try events.run()
        defer { if events.isRunning { events.terminate() } }
        Thread.sleep(forTimeInterval: 1)
        let stopping = Date()
        let stopped = studio.stop(SIGTERM)
        #expect(stopped.status == 0 && Date().timeIntervalSince(stopping) < 5, "\(Date().timeIntervalSince(stopping)) s")
    }

    /// Two studios at once keep their own cookies: opening the second does not sign the
    /// browser out of the first.
    @Test func twoStudiosAtOnceKeepTheirOwnCookies() throws {
        let database = try exampleDatabase()
        let first = try StudioProcess(["--database", database, "--schema", "Schemas/Flights.yaml"])
        let second = try StudioProcess(["--database", database, "--schema", "Schemas/Flights.yaml"])
        let jar = temporaryFolder().appendingPathComponent("jar").path
        #expect(try curl(first.address, jar: jar).code == 200)
        #expect(try curl(second.address, jar: jar).code == 200)
        #expect(try curl(first.base + "/e/Flights/Airport", jar: jar).code == 200)
        #expect(try curl(second.base + "/e/Flights/Airport", jar: jar).code == 200)
        _ = first.stop()
        _ = second.stop()
    }

    /// A database with none of a schema's migrations is not guessed at: the studio names the
    /// command that adopts it, and with nothing to show does not start.
    @Test func aDatabaseWithoutOurHistoryIsRefusedWithTheAdoptingCommand() throws {
        let empty = temporaryFolder().appendingPathComponent("empty.sqlite").path
        let connection = try SQLiteConnection(path: empty)
        try connection.execute("CREATE TABLE airports (id INTEGER PRIMARY KEY, icao TEXT)")
        let run = try BuiltTool("schemagen").run(["studio", "--database", empty, "--schema", "Schemas/Flights.yaml"])
        #expect(run.status == 1, "\(run.error)")
        #expect(run.error.contains("migrate baseline 5 --dir Migrations/Flights"), "\(run.error)")
        let missing = try BuiltTool("schemagen").run(["studio", "--database", empty + ".nope"])
        #expect(missing.status == 2 && missing.error.contains("does not exist"), "\(missing.error)")
    }

    /// A database behind its schema is read at its own version, with that version's recorded
    /// schema, and says so; encrypted values are locked without the key and read with it.
    @Test func anOlderDatabaseIsShownAtItsVersionAndEncryptedValuesNeedTheKey() throws {
        let folder = temporaryFolder()
        let older = folder.appendingPathComponent("todo2.sqlite").path
        #expect(try BuiltTool("migrate").run(["up", "--database", older, "--dir", "Migrations/Todo", "--to", "2"]).status == 0)
        let behind = try StudioProcess(["--database", older, "--schema", "Schemas/Todo.yaml"])
        let jar = folder.appendingPathComponent("jar").path
        let home = try curl(behind.address, jar: jar)
        #expect(home.body.contains("Version 2 <strong class=\"warn\">(the schema file is at version 4"), "\(home.body.prefix(800))")
        let columns = try curl(behind.base + "/e/Todo/TodoItem", jar: jar)
        #expect(columns.body.contains(">dueDate</a>") && !columns.body.contains(">notes</a>") && !columns.body.contains(">notes<"), "version 2 has no notes")
        _ = behind.stop()

        let current = folder.appendingPathComponent("todo.sqlite").path
        let key = "k1=" + Data((0..<32).map { UInt8($0) }).base64EncodedString()
        #expect(try BuiltTool("todo").run(["add", "pay", "rent", "--notes", "the code is 4711", "--database", current], environment: ["SCHEMAGEN_KEYS": key]).status == 0)
        let locked = try StudioProcess(["--database", current, "--schema", "Schemas/Todo.yaml"], environment: [:])
        let lockedList = try curl(locked.address.replacingOccurrences(of: "/?token=", with: "/e/Todo/TodoItem?token="), jar: folder.appendingPathComponent("jar2").path)
        #expect(lockedList.body.contains("locked") && !lockedList.body.contains("the code is") && lockedList.body.contains("pay rent"), "\(lockedList.body.suffix(800))")
        _ = locked.stop()
        let keyFile = folder.appendingPathComponent("keys").path
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyFile))
        // Readable by others: refused before anything opens, naming the file.
        chmod(keyFile, 0o644)
        let exposed = try BuiltTool("schemagen").run(["studio", "--database", current, "--schema", "Schemas/Todo.yaml", "--key-file", keyFile], environment: [:])
        #expect(exposed.status == 2 && exposed.error.contains("--key-file \(keyFile)"), "\(exposed.error)")
        chmod(keyFile, 0o600)
        let opened = try StudioProcess(["--database", current, "--schema", "Schemas/Todo.yaml", "--key-file", keyFile], environment: [:])
        let openedList = try curl(opened.address.replacingOccurrences(of: "/?token=", with: "/e/Todo/TodoItem?token="), jar: folder.appendingPathComponent("jar3").path)
        #expect(openedList.body.contains("the code is 4711"), "\(openedList.body.suffix(800))")
        _ = opened.stop()
    }
}
