import Foundation
import SchemaDiagrams
import SchemaKit
import TestSupport
import Testing

/// `schemagen diagram` on the example schemas: what each format says, neighbourhoods, and
/// keeping a committed diagram current.
@Suite(.blocking) struct DiagramTests {
    static let schemagen = BuiltTool("schemagen")

    func model(_ file: String) throws -> ERModel {
        let loaded = SchemaLoader.load(file: repositoryRoot.appendingPathComponent("Schemas/\(file)").path)
        return ERModel(schema: try #require(loaded.schema, "\(loaded.diagnostics)"))
    }

    /// Keys, optionality, docs, a many-to-many, and an identifying relationship (the visit's key
    /// holds the car) with its composite key.
    @Test func mermaidSaysWhatTheGarageSchemaSays() throws {
        #expect(
            MermaidWriter.diagram(try model("Garage.yaml")) == """
                erDiagram
                    Person {
                        Int64 id PK
                        String name
                        Int16 birthYear "optional"
                    }
                    Car {
                        Int64 id PK
                        String vin UK
                        String make
                        String model
                        Color color
                        Decimal price "optional"
                        Int32 mileage
                        URL manual "optional"
                        Data photo "optional; external storage"
                        Int64 ownerID FK "optional; owner -> Person"
                    }
                    Mechanic {
                        Int64 id PK
                        String name
                        Date hiredOn "day only; The day they joined; mechanics already on file get the day of the migration."
                    }
                    ServiceVisit {
                        Date day PK
                        String notes "optional"
                        Int64 carID PK, FK "car -> Car"
                    }
                    Car }o..o| Person : "owner / cars"
                    Car }o..o{ Mechanic : "mechanics / cars"
                    ServiceVisit }o--|| Car : "car / visits"

                """)
    }

    /// Every line of every example's diagram is one Mermaid's erDiagram grammar accepts.
    @Test func mermaidLinesFollowTheGrammar() throws {
        let patterns = [
            #"^erDiagram$"#,
            #"^    [A-Za-z_][A-Za-z0-9_]* \{$"#,
            #"^        [A-Za-z_][A-Za-z0-9_\[\]]* [A-Za-z_][A-Za-z0-9_]*( (PK|FK|UK)(, (PK|FK|UK))*)?( "[^"\n]*")?$"#,
            #"^    \}$"#,
            #"^    [A-Za-z_][A-Za-z0-9_]* (\|o|\|\||\}o|\}\|)(--|\.\.)(o\||\|\||o\{|\|\{) [A-Za-z_][A-Za-z0-9_]* : "[^"\n]*"$"#,
        ].map { try! Regex($0) }
        for file in ["Flights.yaml", "Garage.yaml", "Notes.yaml", "Tasks.yaml", "Todo.yaml", "Users.yaml"] {
            for line in MermaidWriter.diagram(try model(file)).split(separator: "\n") {
                #expect(patterns.contains { (try? $0.wholeMatch(in: String(line))) != nil }, "\(file): \(line)")
            }
        }
    }

    @Test func aNeighbourhoodHoldsTheEntitiesWithinReach() throws {
        let flights = try model("Flights.yaml")
        #expect(flights.neighbourhood(of: "Airline", depth: 1).boxes.map(\.name) == ["Airline", "Flight"])
        #expect(flights.neighbourhood(of: "Airline", depth: 1).edges.map(\.label) == ["airline / flights"])
        #expect(flights.neighbourhood(of: "Airline", depth: 2).boxes.map(\.name) == ["Airport", "Airline", "Flight"])
        #expect(flights.neighbourhood(of: "Airline", depth: 0).boxes.map(\.name) == ["Airline"])
        let garage = try model("Garage.yaml")
        #expect(garage.neighbourhood(of: "Mechanic", depth: 1).types.map(\.name) == ["Color"], "Car uses Color")
    }

    @Test(.enabled(if: Graphviz.executable() != nil, "SKIPPED: Graphviz's dot is not installed; `sh .ci/install-deps --tests` installs it"))
    func dotRendersThroughGraphviz() throws {
        for file in ["Flights.yaml", "Garage.yaml", "Notes.yaml", "Tasks.yaml", "Todo.yaml", "Users.yaml"] {
            let diagram = try model(file)
            let svg = try Graphviz.svg(fromDot: DotWriter.diagram(diagram))
            #expect(svg.contains("<svg"), "\(file)")
            for box in diagram.boxes { #expect(svg.contains(">\(box.name)<"), "\(file): \(box.name)") }
        }
        let dot = DotWriter.diagram(try model("Garage.yaml"))
        #expect(dot.contains(#""ServiceVisit" -> "Car" [arrowtail=crowodot, arrowhead=teetee, label="car / visits"];"#))
        #expect(dot.contains(#""Car" -> "Mechanic" [arrowtail=crowodot, arrowhead=crowodot, label="mechanics / cars", style=dashed];"#))
        #expect(dot.contains("subgraph cluster_types") && dot.contains(#""Car" -> "Color" [dir=none"#))
    }

    /// A docs site runs `dot` once per diagram: each run closes its pipes (a leak of two per
    /// run, through a `Process` Foundation did not release, once reached 1,800 descriptors).
    /// Other tests open pipes meanwhile, so the bound is half of what a leak would leave.
    @Test(.enabled(if: Graphviz.executable() != nil, "SKIPPED: Graphviz's dot is not installed; `sh .ci/install-deps --tests` installs it"))
    func manyDiagramsLeaveNoPipeOpen() throws {
        let dot = DotWriter.diagram(try model("Notes.yaml"))
        let before = openPipeCount()
        for _ in 0..<60 { _ = try Graphviz.svg(fromDot: dot) }
        #expect(openPipeCount() - before < 60, "pipes open before: \(before), after: \(openPipeCount())")
    }

    @Test func svgWithoutGraphvizSaysHowToInstallIt() throws {
        let run = try Self.schemagen.run(["diagram", "--schema", "Schemas/Flights.yaml", "--format", "svg"], environment: ["PATH": "/nonexistent"])
        #expect(run.status == 2)
        #expect(run.error.contains("Graphviz's `dot` is not installed: install it with `sudo apt-get install graphviz`"))
        #expect(run.output.isEmpty)
        let site = temporaryFolder().path
        let docs = try Self.schemagen.run(["docs", "-o", site, "--layout", "graphviz"], environment: ["PATH": "/nonexistent"])
        #expect(docs.status == 2 && docs.error.contains("Graphviz's `dot` is not installed") && docs.error.contains("--layout plain"), "\(docs.error)")
        let plain = try Self.schemagen.run(["docs", "-o", site], environment: ["PATH": "/nonexistent"])
        #expect(plain.status == 0 && plain.output.contains("wrote 11 files"), "auto falls back to the plain layout: \(plain.error)")
        #expect(try String(contentsOfFile: site + "/Flights.html", encoding: .utf8).contains("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"er-diagram\""))
    }

    @Test func theCommandWritesChecksAndUpdatesMarkdownBlocks() throws {
        let folder = temporaryFolder()
        let file = folder.appendingPathComponent("flights.mmd").path
        let written = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "-o", file])
        #expect(written.status == 0 && written.output == "wrote \(file)\n", "\(written.error)")
        #expect(try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "-o", file, "--check"]).status == 0)
        try "erDiagram\n".write(toFile: file, atomically: true, encoding: .utf8)
        let stale = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "-o", file, "--check"])
        #expect(stale.status == 1 && stale.error.contains("out of date"))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "erDiagram\n", "--check writes nothing")

        let markdown = folder.appendingPathComponent("notes.md").path
        try "# Notes\n\nBefore.\n<!-- schemagen diagram Garage: begin -->\nold\n<!-- schemagen diagram Garage: end -->\nAfter.\n".write(toFile: markdown, atomically: true, encoding: .utf8)
        #expect(try Self.schemagen.run(["diagram", "-s", "Schemas/Garage.yaml", "-o", markdown]).status == 0)
        let updated = try String(contentsOfFile: markdown, encoding: .utf8)
        #expect(
            updated
                == "# Notes\n\nBefore.\n<!-- schemagen diagram Garage: begin -->\n```mermaid\n\(MermaidWriter.diagram(try model("Garage.yaml")))```\n<!-- schemagen diagram Garage: end -->\nAfter.\n")
        let missing = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "-o", markdown])
        #expect(missing.status == 2 && missing.error.contains("no block for schema Flights; add the lines\n<!-- schemagen diagram Flights: begin -->"))

        let unknown = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "--entity", "Airlines"])
        #expect(unknown.status == 2 && unknown.error.contains("no entity 'Airlines' in the schemas; did you mean 'Airline'?"), "\(unknown.error)")
        let several = try Self.schemagen.run(["diagram", "-o", file])
        #expect(several.status == 2 && several.error.contains("8 schemas but one output file"))
        let neighbourhood = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "--entity", "Airline", "--format", "dot"])
        #expect(neighbourhood.status == 0 && !neighbourhood.output.contains("\"Airport\""))
    }

    /// `count` entities in a ring, each also linked to a far-away friend: a graph Graphviz takes
    /// seconds to lay out.
    static func ring(_ count: Int) -> String {
        let friend = { (index: Int) in (index * 37 + 11) % count }
        var friendOf = Array(repeating: 0, count: count)
        for index in 0..<count { friendOf[friend(index)] = index }
        var yaml = "schema: Ring\nversion: 1\nentities:\n"
        for index in 0..<count {
            yaml += "  Node\(index):\n    attributes: {name: String, size: Int?, note: String?}\n    relationships:\n"
            yaml += "      next: {to: Node\((index + 1) % count)?, inverse: previous}\n      previous: {to: \"[Node\((index + count - 1) % count)]\", inverse: next}\n"
            yaml += "      friend: {to: Node\(friend(index))?, inverse: friendOf}\n      friendOf: {to: \"[Node\(friendOf[index])]\", inverse: friend}\n"
        }
        return yaml
    }

    /// Graphviz's layout grows much faster than the schema: a large one is stopped with advice,
    /// and the site draws it with the plain layout instead.
    @Test(.enabled(if: Graphviz.executable() != nil, "SKIPPED: Graphviz's dot is not installed; `sh .ci/install-deps --tests` installs it"))
    func largeSchemasDoNotWaitOnGraphviz() throws {
        let folder = temporaryFolder()
        let schema = folder.appendingPathComponent("Ring.yaml")
        try Self.ring(600).write(to: schema, atomically: true, encoding: .utf8)
        let svg = try Self.schemagen.run(["diagram", "-s", schema.path, "--format", "svg", "--timeout", "0.5"])
        #expect(svg.status == 2 && svg.error.contains("dot was still laying out the diagram after 0.5 s and was stopped; draw part of the schema with --entity NAME --depth N"), "\(svg.error)")
        let site = try Self.schemagen.run(["docs", "-s", schema.path, "-o", folder.appendingPathComponent("site").path, "-m", folder.appendingPathComponent("Migrations").path])
        #expect(site.status == 0, "\(site.error)")
        #expect(
            try String(contentsOf: folder.appendingPathComponent("site/Ring.html"), encoding: .utf8).contains("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"er-diagram\""),
            "more than 80 entities: the plain layout")
    }

    /// The README shows the Flights diagram; CI (and this test) keep it current.
    @Test func theReadmeDiagramIsCurrent() throws {
        let run = try Self.schemagen.run(["diagram", "-s", "Schemas/Flights.yaml", "-o", "README.md", "--check"])
        #expect(run.status == 0, "run `swift run schemagen diagram -s Schemas/Flights.yaml -o README.md`: \(run.error)")
    }
}
