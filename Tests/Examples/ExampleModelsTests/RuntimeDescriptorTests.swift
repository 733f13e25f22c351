import ExampleModels
import SchemaKit
import SchemaMetadata
import SchemagenPipeline
import TestSupport
import Testing

/// A tool without compiled models (the studio) describes a database from its schema file and
/// migrations: the descriptor it builds is the one the generated metadata declares, for every
/// example schema.
@Suite struct RuntimeDescriptorTests {
    static let compiled: [String: SchemaDescriptor] = [
        "Dispatch": DispatchSchema.descriptor, "Flights": FlightsSchema.descriptor, "Garage": GarageSchema.descriptor, "Inbox": InboxSchema.descriptor,
        "Notes": NotesSchema.descriptor, "Tasks": TasksSchema.descriptor, "Todo": TodoSchema.descriptor, "Users": UsersSchema.descriptor,
    ]

    @Test(arguments: ["Dispatch", "Flights", "Garage", "Inbox", "Notes", "Tasks", "Todo", "Users"])
    func theBuiltDescriptorIsTheGeneratedOne(_ name: String) throws {
        let path = repositoryRoot.appendingPathComponent("Schemas/\(name).yaml").path
        let schema = try #require(SchemaLoader.load(file: path).schema)
        let pipeline = GenerationPipeline(.init(schemas: [path], migrations: repositoryRoot.appendingPathComponent("Migrations").path))
        let built = pipeline.storeDescriptor(schema)
        let compiled = try #require(Self.compiled[name])
        #expect(built == compiled, "\(name): \(zip(built.entities, compiled.entities).filter { $0 != $1 }.map { "\($0)\n  vs \($1)" })")
    }
}
