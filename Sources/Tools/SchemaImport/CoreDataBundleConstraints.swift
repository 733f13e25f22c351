import Foundation

extension CoreDataImporter {
    /// The uniqueness constraints each version of an existing bundle declares, by the version its
    /// `userDefinedModelVersionIdentifier` names, then by entity, in the model's names: they are
    /// part of each entity's version hash (Apple's `uniquenessConstraints`), so an export over
    /// the bundle keeps them as they are for the versions it already has. A folder without a
    /// whole-number identifier (Xcode's "1.0", or none) is numbered by its place in Xcode's
    /// order, as `importBundle` numbers it. Empty when there is no bundle; a version whose file
    /// cannot be read, or that two folders claim, is left out.
    ///
    ///     let kept = CoreDataImporter.uniquenessConstraints(inBundle: "Shop.xcdatamodeld")
    public static func uniquenessConstraints(inBundle path: String) -> [Int: [String: [[String]]]] {
        var byVersion: [Int: [String: [[String]]]] = [:]
        var claimed: [Int: Int] = [:]
        let folders = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".xcdatamodel") }.sorted { versionOrder($0, $1) }
        for (position, entry) in folders.enumerated() {
            let file = path + "/" + entry + "/contents"
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: file), let size = attributes[.size] as? Int, size <= maximumContentsSize,
                let data = FileManager.default.contents(atPath: file), case .success(let model) = XMLTree.parse([UInt8](data)), model.name == "model"
            else { continue }
            let version = model["userDefinedModelVersionIdentifier"].flatMap { Int($0) } ?? position + 1
            claimed[version, default: 0] += 1
            var entities: [String: [[String]]] = [:]
            for entity in model.children(named: "entity") {
                guard let name = entity["name"] else { continue }
                entities[name] = entity.children(named: "uniquenessConstraints").flatMap { $0.children(named: "uniquenessConstraint") }.map { constraint in
                    constraint.children(named: "constraint").compactMap { $0["value"] }
                }
            }
            byVersion[version] = entities
        }
        return byVersion.filter { claimed[$0.key] == 1 }
    }
}
