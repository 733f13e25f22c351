import SchemagenCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct SchemagenMain {
    static func main() {
        let status = Schemagen.main(arguments: Array(CommandLine.arguments.dropFirst()))
        exit(status.rawValue)
    }
}
