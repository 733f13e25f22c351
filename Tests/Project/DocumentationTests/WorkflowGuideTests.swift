import Foundation
import TestSupport
import Testing

/// docs/workflow.md walks one schema change from the edit to production. Its steps run here, in
/// the page's order, on a scratch project holding the Todo schema at version 4 and a PostgreSQL
/// database already at that version (its online migration completed): the ```diff block is applied with `git apply`, and each
/// ```sh block runs in bash. Then what the steps claim is checked in the files and databases.
@Suite(.serialized) struct WorkflowGuideTests {
    enum Step {
        case edit(String)
        case commands(String)
    }

    /// The page's steps, in order.
    static func steps() throws -> [Step] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/workflow.md"), encoding: .utf8)
        var steps: [Step] = []
        var current: (kind: String, lines: [String])?
        for line in text.components(separatedBy: "\n") {
            if current == nil, line == "```diff" || line == "```sh" {
                current = (line, [])
            } else if let open = current, line == "```" {
                let body = open.lines.joined(separator: "\n") + "\n"
                steps.append(open.kind == "```diff" ? .edit(body) : .commands(body))
                current = nil
            } else {
                current?.lines.append(line)
            }
        }
        return steps
    }

    @Test func theWorkflowRunsAsWritten() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let project = temporaryFolder()
        let files = FileManager.default
        try files.createDirectory(at: project.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try files.createDirectory(at: project.appendingPathComponent("Migrations"), withIntermediateDirectories: true)
        try files.copyItem(at: repositoryRoot.appendingPathComponent("Schemas/Todo.yaml"), to: project.appendingPathComponent("Schemas/Todo.yaml"))
        try files.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Todo"), to: project.appendingPathComponent("Migrations/Todo"))
        let tools = BuiltTool("migrate").url.deletingLastPathComponent().path
        let scratch = project.appendingPathComponent(".scratch")
        try files.createDirectory(at: scratch, withIntermediateDirectories: true)
        let database = try server.createDatabase()
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = tools + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["DATABASE_URL"] = database
        environment["RUNNER_TEMP"] = scratch.path
        for (name, value) in ["GIT_AUTHOR_NAME": "Docs", "GIT_AUTHOR_EMAIL": "docs@example.org", "GIT_COMMITTER_NAME": "Docs", "GIT_COMMITTER_EMAIL": "docs@example.org"] {
            environment[name] = value
        }
        func bash(_ script: String) throws -> BuiltTool.Run {
            try BuiltTool(path: "/bin/bash").run(["-euo", "pipefail", "-c", script], environment: environment, in: project)
        }
        // The project as it was: committed at version 4, production migrated to it.
        let before = try bash(
            "printf '.build/\\n.scratch/\\n' > .gitignore && git init --quiet . && schemagen generate > /dev/null && git add -A && git commit --quiet -m 'Todo at version 4' && migrate up --complete --database \"$DATABASE_URL\" > /dev/null"
        )
        #expect(before.status == 0, "setting up the project: \(before.output)\(before.error)")

        let steps = try Self.steps()
        #expect(steps.count >= 5, "the page's steps: \(steps.count)")
        for step in steps {
            switch step {
            case .edit(let patch):
                try patch.write(to: scratch.appendingPathComponent("edit.diff"), atomically: true, encoding: .utf8)
                let applied = try bash("git apply .scratch/edit.diff")
                #expect(applied.status == 0, "the page's edit does not apply to Schemas/Todo.yaml: \(applied.error)")
            case .commands(let script):
                let run = try bash(script)
                #expect(run.status == 0, "a step of docs/workflow.md failed:\n\(script)\(run.output)\(run.error)")
            }
        }

        // What the page says happened.
        let migration = project.appendingPathComponent("Migrations/Todo/postgres/0005_add_todo_item_estimate.contract.sql").path
        #expect(files.fileExists(atPath: migration), "generate planned the online migration")
        let model = try String(contentsOf: project.appendingPathComponent("Generated/Todo/TodoItem.swift"), encoding: .utf8)
        #expect(model.contains("public var estimate: Int"))
        let log = try bash("git log --format=%s")
        #expect(log.output.hasPrefix("Todo: items have an estimate\n"), "\(log.output)")
        let clean = try bash("git status --porcelain")
        #expect(clean.output.isEmpty, "the commit holds everything generate wrote: \(clean.output)")
        let column = try standardOutput(
            of: "/usr/bin/psql",
            [database, "-tA", "-c", "SELECT is_nullable FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'todo_item' AND column_name = 'estimate'"])
        #expect(column.output.trimmingCharacters(in: .whitespacesAndNewlines) == "NO", "complete made the column required: \(column.output)")
        let views = try standardOutput(of: "/usr/bin/psql", [database, "-tA", "-c", "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'todo_v%'"])
        #expect(views.output.trimmingCharacters(in: .whitespacesAndNewlines) == "todo_v5", "complete dropped version 4's views: \(views.output)")
        let status = try bash("migrate status --database \"$DATABASE_URL\"")
        #expect(status.output.contains("0005") && status.output.contains("add_todo_item_estimate"), "\(status.output)")
    }
}
