import MigrateCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct MigrateMain {
    static func main() {
        exit(MigrateTool.main(arguments: Array(CommandLine.arguments.dropFirst())).rawValue)
    }
}
