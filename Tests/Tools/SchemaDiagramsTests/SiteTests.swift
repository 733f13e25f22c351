import Foundation
import SchemaKit
import TestSupport
import Testing

@testable import SchemaSite

/// `schemagen docs`: the site's content, and the site in a real browser (Debian's chromium,
/// headless), which runs its search script.
@Suite(.blocking) struct SiteTests {
    /// Every example schema in `Schemas/`, as `schemagen docs` finds them.
    static let examples = ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("Schemas").path)) ?? [])
        .filter { $0.hasSuffix(".yaml") }.map { String($0.dropLast(5)) }.sorted()

    static func schemas() throws -> [Schema] {
        let loaded = SchemaLoader.load(files: examples.map { repositoryRoot.appendingPathComponent("Schemas/\($0).yaml").path })
        #expect(!loaded.hasErrors)
        return loaded.schemas
    }

    static let chromium = HeadlessChromium.path

    @Test func theSiteHoldsEveryEntityTypeAndMigrationAndIsDeterministic() throws {
        let migrations = repositoryRoot.appendingPathComponent("Migrations").path
        let files = try Site.files(for: try Self.schemas(), migrations: migrations, layout: .plain)
        #expect(try Site.files(for: try Self.schemas(), migrations: migrations, layout: .plain) == files)
        #expect(files.map(\.path) == ["style.css", "search.js", "index.html"] + Self.examples.map { "\($0).html" })
        let flights = try #require(files.first { $0.path == "Flights.html" }?.contents)
        for anchor in ["entity-Airport", "entity-Airline", "entity-Flight", "migration-1", "migration-5", "diagram", "migrations"] {
            #expect(flights.contains("id=\"\(anchor)\""), "\(anchor)")
        }
        #expect(flights.contains("<td><code>icao</code></td><td>String</td><td>unique, column <code>icao</code></td><td></td><td>ICAO code such as KSFO (or IATA or LID where it has none).</td></tr>"))
        #expect(flights.contains("<td><a href=\"#entity-Flight\">Flight</a>?</td>") == false)
        #expect(flights.contains("<td>[<a href=\"#entity-Flight\">Flight</a>]</td>"))
        #expect(flights.contains("<code>flights_origin_id_scheduled_off_idx</code> (index on origin_id, scheduled_off)"))
        #expect(flights.contains("<details><summary>Up SQL</summary><pre><code>-- Flights: version 1 -&gt; version 2 (up)."))
        // The rename migration's lint, recomputed from the snapshots around it.
        #expect(flights.contains("<code>down-loses-data</code>"))
        let garage = try #require(files.first { $0.path == "Garage.html" }?.contents)
        #expect(garage.contains("id=\"value-Color\"") && garage.contains("<a href=\"#value-Color\">Color</a>"))
        #expect(garage.contains("link table <code>car_mechanics</code>"))
        for page in files {
            #expect(Self.matches(#"(?:src|href)="(?:https?:)?//"#, in: page.contents).isEmpty, "\(page.path): nothing is fetched from a network")
        }
    }

    @Test func aMissingSnapshotIsReportedNotFatal() throws {
        let folder = temporaryFolder().appendingPathComponent("Migrations/Flights")
        try FileManager.default.createDirectory(at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Flights"), to: folder)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("0002_add_airports_elevation.schema.json"))
        let schema = try #require(try Self.schemas().first { $0.name == "Flights" })
        let page = try #require(try Site.files(for: [schema], migrations: folder.deletingLastPathComponent().path, layout: .plain).last?.contents)
        #expect(page.contains("<code>snapshot-unreadable</code> 0002_add_airports_elevation.schema.json is missing or unreadable"))
    }

    /// Runs chromium headless on a page; its DOM after the scripts ran.
    static func dom(_ url: String, screenshot: String? = nil) throws -> String {
        let run = try HeadlessChromium.run(url, screenshot: screenshot)
        #expect(run.status == 0, "chromium on \(url)")
        return run.dom
    }

    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { Range(match.range(at: $0), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    @Test(.enabled(if: chromium != nil, "SKIPPED: chromium is not installed; `sh .ci/install-deps --tests` installs it"))
    func aRealBrowserLoadsTheSiteFollowsItsLinksAndFilters() throws {
        let site = temporaryFolder().appendingPathComponent("site")
        let run = try BuiltTool("schemagen").run(["docs", "-o", site.path])
        #expect(run.status == 0, "\(run.error)")
        var doms: [String: String] = [:]
        for page in ["index.html"] + Self.examples.map({ "\($0).html" }) {
            doms[page] = try Self.dom(site.appendingPathComponent(page).absoluteString)
        }
        // Every entity is on its schema's page.
        for schema in try Self.schemas() {
            let dom = try #require(doms["\(schema.name).html"])
            let sections = Self.matches(#"<section class="entity" id="entity-([A-Za-z0-9_]+)""#, in: dom).map { $0[1] }
            #expect(sections == schema.entities.map(\.name), "\(schema.name)")
        }
        // Every internal link resolves to a page and an element of it.
        var checked = 0
        for (page, dom) in doms {
            for link in Self.matches(#"(?:xlink:)?href="([^"]*)""#, in: dom).map({ $0[1] }) where !link.hasSuffix(".css") && !link.hasSuffix(".js") {
                #expect(!link.contains("://"), "\(page) links outside the site: \(link)")
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target = parts[0].isEmpty ? page : parts[0]
                let targetDOM = try #require(doms[target], "\(page) links to a missing page: \(link)")
                if parts.count == 2 {
                    #expect(targetDOM.contains("id=\"\(parts[1])\""), "\(page): \(link) names no element")
                }
                checked += 1
            }
        }
        #expect(checked > 50)

        // The search box filters, in the browser: `?q=` fills it in as the page loads.
        let filtered = try Self.dom(site.appendingPathComponent("Flights.html").absoluteString + "?q=airport")
        func isHidden(_ entity: String, in dom: String) throws -> Bool {
            let tag = try #require(Self.matches(#"<section class="entity" id="entity-\#(entity)"[^>]*>"#, in: dom).first?[0])
            return tag.contains("hidden")
        }
        #expect(try !isHidden("Airport", in: filtered))
        #expect(try isHidden("Airline", in: filtered) && isHidden("Flight", in: filtered))
        #expect(filtered.contains("1 of 3 entities"))
        let byAttribute = try Self.dom(site.appendingPathComponent("Flights.html").absoluteString + "?q=ident")
        #expect(try !isHidden("Flight", in: byAttribute) && isHidden("Airport", in: byAttribute))
        #expect(byAttribute.contains("<tr class=\"member\" data-name=\"ident\">"))
        #expect(byAttribute.contains("<tr class=\"member\" data-name=\"status\" hidden=\"\">"))

        // A picture of the page, kept for people to look at.
        let artifacts = repositoryRoot.appendingPathComponent(".build/artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let screenshot = artifacts.appendingPathComponent("schema-site-flights.png").path
        try? FileManager.default.removeItem(atPath: screenshot)
        _ = try Self.dom(site.appendingPathComponent("Flights.html").absoluteString, screenshot: screenshot)
        let size = (try FileManager.default.attributesOfItem(atPath: screenshot)[.size] as? NSNumber)?.intValue ?? 0
        #expect(size > 10_000, "screenshot at \(screenshot)")
    }
}
