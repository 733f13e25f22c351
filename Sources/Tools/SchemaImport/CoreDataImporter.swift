import Foundation
import SchemaKit

/// `schemagen import coredata`: schemas from an Xcode model bundle (`.xcdatamodeld`), one per
/// version, or from a single `.xcdatamodel`.
public enum CoreDataImporter {
    /// One version of the model as a schema.
    public struct Version: Sendable {
        /// The version's folder name without `.xcdatamodel`: `Model 2`.
        public var name: String
        public var isCurrent: Bool
        public var result: ImportResult
    }

    /// Files larger than this are refused before reading; real models are a few hundred KiB.
    static let maximumContentsSize = 16 * 1024 * 1024

    /// Every version in the bundle's order (Xcode's: by name, numbers compared as numbers)
    /// when `history`, else the current version alone, numbered by its place in that order.
    public static func importBundle(at path: String, name: String? = nil, history: Bool) throws(ImportError) -> [Version] {
        let bundle = URL(fileURLWithPath: path)
        let bundleName = bundle.lastPathComponent
        var folders: [String]
        var current: String?
        if bundle.pathExtension == "xcdatamodel" {
            folders = [bundleName]
            current = bundleName
        } else {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else {
                throw ImportError(at: path, "cannot read the folder")
            }
            folders = entries.filter { $0.hasSuffix(".xcdatamodel") }
                .sorted { versionOrder($0, $1) }
            guard !folders.isEmpty else {
                throw ImportError(at: path, "not a Core Data model bundle: it holds no .xcdatamodel version folder")
            }
            current = try currentVersion(in: bundle)
            if let named = current, !folders.contains(named) {
                throw ImportError(at: "\(bundleName)/.xccurrentversion", "names the version '\(named)', which the bundle does not hold (it has \(folders.joined(separator: ", ")))")
            }
        }
        let currentFolder = current ?? folders.last!
        let schemaName = name ?? SwiftNames.schemaName(bundle.deletingPathExtension().lastPathComponent)
        var models: [(folder: String, model: ParsedModel)] = []
        for folder in folders where history || folder == currentFolder {
            let contents = bundle.pathExtension == "xcdatamodel" ? bundle.appendingPathComponent("contents") : bundle.appendingPathComponent(folder).appendingPathComponent("contents")
            let place = bundle.pathExtension == "xcdatamodel" ? "\(bundleName)/contents" : "\(bundleName)/\(folder)/contents"
            models.append((folder, try readModel(contents, place: place)))
        }
        var versions: [Version] = []
        var previous: ParsedModel?
        var previousFolder: String?
        // Mapping models beside the bundle say how Core Data migrated steps it could not infer.
        let mappingModels = ((try? FileManager.default.contentsOfDirectory(atPath: bundle.deletingLastPathComponent().path)) ?? [])
            .filter { $0.hasSuffix(".xcmappingmodel") }.sorted()
        for (folder, model) in models {
            let number = (folders.firstIndex(of: folder) ?? 0) + 1
            var builder = SchemaBuilder(model: model, previous: history ? previous : nil)
            builder.mappingModels = mappingModels
            builder.versionNames = (String(folder.dropLast(".xcdatamodel".count)), previousFolder.map { String($0.dropLast(".xcdatamodel".count)) })
            let schema = builder.build(name: schemaName, version: number)
            let findings =
                current == nil && folder == currentFolder && folders.count > 1
                ? [ImportFinding(.warning, at: bundleName, "the bundle has no .xccurrentversion; '\(folder)', the last version, is taken as current")] + builder.findings
                : builder.findings
            versions.append(
                Version(
                    name: String(folder.dropLast(".xcdatamodel".count)), isCurrent: folder == currentFolder,
                    result: ImportResult(schema: schema, findings: findings)))
            previous = model
            previousFolder = folder
        }
        keepRenamingIdentifiers(&versions, models: models.map(\.model))
        return versions
    }

    /// Keeps each element's renaming identifier as the model says it where the export of the
    /// imported versions would say another (`RenamingIdentifiers.chain` over the renames the
    /// import found): one that no rename inside the bundle explains (given in the bundle's first
    /// version, say, for a version no longer in it), or one the model does not carry on. It goes
    /// in `coreData: {elementID: …}`, which export writes as given. Apple's rule is to keep the
    /// identifier a property already has: stores of versions outside the bundle match by it.
    static func keepRenamingIdentifiers(_ versions: inout [Version], models: [ParsedModel]) {
        func modelName(_ name: String, _ coreData: CoreDataSettings) -> String { coreData.attributes["name"] ?? name }
        func shape(_ schema: ImportedSchema) -> RenamingIdentifiers.VersionShape {
            RenamingIdentifiers.VersionShape(
                version: schema.version,
                entities: schema.entities.map { entity in
                    .init(
                        entity: .init(name: entity.name, renamedFrom: entity.renamedFrom, given: entity.coreData.attributes["elementID"]),
                        attributes: entity.attributes.map { .init(name: $0.name, renamedFrom: $0.renamedFrom, given: $0.coreData.attributes["elementID"]) },
                        relationships: entity.relationships.map { .init(name: $0.name, renamedFrom: $0.renamedFrom, given: $0.coreData.attributes["elementID"]) })
                })
        }
        for index in versions.indices where index < models.count {
            // What export derives for this version, from the versions before as now kept.
            let derived = RenamingIdentifiers.chain(shapes: versions[...index].map { shape($0.result.schema) }).identifiers[index]
            let model = models[index]
            var schema = versions[index].result.schema
            for entityIndex in schema.entities.indices {
                let entity = schema.entities[entityIndex]
                guard let parsed = model.entity(named: modelName(entity.name, entity.coreData)) else { continue }
                /// The model's identifier where export would write another (nil: none to keep).
                func kept(_ element: XMLTree.Element?, name: String, derived: String?) -> String? {
                    guard let element else { return nil }
                    let given = SchemaBuilder.renamingIdentifier(element) ?? name
                    return given == (derived ?? name) ? nil : given
                }
                if entity.coreData.attributes["elementID"] == nil,
                    let identifier = kept(parsed.element, name: modelName(entity.name, entity.coreData), derived: derived.entity(entity.name))
                {
                    schema.entities[entityIndex].coreData.attributes["elementID"] = identifier
                }
                /// The identifier a member keeps, for members named `name` in the model.
                func member(_ memberName: String, _ coreData: CoreDataSettings, among elements: [XMLTree.Element]) -> String? {
                    guard coreData.attributes["elementID"] == nil else { return nil }
                    let name = modelName(memberName, coreData)
                    return kept(elements.first { $0["name"] == name }, name: name, derived: derived.member(memberName, of: entity.name))
                }
                for (position, attribute) in entity.attributes.enumerated() {
                    if let identifier = member(attribute.name, attribute.coreData, among: parsed.attributes) {
                        schema.entities[entityIndex].attributes[position].coreData.attributes["elementID"] = identifier
                    }
                }
                for (position, relationship) in entity.relationships.enumerated() {
                    if let identifier = member(relationship.name, relationship.coreData, among: parsed.relationships) {
                        schema.entities[entityIndex].relationships[position].coreData.attributes["elementID"] = identifier
                    }
                }
            }
            versions[index].result.schema = schema
        }
    }

    /// Xcode's order of versions: by name without `.xcdatamodel`, numbers compared as numbers
    /// (`Model`, `Model 2`, `Model 10`).
    static func versionOrder(_ lhs: String, _ rhs: String) -> Bool {
        let a = String(lhs.dropLast(".xcdatamodel".count)), b = String(rhs.dropLast(".xcdatamodel".count))
        return a.compare(b, options: [.numeric]) == .orderedAscending
    }

    /// `_XCCurrentVersionName` from `.xccurrentversion` (a property list), or nil without the file.
    static func currentVersion(in bundle: URL) throws(ImportError) -> String? {
        let file = bundle.appendingPathComponent(".xccurrentversion")
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let place = "\(bundle.lastPathComponent)/.xccurrentversion"
        guard let data = try? Data(contentsOf: file) else { throw ImportError(at: place, "cannot read the file") }
        guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil),
            let dictionary = plist as? [String: Any]
        else {
            throw ImportError(at: place, "not a property list; Xcode writes a dictionary with the key _XCCurrentVersionName")
        }
        guard let name = dictionary["_XCCurrentVersionName"] as? String else {
            throw ImportError(at: place, "has no _XCCurrentVersionName string naming the current version")
        }
        return name
    }

    // MARK: - The model file

    /// A version's `contents`, read into plain values with the place of each.
    struct ParsedModel {
        var place: String
        var entities: [ParsedEntity] = [] {
            didSet { positions = Dictionary(entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first }) }
        }
        var findings: [ImportFinding] = []
        /// `<composite>` elements: Core Data's composite attribute types (iOS 17, macOS 14).
        var composites: [XMLTree.Element] = []
        private var positions: [String: Int] = [:]

        init(place: String) { self.place = place }

        /// An element's place, `file:line:column`, for findings.
        func at(_ element: XMLTree.Element) -> String { "\(place):\(element.line):\(element.column)" }

        func entity(named name: String) -> ParsedEntity? { positions[name].map { entities[$0] } }
    }

    struct ParsedEntity {
        var element: XMLTree.Element
        var name: String { element["name"] ?? "" }
        var parent: String? { element["parentEntity"] }
        var isAbstract: Bool { element.flag("isAbstract") }
        var attributes: [XMLTree.Element]
        var relationships: [XMLTree.Element]
        var uniques: [(members: [String], element: XMLTree.Element)]
        var indexes: [(members: [String], element: XMLTree.Element)]
        /// The entity's `userInfo` entries.
        var userInfo: [String: String] = [:]
    }

    /// An element's `<userInfo>` entries by key.
    static func userInfo(of element: XMLTree.Element) -> [String: String] {
        var entries: [String: String] = [:]
        for info in element.children(named: "userInfo") {
            for entry in info.children(named: "entry") {
                if let key = entry["key"] { entries[key] = entry["value"] ?? "" }
            }
        }
        return entries
    }

    static func readModel(_ file: URL, place: String) throws(ImportError) -> ParsedModel {
        let root = try modelRoot(file, place: place)
        var model = ParsedModel(place: place)
        var entities: [ParsedEntity] = []
        for child in root.children {
            switch child.name {
            case "entity":
                entities.append(try parseEntity(child, model: &model))
            case "configuration":
                model.findings.append(
                    ImportFinding(.warning, at: model.at(child), "configuration '\(child["name"] ?? "")' not imported: a schema is one store; its entities are imported with the others"))
            case "fetchRequest":
                model.findings.append(ImportFinding(.warning, at: model.at(child), "fetch request '\(child["name"] ?? "")' not imported: a schema has no stored queries"))
            case "composite":
                model.composites.append(child)
            case "elements":
                break  // Diagram positions in Xcode's editor: nothing of the model.
            default:
                model.findings.append(ImportFinding(.warning, at: model.at(child), "unknown element <\(child.name)> not imported"))
            }
        }
        model.entities = entities
        return model
    }

    /// The model file's `<model>` element, its size bounded before it is read.
    static func modelRoot(_ file: URL, place: String) throws(ImportError) -> XMLTree.Element {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
        guard let size = attributes?[.size] as? NSNumber else {
            let folder = file.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("elements").path) {
                throw ImportError(
                    at: place, "this version is in Xcode 3's format (binary elements and layout archives, no contents file); open the model in a current Xcode and save it, which writes contents")
            }
            throw ImportError(at: place, "cannot read the model file (every .xcdatamodel folder holds one named contents)")
        }
        guard size.intValue <= maximumContentsSize else {
            throw ImportError(at: place, "the model file is \(size.intValue) bytes, over the \(maximumContentsSize)-byte limit")
        }
        guard let data = try? Data(contentsOf: file) else { throw ImportError(at: place, "cannot read the model file") }
        let root: XMLTree.Element
        switch XMLTree.parse([UInt8](data)) {
        case .success(let element): root = element
        case .failure(let error): throw ImportError(at: "\(place):\(error.line):\(error.column)", "not well-formed XML: \(error.message)")
        }
        guard root.name == "model" else {
            throw ImportError(at: "\(place):\(root.line):\(root.column)", "not a Core Data model: the root element is <\(root.name)>, not <model>")
        }
        return root
    }

    /// One `<entity>`: its members as elements, for the builder to read.
    static func parseEntity(_ child: XMLTree.Element, model: inout ParsedModel) throws(ImportError) -> ParsedEntity {
        guard let name = child["name"], !name.isEmpty else {
            throw ImportError(at: model.at(child), "an <entity> without a name")
        }
        var entity = ParsedEntity(element: child, attributes: [], relationships: [], uniques: [], indexes: [])
        for member in child.children {
            switch member.name {
            case "attribute": entity.attributes.append(member)
            case "relationship": entity.relationships.append(member)
            case "uniquenessConstraints":
                for constraint in member.children(named: "uniquenessConstraint") {
                    entity.uniques.append((constraint.children(named: "constraint").compactMap { $0["value"] }, constraint))
                }
            case "fetchIndex":
                let members = fetchIndexMembers(member, entity: name, model: &model)
                if !members.isEmpty { entity.indexes.append((members, member)) }
            case "compoundIndexes":
                for compound in member.children(named: "compoundIndex") {
                    let members = compound.children(named: "index").compactMap { $0["value"] }
                    if !members.isEmpty { entity.indexes.append((members, compound)) }
                }
            case "fetchedProperty":
                model.findings.append(
                    ImportFinding(.warning, at: model.at(member), "fetched property '\(member["name"] ?? "")' of '\(name)' not imported: a schema has no stored queries; write it as a query in code")
                )
            case "userInfo":
                // schemagen's own keys say what Core Data cannot (`CoreDataUserInfo`); others are the app's.
                entity.userInfo = userInfo(of: child)
                let foreign = entity.userInfo.keys.filter { !$0.hasPrefix("schemagen.") }.sorted()
                if !foreign.isEmpty {
                    model.findings.append(ImportFinding(.note, at: model.at(member), "user info of '\(name)' not imported (\(foreign.joined(separator: ", ")))"))
                }
            default:
                model.findings.append(ImportFinding(.warning, at: model.at(member), "unknown element <\(member.name)> in entity '\(name)' not imported"))
            }
        }
        return entity
    }

    /// A fetch index's properties; none when one of its elements is an expression, which the
    /// schema cannot say (warned).
    static func fetchIndexMembers(_ index: XMLTree.Element, entity name: String, model: inout ParsedModel) -> [String] {
        var members: [String] = []
        for element in index.children(named: "fetchIndexElement") {
            guard let property = element["property"], element["type"] ?? "Binary" == "Binary" else {
                model.findings.append(
                    ImportFinding(
                        .warning, at: model.at(element),
                        "fetch index '\(index["name"] ?? "")' of '\(name)' not imported: only property elements of type Binary can be expressed (this one is \(element["type"] ?? "an expression"))"
                    ))
                return []
            }
            if element["order"] == "descending" {
                model.findings.append(ImportFinding(.warning, at: model.at(element), "fetch index '\(index["name"] ?? "")' of '\(name)' imported without its descending order"))
            }
            members.append(property)
        }
        return members
    }
}
