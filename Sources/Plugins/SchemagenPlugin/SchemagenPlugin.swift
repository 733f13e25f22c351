import Foundation
import PackagePlugin

/// Generates Swift models at build time from the `*.yaml` schema files of the target that
/// uses the plugin: one Swift file per schema, regenerated whenever the schema or its
/// migrations change. The generated code embeds the schema's committed migrations, read from
/// `Migrations/<Schema>/` in the target's folder (exclude it from the target), or else in the
/// package's root folder. The build fails when a schema is ahead of its migrations: plan them
/// with `swift package --allow-writing-to-package-directory schemagen generate --migrations-only`
/// first. The target needs `SchemaMetadata` (and `PersistentStoreSQLite` or
/// `PersistentStorePostgres` to open a store) as dependencies.
@main
struct SchemagenPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let schemas = target.sourceFiles.filter { ["yaml", "yml"].contains($0.url.pathExtension) }
        guard !schemas.isEmpty else { return [] }
        let tool = try context.tool(named: "schemagen")
        let output = context.pluginWorkDirectoryURL
        let beside = target.directoryURL.appending(path: "Migrations")
        let migrations = FileManager.default.fileExists(atPath: beside.path) ? beside : context.package.directoryURL.appending(path: "Migrations")
        // Every migration file is an input, so an edited or new migration regenerates the code.
        let migrationFiles = (FileManager.default.enumerator(at: migrations, includingPropertiesForKeys: nil)?.allObjects as? [URL] ?? [])
            .filter { ["sql", "json", "sum"].contains($0.pathExtension) }
        return schemas.map { schema in
            let generated = output.appending(path: schema.url.deletingPathExtension().lastPathComponent + ".swift")
            return .buildCommand(
                displayName: "Generating models from \(schema.url.lastPathComponent)",
                executable: tool.url,
                arguments: ["generate", "--schema", schema.url.path, "--output", output.path, "--single-file", "--migrations", migrations.path],
                inputFiles: [schema.url] + migrationFiles,
                outputFiles: [generated])
        }
    }
}
