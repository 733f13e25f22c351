import Diagnostics
import Foundation
import MigrationFiles
import SchemaMetadata

extension MigrationScript {
    /// The header of one direction's file; a malformed header stops the migration before anything runs.
    func header(_ direction: Migrator.Direction) throws(MigratorError) -> MigrationHeader {
        do {
            return try MigrationHeader.parse(direction == .up ? up : down)
        } catch {
            throw .badHeader(file: direction == .up ? upFile : downFile, error)
        }
    }
}

/// Reads a schema's migration folder after checking its manifest.
public enum MigrationScriptLoader {
    /// The folder's migrations in order; tampering stops here with the manifest's diagnostics.
    public static func load(directory path: String) throws(MigratorError) -> [MigrationScript] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
            throw .noMigrations(path)
        }
        let directory = MigrationDirectory(path: path)
        let problems = directory.verify()
        guard problems.isEmpty else { throw .tampered(problems) }
        var scripts: [MigrationScript] = []
        for entry in directory.entries() {
            let upFile = path + "/" + entry.upFile, downFile = path + "/" + entry.downFile
            guard let up = directory.contents(of: entry.upFile), let down = directory.contents(of: entry.downFile) else {
                throw .unreadable(upFile)
            }
            var script = MigrationScript(
                version: entry.number, name: entry.name, up: up, down: down, upFile: upFile, downFile: downFile,
                objects: directory.contents(of: entry.snapshotFile).flatMap(objects(inSnapshot:)))
            if let contract = directory.contents(of: entry.contractFile) {
                script.contract = contract
                script.contractFile = path + "/" + entry.contractFile
            }
            scripts.append(script)
        }
        return scripts
    }

    /// Table and column names of a snapshot file (`{"tables": [{"name", "columns": [{"name"}]}]}`),
    /// read without the planner's model; nil when the file is not shaped so.
    static func objects(inSnapshot text: String) -> [String: [String]]? {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let tables = root["tables"] as? [[String: Any]]
        else { return nil }
        var objects: [String: [String]] = [:]
        for table in tables {
            guard let name = table["name"] as? String, let columns = table["columns"] as? [[String: Any]] else { return nil }
            objects[name] = columns.compactMap { $0["name"] as? String }
        }
        return objects
    }
}
