import CommandLineKit

/// The `schemagen` tool: its commands, as the executable and the tests run them.
public enum Schemagen {
    public static let version = "0.2.0"

    public static var tool: CommandLineTool {
        CommandLineTool(
            name: "schemagen",
            version: version,
            abstract: "Check declarative YAML data-model schemas and generate code and migrations from them.",
            commands: [
                ValidateCommand.self, GenerateCommand.self, DiffCommand.self, RehashCommand.self, NewMigrationCommand.self, RenderCommand.self, ImportCommand.self, ExportCommand.self,
                RestoreVersionsCommand.self,
                DiagramCommand.self,
                DocsCommand.self,
                StudioCommand.self,
            ])
    }

    /// Runs `schemagen` with arguments that exclude the program name.
    public static func main(arguments: [String], io: CommandIO = .standard()) -> ExitCode {
        tool.main(arguments: arguments, io: io)
    }
}
