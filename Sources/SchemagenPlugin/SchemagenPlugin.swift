import Foundation
import PackagePlugin

/// Generates Swift models at build time from the `*.yaml` schema files of the target that
/// uses the plugin: one Swift file per schema, regenerated whenever the schema changes.
/// The target needs `SchemaMetadata` as a dependency.
@main
struct SchemagenPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let schemas = target.sourceFiles.filter { ["yaml", "yml"].contains($0.url.pathExtension) }
        let tool = try context.tool(named: "schemagen")
        let output = context.pluginWorkDirectoryURL
        return schemas.map { schema in
            let generated = output.appending(path: schema.url.deletingPathExtension().lastPathComponent + ".swift")
            return .buildCommand(
                displayName: "Generating models from \(schema.url.lastPathComponent)",
                executable: tool.url,
                arguments: ["generate", "--schema", schema.url.path, "--output", output.path, "--single-file"],
                inputFiles: [schema.url],
                outputFiles: [generated])
        }
    }
}
