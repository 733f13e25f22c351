import FlightsExample

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct FlightsMain {
    static func main() {
        exit(FlightsTool.tool.main(arguments: Array(CommandLine.arguments.dropFirst()), io: .standard()).rawValue)
    }
}
