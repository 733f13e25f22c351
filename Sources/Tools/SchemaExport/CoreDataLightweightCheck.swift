import Diagnostics
import SchemaKit

/// What Core Data's lightweight migration (an inferred mapping model) cannot do between two
/// versions of an exported bundle. Apple's "Lightweight Migration" lists what it infers: added
/// and removed attributes and relationships, an attribute made optional, one made required
/// with a default, renames through renaming identifiers. A changed attribute type, or a
/// required attribute without a default for the objects that exist, needs a mapping model.
public enum CoreDataLightweightCheck {
    public enum Code: String, DiagnosticCode {
        /// The step between two versions needs a mapping model (`.xcmappingmodel`).
        case needsMappingModel = "coredata-needs-mapping-model"
        /// Two elements of one version share a renaming identifier (`RenamingIdentifiers`).
        case identifierClash = "coredata-renaming-identifier-clash"
        /// A CloudKit model holds a fixed default where the schema's is computed (`now`, `uuid`).
        case placeholderDefault = "coredata-placeholder-default"
        /// A value type exported as a composite attribute, which Core Data has from iOS 17.
        case compositeNeedsIOS17 = "coredata-composite-ios17"
        /// A version's model constrains values its predecessor's did not: duplicates fail the step.
        case newUniquenessConstraint = "coredata-new-uniqueness-constraint"
    }

    /// A warning per change that needs a mapping model, at the attribute's line in the newer
    /// version, and per renaming identifier two elements share.
    ///
    /// `keptUniqueness`: the constraints of the bundle written over, as `CoreDataExporter.bundle`
    /// takes them, so the constraints compared are the ones the models declare.
    ///
    ///     let warnings = CoreDataLightweightCheck.findings(history.versions.map(\.schema), bundle: "Flights")
    public static func findings(_ versions: [Schema], bundle: String, keptUniqueness: [Int: [String: [[String]]]] = [:]) -> [Diagnostic] {
        var findings: [Diagnostic] = []
        func add(_ code: Code, _ message: String, at location: SourceLocation?) { findings.append(Diagnostic(.warning, code: code, message: message, at: location)) }
        for (old, new) in zip(versions, versions.dropFirst()) {
            let step = "'\(CoreDataExporter.versionName(old, bundle: bundle))' to '\(CoreDataExporter.versionName(new, bundle: bundle))'"
            for entity in new.entities {
                guard let before = old.entity(named: entity.name) ?? entity.renamedFrom.flatMap(old.entity(named:)) else { continue }
                for members in newConstraints(before, entity, old: old, new: new, keptUniqueness: keptUniqueness) {
                    add(
                        .newUniquenessConstraint,
                        "\(entity.name): the uniqueness constraint [\(members.joined(separator: ", "))] is new in the step from \(step); objects that share a value make the lightweight migration fail, so remove the duplicates before the app opens the store with the new model",
                        at: members.count == 1 ? entity.attribute(named: members[0])?.location ?? entity.location : entity.location)
                }
                for attribute in entity.attributes where !attribute.isTransient {
                    let subject = "\(entity.name).\(attribute.name)"
                    func warn(_ why: String) {
                        findings.append(
                            Diagnostic(
                                .warning, code: Code.needsMappingModel,
                                message: "\(subject): \(why), which Core Data's lightweight migration cannot do; the step from \(step) needs a mapping model (.xcmappingmodel) or a staged migration",
                                at: attribute.location ?? entity.location))
                    }
                    guard let previous = before.attribute(named: attribute.name) ?? attribute.renamedFrom.flatMap(before.attribute(named:)), !previous.isTransient else {
                        if !attribute.isOptional, attribute.defaultValue == nil { warn("it is new and required without a default") }
                        continue
                    }
                    let (was, now) = (CoreDataType.of(previous.type, in: old).coreData, CoreDataType.of(attribute.type, in: new).coreData)
                    if was != now {
                        warn("its type changes from \(was) to \(now)")
                    } else if previous.isOptional, !attribute.isOptional, attribute.defaultValue == nil {
                        warn("it becomes required without a default")
                    }
                }
            }
        }
        if let newest = versions.last {
            for entity in newest.entities {
                for attribute in entity.attributes {
                    if let composite = CoreDataType.of(attribute.type, in: newest).composite {
                        add(
                            .compositeNeedsIOS17,
                            "\(entity.name).\(attribute.name) is the value type \(composite), exported as a composite attribute, which Core Data has from iOS 17 and macOS 14 only; for an app that supports earlier systems, make its fields attributes of their own or store it as Data",
                            at: attribute.location ?? entity.location)
                    }
                    guard let placeholder = CoreDataExporter.cloudKitPlaceholder(ExportedAttribute(attribute), in: newest) else { continue }
                    let shown = placeholder.0 == "defaultDateTimeInterval" ? "2001-01-01T00:00:00Z" : placeholder.1
                    add(
                        .placeholderDefault,
                        "\(entity.name).\(attribute.name): CloudKit needs a default in the model, and Core Data cannot compute one when an object is made, so the model's default is \(shown); set the real value in the app (awakeFromInsert, or where it makes the object)",
                        at: attribute.location ?? entity.location)
                }
            }
        }
        for clash in RenamingIdentifiers.chain(versions).clashes {
            add(
                .identifierClash,
                "\(clash.second) shares the renaming identifier '\(clash.identifier)' with \(clash.first) in '\(bundle) \(clash.version)', so Core Data could move one's stored values into the other; rename one of them",
                at: clash.location)
        }
        return findings
    }

    /// The constraints `after`'s model declares that `before`'s did not, in `after`'s names (a
    /// renamed attribute keeps its constraint).
    static func newConstraints(_ before: Entity, _ after: Entity, old: Schema, new: Schema, keptUniqueness: [Int: [String: [[String]]]]) -> [[String]] {
        let was = CoreDataExporter.uniquenessConstraints(before, constrainsKey: CoreDataExporter.keyConstraint(before, kept: keptUniqueness[old.version]))
        let renamed = Dictionary(after.attributes.compactMap { attribute in attribute.renamedFrom.map { ($0, attribute.name) } }, uniquingKeysWith: { first, _ in first })
        let had = Set(was.map { members in Set(members.map { renamed[$0] ?? $0 }) })
        let now = CoreDataExporter.uniquenessConstraints(after, constrainsKey: CoreDataExporter.keyConstraint(after, kept: keptUniqueness[new.version]))
        return now.filter { !had.contains(Set($0)) }
    }
}
