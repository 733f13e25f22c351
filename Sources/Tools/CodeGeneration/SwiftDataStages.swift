import Diagnostics
import Mustache
import SchemaKit

/// One step of a SwiftData migration plan, from one schema version to the next: lightweight
/// where SwiftData infers it, custom where data must be moved, each choice said in a comment.
///
/// The rules are Core Data's lightweight migration, on which SwiftData's stages run (Apple's
/// "Lightweight migration" in the Core Data documentation; `MigrationStage.custom`'s handlers
/// run before and after that inferred step): adding an optional or defaulted attribute,
/// removing one, renaming one through its original name, making one optional, adding or
/// removing entities and relationships, changing delete rules are inferred. A value that must be
/// filled (an optional attribute made required), converted (a changed type) or carried (into
/// a renamed or split-off entity) needs `willMigrate`, which sees only the old models, and
/// `didMigrate`, which sees only the new ones; values cross between them in a carrier keyed by
/// each object's `persistentModelID`.
struct SwiftDataStage {
    let old: Schema
    let new: Schema
    private(set) var comments: [String] = []
    private(set) var carriers: [String] = []
    private(set) var willMigrate: [String] = []
    private(set) var didMigrate: [String] = []
    /// Backfills declared as defaults in the new version's models, by `Entity.attribute`.
    private(set) var addedDefaults: [String: String] = [:]
    private(set) var notes: [SwiftDataNote] = []
    /// Hooks requirements the stage calls (`SwiftDataHookRequirement`).
    private(set) var requirements: [SwiftDataHookRequirement] = []
    /// The stage throws the plan's error type (`<Schema>MigrationError`).
    private(set) var usesError = false

    var isCustom: Bool { !willMigrate.isEmpty || !didMigrate.isEmpty }
    var name: String { "migrateV\(label(old.version, fromMinor))toV\(label(new.version, toMinor))" }
    var fromName: String { SwiftDataVersion.enumName(old, minor: fromMinor) }
    var toName: String { SwiftDataVersion.enumName(new, minor: toMinor) }
    var carrierType: String { "\(new.name)MigrationCarriedValues" }
    /// The intermediate step's minor version (1) on either side; 0 for the schema's versions.
    let fromMinor: Int
    let toMinor: Int
    /// Attributes an intermediate step filled with converted values (`Entity.attribute`): every
    /// object has one, so making them required needs no fill.
    let filled: Set<String>
    /// Attributes an intermediate step added optional for the user to fill in the plan's
    /// `willMigrate` hook (`SwiftDataNewRequiredSplit`), by `Entity.attribute`.
    let userFilled: Set<String>
    /// Whether the stage calls the plan's `willMigrate` and `didMigrate` hooks: once per
    /// version step, however many stages the step takes.
    let callsWillMigrateHook: Bool
    let callsDidMigrateHook: Bool

    private func label(_ version: Int, _ minor: Int) -> String { minor == 0 ? String(version) : "\(version)_\(minor)" }

    init(
        from old: Schema, to new: Schema, fromMinor: Int = 0, toMinor: Int = 0, filled: Set<String> = [], userFilled: Set<String> = [],
        hooks: (willMigrate: Bool, didMigrate: Bool)? = nil
    ) {
        self.old = old
        self.new = new
        self.fromMinor = fromMinor
        self.toMinor = toMinor
        self.filled = filled
        self.userFilled = userFilled
        self.callsWillMigrateHook = hooks?.willMigrate ?? (fromMinor == 0)
        self.callsDidMigrateHook = hooks?.didMigrate ?? (toMinor == 0)
        plan()
    }

    private mutating func explain(_ text: String) { comments.append("// \(text)") }

    private mutating func note(_ subject: String, _ message: String, losesData: Bool = false) {
        comments.append("// Not migrated by this stage: \(message).")
        var note = SwiftDataNote(version: new.version, subject: subject, message: message, location: location(of: subject))
        note.isIncompleteStage = true
        note.losesData = losesData
        notes.append(note)
    }

    /// Where the new version declares `Entity.member` (or the entity).
    func location(of subject: String) -> SourceLocation? {
        let parts = subject.split(separator: ".", maxSplits: 1).map(String.init)
        guard let entity = new.entity(named: parts[0]) else { return nil }
        guard parts.count == 2 else { return entity.location }
        return entity.attribute(named: parts[1])?.location ?? entity.relationship(named: parts[1])?.location ?? entity.location
    }

    private func oldType(_ entity: String) -> String { "\(fromName).\(SwiftSyntax.identifier(entity))" }
    private func newType(_ entity: String) -> String { "\(toName).\(SwiftSyntax.identifier(entity))" }

    private func carrierName(_ parts: [String]) -> String {
        "carried" + parts.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    // MARK: - Planning

    private mutating func plan() {
        var matchedOld: Set<String> = []
        for entity in new.entities {
            if let before = old.entity(named: entity.name) {
                matchedOld.insert(before.name)
                compare(before, entity)
            } else if let renamed = entity.renamedFrom, let before = old.entity(named: renamed), new.entity(named: renamed) == nil {
                matchedOld.insert(before.name)
                carryRenamedEntity(before, entity)
            } else {
                explain("Lightweight: adds the entity \(entity.name).")
                if let owner = movedInPlace(into: entity) {
                    fillSplit(entity, from: owner)
                    continue
                }
                for attribute in entity.attributes {
                    guard let moved = attribute.movedFrom, let source = old.entity(named: moved.entity), let sourceAttribute = source.attribute(named: moved.attribute) else { continue }
                    carrySplit(attribute, of: entity, from: sourceAttribute, of: source)
                }
            }
        }
        for entity in old.entities where !matchedOld.contains(entity.name) {
            explain("Lightweight: removes the entity \(entity.name) and its objects.")
        }
        if comments.isEmpty { explain("Lightweight: no change SwiftData stores (documentation, or options kept outside the store).") }
    }

    private mutating func compare(_ before: Entity, _ after: Entity) {
        var matched: Set<String> = []
        for attribute in after.attributes where !attribute.isTransient {
            let subject = "\(after.name).\(attribute.name)"
            // Where it says it came from first: a type-change step's new attribute renames the
            // converted copy while the old one of the same name goes.
            let previous = attribute.renamedFrom.flatMap { before.attribute(named: $0) } ?? before.attribute(named: attribute.name)
            guard let previous, !previous.isTransient else {
                if attribute.movedFrom != nil, let moved = attribute.movedFrom, let source = old.entity(named: moved.entity),
                    let sourceAttribute = source.attribute(named: moved.attribute)
                {
                    carrySplit(attribute, of: after, from: sourceAttribute, of: source)
                } else if attribute.isOptional || attribute.defaultValue != nil {
                    explain("Lightweight: adds \(subject)\(attribute.isOptional ? " (optional)" : ", existing objects taking its default").")
                } else if case .value(let value)? = attribute.backfill {
                    addedDefaults[subject] = SwiftSyntax.expression(for: value, type: attribute.type, schema: new)
                    explain("Lightweight: adds \(subject), existing objects taking its backfill, declared as its default in this version.")
                } else {
                    note(subject, "\(subject) is new and required without a default, so existing objects have no value for it; give it a default or a literal backfill")
                }
                continue
            }
            matched.insert(previous.name)
            if previous.name != attribute.name { explain("Lightweight: renames \(before.name).\(previous.name) to \(attribute.name) (originalName).") }
            if SwiftSyntax.typeName(previous.type) != SwiftSyntax.typeName(attribute.type) {
                carryConverted(previous, attribute, of: after)
            } else if previous.isOptional && !attribute.isOptional, filled.contains("\(before.name).\(previous.name)") {
                explain("Lightweight: \(subject) becomes required; the step before gave every object its converted value.")
            } else if previous.isOptional && !attribute.isOptional {
                fillRequired(previous, attribute, of: after)
            } else if !previous.isOptional && attribute.isOptional {
                explain("Lightweight: \(subject) becomes optional.")
            }
            if Self.isUniqueAlone(attribute, in: after) && !Self.isUniqueAlone(previous, in: before) { checkUnique(previous, becoming: attribute, of: before) }
        }
        for attribute in before.attributes where !attribute.isTransient && !matched.contains(attribute.name) {
            let movedAway = new.entities.contains { entity in entity.attributes.contains { $0.movedFromText == "\(before.name).\(attribute.name)" } }
            explain(
                movedAway
                    ? "Lightweight: removes \(before.name).\(attribute.name), whose values are now in the entity it moved into."
                    : "Lightweight: removes \(before.name).\(attribute.name) and its values.")
        }
        var matchedRelationships: Set<String> = []
        for relationship in after.relationships {
            let subject = "\(after.name).\(relationship.name)"
            guard let previous = before.relationship(named: relationship.name) ?? relationship.renamedFrom.flatMap({ before.relationship(named: $0) }) else {
                if !relationship.isToMany && !relationship.isOptional && old.entity(named: relationship.target) != nil {
                    note(subject, "\(subject) is a new required relationship, so existing objects have none; link them in didMigrate")
                } else {
                    explain("Lightweight: adds the relationship \(subject).")
                }
                continue
            }
            matchedRelationships.insert(previous.name)
            if previous.name != relationship.name { explain("Lightweight: renames the relationship \(before.name).\(previous.name) to \(relationship.name) (originalName).") }
            if previous.deleteRule != relationship.deleteRule { explain("Lightweight: \(subject)'s delete rule becomes \(relationship.deleteRule.rawValue).") }
            if previous.isOptional && !relationship.isOptional && !relationship.isToMany {
                note(subject, "\(subject) becomes required; objects without one make the migration fail, so link or delete them in willMigrate")
            }
        }
        for relationship in before.relationships where !matchedRelationships.contains(relationship.name) {
            explain("Lightweight: removes the relationship \(before.name).\(relationship.name).")
        }
    }

    // MARK: - Data work

    /// `value` of one type as an expression of another's, and whether it may fail (an
    /// optional); nil when there is no conversion.
    /// How a value of one type becomes another, when Swift can say it; `failable` when some
    /// values have no counterpart (the expression is then optional).
    static func conversion(_ value: String, from old: AttributeType, to new: AttributeType) -> (expression: String, failable: Bool)? {
        guard case .scalar(let from) = old, case .scalar(let to) = new else { return nil }
        let integers: Set<ScalarType> = [.int, .int8, .int16, .int32, .int64]
        let floating: Set<ScalarType> = [.double, .float]
        if integers.contains(to) && integers.contains(from) { return ("\(to.rawValue)(clamping: \(value))", false) }
        if floating.contains(to) && (integers.contains(from) || floating.contains(from)) { return ("\(to.rawValue)(\(value))", false) }
        if integers.contains(to) && floating.contains(from) { return ("\(to.rawValue)(exactly: \(value).rounded())", true) }
        if to == .decimal && integers.contains(from) { return ("Decimal(\(value))", false) }
        if to == .string && from != .data { return ("String(describing: \(value))", false) }
        if from == .string && (integers.contains(to) || floating.contains(to)) { return ("\(to.rawValue)(\(value))", true) }
        return nil
    }

    /// The value that fills objects lacking one: the literal backfill, else the default.
    private func fillValue(_ attribute: Attribute) -> String? {
        if case .value(let value)? = attribute.backfill { return SwiftSyntax.expression(for: value, type: attribute.type, schema: new) }
        return attribute.defaultValue.map { SwiftSyntax.expression(for: $0, type: attribute.type, schema: new) }
    }

    private mutating func fillRequired(_ previous: Attribute, _ attribute: Attribute, of entity: Entity) {
        let subject = "\(entity.name).\(attribute.name)"
        guard let value = fillValue(attribute) else {
            let models = SwiftDataVersion.enumName(old, minor: fromMinor)
            let fill = "fill" + [entity.name, attribute.name].map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
            let where_ = userFilled.contains("\(entity.name).\(previous.name)") ? ", where the step before added it optional" : ""
            explain(
                "Custom: \(subject) becomes required without a default or literal backfill; \(fill)(context:) of the plan's hooks gives it a value on \(models)'s models\(where_), and this stage checks every object has one."
            )
            note(
                subject,
                "\(subject) \(userFilled.contains("\(entity.name).\(previous.name)") ? "is new and required" : "becomes required") without a default or literal backfill, so existing objects have no value for it; write \(fill)(context:) in \(new.name)+MigrationPlan+Custom.swift to give every \(models).\(entity.name) one (the stage checks, and every build warns until it is written), or give it a default or a literal backfill"
            )
            requirements.append(
                SwiftDataHookRequirement(
                    name: fill,
                    doc:
                        "Gives every \(models).\(entity.name) a \(previous.name): version \(new.version) requires it, and it has no default. Runs in the stage into version \(new.version), after willMigrate(from: \(old.version)); the stage then checks every object has one."
                ))
            // An object left without a value fails the stage with what to do, before the
            // inferred step fails with Core Data's own error.
            let property = SwiftSyntax.identifier(previous.name)
            usesError = true
            let missing =
                "throw \(errorType)(description: \"a \(entity.name) has no \(attribute.name), which version \(new.version) requires: write \(fill)(context:) in \(new.name)+MigrationPlan+Custom.swift\")"
            willMigrate += ["try \(new.name)MigrationPlan.\(fill)(context: context)"]
            willMigrate += Self.batched(oldType(entity.name)) { object in ["if \(object).\(property) == nil { \(missing) }"] }
            return
        }
        explain("Custom: \(subject) becomes required; willMigrate fills objects that lack it with \(value) first, or the inferred step would fail on them.")
        let property = SwiftSyntax.identifier(previous.name)
        willMigrate += Self.batched(oldType(entity.name)) { object in ["if \(object).\(property) == nil { \(object).\(property) = \(value) }"] }
    }

    private mutating func carryConverted(_ previous: Attribute, _ attribute: Attribute, of entity: Entity) {
        let subject = "\(entity.name).\(attribute.name)"
        guard let converted = Self.conversion("value", from: previous.type, to: attribute.type) else {
            note(subject, "\(subject) changes type from \(previous.type) to \(attribute.type), which has no conversion; its values are not carried", losesData: true)
            return
        }
        explain("Custom: \(subject) changes type from \(previous.type) to \(attribute.type); willMigrate keeps each value, didMigrate stores it converted.")
        let (carrier, key) = keepValues(of: previous, in: entity.name, carrierFor: [entity.name, attribute.name])
        let new = SwiftSyntax.identifier(attribute.name)
        didMigrate += ["for object in try context.fetch(FetchDescriptor<\(newType(entity.name))>()) {"]
        didMigrate += ["    guard let value = \(carrier).value(for: object.\(key)) else { continue }"]
        if !converted.failable || attribute.isOptional {
            didMigrate += ["    object.\(new) = \(converted.expression)"]
        } else {
            // A value the new type cannot hold keeps the default the inferred step gave it.
            didMigrate += ["    if let converted = \(converted.expression) { object.\(new) = converted }"]
        }
        didMigrate += ["}"]
    }

    /// The intermediate step's work: each object's old value, converted, into the copy beside it.
    mutating func fillConverted(_ copy: Attribute, from source: Attribute, of entity: Entity, final: Attribute) {
        guard let converted = Self.conversion("value", from: source.type, to: copy.type) else { return }
        explain(
            "Custom: \(entity.name).\(final.name) changes type from \(source.type) to \(copy.type); this step adds \(copy.name) beside it and didMigrate fills it with each value converted, the next renames it \(final.name)."
        )
        let property = SwiftSyntax.identifier(copy.name), old = SwiftSyntax.identifier(source.name)
        didMigrate += Self.batched(newType(entity.name)) { object in
            source.isOptional
                ? ["if let value = \(object).\(old) { \(object).\(property) = \(converted.expression) }"]
                : ["let value = \(object).\(old)", "\(object).\(property) = \(converted.expression)"]
        }
    }

    /// A loop over every object of a model, a batch at a time so a large store is not held in
    /// memory at once, saving after each batch. `fetch(_:batchSize:)` (iOS 17) fixes the list of
    /// objects when it runs and brings them in as they are reached, so the loop sees each object
    /// once whatever it changes; pages by `fetchOffset` would need an order no change can move.
    static func batched(_ model: String, _ body: (String) -> [String]) -> [String] {
        ["for (index, object) in try context.fetch(FetchDescriptor<\(model)>(), batchSize: 500).enumerated() {"]
            + body("object").map { "    " + $0 } + [
                "    if index % 500 == 499 { try context.save() }",
                "}",
            ]
    }

    /// What identifies an entity's objects on both sides of the stage: a required unique
    /// attribute (or one-attribute key) of the same name and type in both versions, whose value
    /// the inferred step keeps; else `persistentModelID`, whose stability across a stage Apple
    /// does not document.
    func carryKey(of entity: String) -> (expression: String, type: String) {
        if let before = old.entity(named: entity), let after = new.entity(named: entity) {
            func key(_ entity: Entity) -> Attribute? {
                if case .members(let members) = entity.primaryKey, members.count == 1, let attribute = entity.attribute(named: members[0]) { return attribute }
                return entity.attributes.first { $0.isUnique && !$0.isOptional && !$0.isTransient }
            }
            if let oldKey = key(before), let newKey = key(after), oldKey.name == newKey.name, SwiftSyntax.typeName(oldKey.type) == SwiftSyntax.typeName(newKey.type) {
                return (SwiftSyntax.identifier(oldKey.name), SwiftSyntax.typeName(oldKey.type))
            }
        }
        return ("persistentModelID", "PersistentIdentifier")
    }

    /// Declares a carrier and has `willMigrate` keep each old object's value of `attribute` in
    /// it by the object's key (`carryKey`); the carrier's name and the key.
    private mutating func keepValues(of attribute: Attribute, in entity: String, carrierFor parts: [String]) -> (carrier: String, key: String) {
        let carrier = carrierName(parts)
        let key = carryKey(of: entity)
        carriers.append("let \(carrier) = \(carrierType)<\(key.type), \(SwiftSyntax.typeName(attribute.type))>()")
        let old = SwiftSyntax.identifier(attribute.name)
        willMigrate += Self.batched(oldType(entity)) { object in
            attribute.isOptional
                ? ["if let value = \(object).\(old) { \(carrier).keep(value, for: \(object).\(key.expression)) }"]
                : ["\(carrier).keep(\(object).\(old), for: \(object).\(key.expression))"]
        }
        return (carrier, key.expression)
    }

    /// The error a custom stage throws when a carried value finds no object to go to.
    var errorType: String { "\(new.name)MigrationError" }

    /// The entity a new entity's moved attributes come from, when this stage's new models still
    /// have them there (the intermediate step of `SwiftDataIntermediateStep`).
    private func movedInPlace(into entity: Entity) -> Entity? {
        let moved = entity.attributes.filter { $0.movedFrom != nil }
        guard let ownerName = moved.first?.movedFrom?.entity, old.entity(named: ownerName) != nil, let owner = new.entity(named: ownerName),
            moved.allSatisfy({ $0.movedFrom?.entity == ownerName && owner.attribute(named: $0.movedFrom!.attribute) != nil }),
            entity.relationships.contains(where: { !$0.isToMany && $0.target == ownerName })
        else { return nil }
        return owner
    }

    /// Whether the models make the attribute unique on its own (`@Attribute(.unique)`): `unique`,
    /// a one-attribute key, or a one-attribute unique list.
    static func isUniqueAlone(_ attribute: Attribute, in entity: Entity) -> Bool {
        attribute.isUnique || entity.primaryKey == .members([attribute.name]) || entity.uniques.contains([attribute.name])
    }

    /// An attribute that becomes unique: objects that share a value make the inferred step
    /// fail with Core Data's own error, so `willMigrate` looks for them first, after the user's
    /// hook had its chance to remove them, and stops with one that says what to do. The value
    /// is not in the message: it may be a secret (an encrypted attribute).
    private mutating func checkUnique(_ previous: Attribute, becoming attribute: Attribute, of entity: Entity) {
        let subject = "\(entity.name).\(attribute.name)"
        guard case .scalar = previous.type else {
            note(subject, "\(subject) becomes unique, and objects that share a value make the migration fail; remove the duplicates in willMigrate(from: \(old.version)) of the plan's hooks")
            return
        }
        explain(
            "Custom: \(subject) becomes unique; willMigrate stops the migration with what to do when two objects share a value (remove the duplicates in willMigrate(from: \(old.version)) of the plan's hooks), which the inferred step would fail on."
        )
        usesError = true
        let seen = "seen" + carrierName([entity.name, previous.name]).dropFirst("carried".count)
        let property = SwiftSyntax.identifier(previous.name)
        let shared =
            "throw \(errorType)(description: \"two \(entity.name) objects share a value of \(previous.name), which version \(new.version) makes unique: remove or change the duplicates in willMigrate(from: \(old.version)) of \(new.name)+MigrationPlan+Custom.swift\")"
        willMigrate += ["var \(seen) = Set<\(SwiftSyntax.typeName(previous.type))>()"]
        willMigrate += Self.batched(oldType(entity.name)) { object in
            previous.isOptional
                ? ["if let value = \(object).\(property), !\(seen).insert(value).inserted { \(shared) }"]
                : ["if !\(seen).insert(\(object).\(property)).inserted { \(shared) }"]
        }
    }

    /// The intermediate step of a split: the new entity and the attributes it takes both exist
    /// on this stage's new models, so `didMigrate` makes one object per owner that has a value,
    /// linked to it; the next stage drops the old attributes.
    private mutating func fillSplit(_ entity: Entity, from owner: Entity) {
        guard let link = entity.relationships.first(where: { !$0.isToMany && $0.target == owner.name }) else { return }
        var bindings: [String] = []
        var anyValue: [String] = []
        var arguments: [String] = []
        for attribute in entity.attributes where !attribute.isTransient {
            guard let moved = attribute.movedFrom, let source = owner.attribute(named: moved.attribute) else { continue }
            let read = "object.\(SwiftSyntax.identifier(source.name))"
            let sameType = SwiftSyntax.typeName(source.type) == SwiftSyntax.typeName(attribute.type)
            let converted = sameType ? nil : Self.conversion("$0", from: source.type, to: attribute.type)
            guard sameType || (converted != nil && (!converted!.failable || attribute.isOptional)) else {
                note("\(entity.name).\(attribute.name)", "\(entity.name).\(attribute.name) moves from \(owner.name).\(source.name) with a type that has no conversion", losesData: true)
                return
            }
            let value: String
            if !source.isOptional {
                value = converted == nil ? read : Self.conversion(read, from: source.type, to: attribute.type)!.expression
            } else if attribute.isOptional {
                anyValue.append("\(read) != nil")
                value = converted.map { "\(read).\($0.failable ? "flatMap" : "map") { \($0.expression) }" } ?? read
            } else {
                // A required attribute from an optional one: only owners with a value get an object.
                let name = "moved\(bindings.count)"
                bindings.append("let \(name) = \(read)")
                value = converted == nil ? name : Self.conversion(name, from: source.type, to: attribute.type)!.expression
            }
            arguments.append("\(SwiftSyntax.identifier(attribute.name)): \(value)")
        }
        arguments.append("\(SwiftSyntax.identifier(link.name)): object")
        let insert = "context.insert(\(newType(entity.name))(\(arguments.joined(separator: ", "))))"
        let sources = entity.attributes.compactMap(\.movedFrom).map { "\(owner.name).\($0.attribute)" }.joined(separator: ", ")
        explain(
            "Custom: \(sources) move\(sources.contains(",") ? "" : "s") into the new entity \(entity.name); this step adds it beside them and didMigrate makes a \(entity.name) for each \(owner.name) with a value, linked to it; the next step removes the old attributes."
        )
        // An owner whose values cannot all move (a required one is empty) stops the stage, unless
        // it has no value to move at all: nothing is dropped without a word.
        let optionalSources = entity.attributes.compactMap(\.movedFrom).compactMap { owner.attribute(named: $0.attribute) }.filter(\.isOptional)
        let anySource = optionalSources.map { "object.\(SwiftSyntax.identifier($0.name)) != nil" }.joined(separator: " || ")
        let stranded =
            "throw \(errorType)(description: \"a \(owner.name) has values to move into \(entity.name) but not the required ones, so they would be lost: give them in willMigrate(from: \(old.version)) of \(new.name)+MigrationPlan+Custom.swift\")"
        if !bindings.isEmpty { usesError = true }
        didMigrate += Self.batched(newType(owner.name)) { _ in
            if !bindings.isEmpty { return ["if \(bindings.joined(separator: ", ")) {", "    \(insert)", "} else if \(anySource) {", "    \(stranded)", "}"] }
            if anyValue.count == arguments.count - 1 { return ["if \(anyValue.joined(separator: " || ")) {", "    \(insert)", "}"] }
            return [insert]
        }
    }

    /// Values of an attribute that moved into a new entity (a split): kept per owner, then
    /// inserted as the new entity's objects linked to their owner.
    private mutating func carrySplit(_ attribute: Attribute, of entity: Entity, from source: Attribute, of owner: Entity) {
        let subject = "\(entity.name).\(attribute.name)"
        guard let link = entity.relationships.first(where: { !$0.isToMany && $0.target == owner.name }), new.entity(named: owner.name) != nil else {
            note(subject, "\(subject) moves from \(owner.name).\(source.name), but \(entity.name) has no to-one relationship to \(owner.name) to link the new objects by", losesData: true)
            return
        }
        var arguments: [String] = []
        for other in entity.attributes where !other.isTransient {
            if other.name == attribute.name {
                let converted = Self.conversion("value", from: source.type, to: other.type)
                let value = SwiftSyntax.typeName(source.type) == SwiftSyntax.typeName(other.type) ? "value" : converted.flatMap { $0.failable ? nil : $0.expression }
                guard let value else {
                    note(subject, "\(subject) moves from \(owner.name).\(source.name) with a type that has no conversion", losesData: true)
                    return
                }
                arguments.append("\(SwiftSyntax.identifier(other.name)): \(value)")
            } else if !other.isOptional && other.defaultValue == nil {
                note(subject, "\(subject) moves from \(owner.name).\(source.name), but \(entity.name).\(other.name) is required and has no default, so the new objects cannot be made", losesData: true)
                return
            }
        }
        for relationship in entity.relationships where !relationship.isToMany {
            if relationship.name == link.name {
                arguments.append("\(SwiftSyntax.identifier(link.name)): object")
            } else if !relationship.isOptional {
                note(subject, "\(subject) moves from \(owner.name).\(source.name), but \(entity.name).\(relationship.name) is required, so the new objects cannot be made", losesData: true)
                return
            }
        }
        explain("Custom: \(owner.name).\(source.name) moves into the new entity \(entity.name); willMigrate keeps each value, didMigrate inserts a \(entity.name) linked to its \(owner.name).")
        let (carrier, key) = keepValues(of: source, in: owner.name, carrierFor: [entity.name, attribute.name])
        let owners = "by" + owner.name.prefix(1).uppercased() + owner.name.dropFirst()
        didMigrate += [
            "let \(owners) = Dictionary(try context.fetch(FetchDescriptor<\(newType(owner.name))>()).map { ($0.\(key), $0) }, uniquingKeysWith: { first, _ in first })",
            "for (key, value) in \(carrier).entries {",
            "    guard let object = \(owners)[key] else {",
            "        throw \(errorType)(description: \"no \(owner.name) \\(key) after the stage, so its \(source.name) has nowhere to go\")",
            "    }",
            "    context.insert(\(newType(entity.name))(\(arguments.joined(separator: ", "))))",
            "}",
        ]
    }

    /// A renamed entity: SwiftData sees a removed entity and a new one, so the stage keeps each
    /// object's attribute values and inserts them as the new entity's objects.
    private mutating func carryRenamedEntity(_ before: Entity, _ after: Entity) {
        guard let kept = carriedAttributes(before, after), let (links, unlinked) = carriedLinks(before, after) else { return }
        explain(
            "Custom: the entity \(before.name) becomes \(after.name); willMigrate keeps each object's values\(links.isEmpty ? "" : " and links"), didMigrate inserts them as \(after.name) objects.")
        if !unlinked.isEmpty {
            let message =
                "\(after.name) renames \(before.name): \(unlinked.map { "'\($0)'" }.joined(separator: ", ")) had no counterpart in \(before.name) to carry, so the new objects start without it"
            notes.append(SwiftDataNote(version: new.version, subject: after.name, message: message))
            comments.append("// \(message).")
        }
        let carrier = carrierName([after.name])
        let tupleType =
            kept.count == 1
            ? SwiftSyntax.typeName(of: kept[0].old)
            : "(" + kept.map { SwiftSyntax.typeName(of: $0.old) }.joined(separator: ", ") + ")"
        // The old objects' identities only pair their values with their links, inside the stage.
        carriers.append("let \(carrier) = \(carrierType)<PersistentIdentifier, \(kept.isEmpty ? "Void" : tupleType)>()")
        let tuple = kept.count == 1 ? "object.\(SwiftSyntax.identifier(kept[0].old.name))" : "(" + kept.map { "object.\(SwiftSyntax.identifier($0.old.name))" }.joined(separator: ", ") + ")"
        let (linkLoop, relinks) = carryLinks(links, of: after)
        willMigrate += Self.batched(oldType(before.name)) { _ in ["\(carrier).keep(\(kept.isEmpty ? "()" : tuple), for: object.persistentModelID)"] + linkLoop }
        let arguments = kept.enumerated().map { index, pair in "\(SwiftSyntax.identifier(pair.new.name)): \(kept.count == 1 ? "values" : "values.\(index)")" }
        let made = "\(newType(after.name))(\(arguments.joined(separator: ", ")))"
        let values = kept.isEmpty ? "_" : "values"
        if relinks.isEmpty {
            didMigrate += ["for (_, \(values)) in \(carrier).entries {", "    context.insert(\(made))", "}"]
        } else {
            didMigrate += ["for (model, \(values)) in \(carrier).entries {", "    let inserted = \(made)", "    context.insert(inserted)"] + relinks + ["}"]
        }
    }

    /// The attributes a renamed entity's objects carry, old and new; nil (noted) when a required
    /// one has neither a value in the old entity nor a default.
    private mutating func carriedAttributes(_ before: Entity, _ after: Entity) -> [(old: Attribute, new: Attribute)]? {
        var kept: [(old: Attribute, new: Attribute)] = []
        for attribute in after.attributes where !attribute.isTransient {
            if let previous = before.attribute(named: attribute.name) ?? attribute.renamedFrom.flatMap({ before.attribute(named: $0) }),
                SwiftSyntax.typeName(previous.type) == SwiftSyntax.typeName(attribute.type), !(previous.isOptional && !attribute.isOptional)
            {
                kept.append((previous, attribute))
            } else if !attribute.isOptional && attribute.defaultValue == nil {
                note(
                    after.name, "\(after.name) renames \(before.name), but \(after.name).\(attribute.name) has no value in \(before.name) and no default, so its objects cannot be carried",
                    losesData: true)
                return nil
            }
        }
        return kept
    }

    /// The links a renamed entity's objects carry: to objects of entities kept under their name,
    /// by those objects' identities, which survive the stage. Also the relationships that start
    /// empty; nil (noted) when a required one cannot be given.
    private mutating func carriedLinks(_ before: Entity, _ after: Entity) -> (links: [(relationship: Relationship, previous: Relationship)], unlinked: [String])? {
        var links: [(relationship: Relationship, previous: Relationship)] = []
        var unlinked: [String] = []
        for relationship in after.relationships {
            let previous = before.relationship(named: relationship.name) ?? relationship.renamedFrom.flatMap { before.relationship(named: $0) }
            guard let previous, previous.target == relationship.target, relationship.target != after.name, previous.target != before.name,
                old.entity(named: relationship.target) != nil, previous.isToMany == relationship.isToMany
            else {
                if !relationship.isToMany && !relationship.isOptional {
                    note(
                        after.name, "\(after.name) renames \(before.name), but its required relationship '\(relationship.name)' has no link in \(before.name) the carried objects can be given",
                        losesData: true)
                    return nil
                }
                unlinked.append(relationship.name)
                continue
            }
            if !relationship.isToMany && !relationship.isOptional {
                note(
                    after.name, "\(after.name) renames \(before.name), but its required relationship '\(relationship.name)' must be given when an object is made; make it optional for the step",
                    losesData: true)
                return nil
            }
            links.append((relationship, previous))
        }
        return (links, unlinked)
    }

    /// For each carried link: its carrier, the lines willMigrate's loop keeps it with, and the
    /// lines that link an inserted object again in didMigrate, after the linked objects' lookups.
    private mutating func carryLinks(_ links: [(relationship: Relationship, previous: Relationship)], of after: Entity) -> (loop: [String], relinks: [String]) {
        var loop: [String] = []
        var relinks: [String] = []
        var lookups: [String: String] = [:]
        for (relationship, previous) in links {
            let linkCarrier = carrierName([after.name, relationship.name])
            let oldName = SwiftSyntax.identifier(previous.name)
            let lookup = "by" + relationship.target.prefix(1).uppercased() + relationship.target.dropFirst()
            lookups[relationship.target] = lookup
            let newName = SwiftSyntax.identifier(relationship.name)
            // The linked objects by their key, which the inferred step keeps.
            let key = carryKey(of: relationship.target)
            let missing = "throw \(errorType)(description: \"no \(relationship.target) \\(key) after the stage for a \(after.name)'s \(relationship.name)\")"
            if relationship.isToMany {
                carriers.append("let \(linkCarrier) = \(carrierType)<PersistentIdentifier, [\(key.type)]>()")
                // CloudKit schemas declare to-many relationships optional.
                let oldObjects = old.cloudKit ? "(object.\(oldName) ?? [])" : "object.\(oldName)"
                loop += ["\(linkCarrier).keep(\(oldObjects).map(\\.\(key.expression)), for: object.persistentModelID)"]
                relinks += [
                    "    for key in \(linkCarrier).value(for: model) ?? [] {",
                    "        guard let related = \(lookup)[key] else { \(missing) }",
                    new.cloudKit ? "        inserted.\(newName) = (inserted.\(newName) ?? []) + [related]" : "        inserted.\(newName).append(related)",
                    "    }",
                ]
            } else {
                carriers.append("let \(linkCarrier) = \(carrierType)<PersistentIdentifier, \(key.type)>()")
                loop += ["if let related = object.\(oldName) { \(linkCarrier).keep(related.\(key.expression), for: object.persistentModelID) }"]
                relinks += [
                    "    if let key = \(linkCarrier).value(for: model) {",
                    "        guard let related = \(lookup)[key] else { \(missing) }",
                    "        inserted.\(newName) = related",
                    "    }",
                ]
            }
        }
        for (target, lookup) in lookups.sorted(by: { $0.key < $1.key }) {
            let key = carryKey(of: target).expression
            didMigrate += [
                "let \(lookup) = Dictionary(try context.fetch(FetchDescriptor<\(newType(target))>()).map { ($0.\(key), $0) }, uniquingKeysWith: { first, _ in first })"
            ]
        }
        return (loop, relinks)
    }

    // MARK: - Template data

    var value: MustacheValue {
        var lines: [String] = []
        // The user's hooks run in every stage, first in willMigrate and last in didMigrate, so
        // what the user writes there runs whatever the stage is. A type change's two stages
        // call them once: from the old version, then into the new one.
        let plan = "\(new.name)MigrationPlan"
        let willMigrate = (callsWillMigrateHook ? ["try \(plan).willMigrate(from: \(old.version), context: context)"] : []) + self.willMigrate
        let didMigrate = self.didMigrate + (callsDidMigrateHook ? ["try \(plan).didMigrate(to: \(new.version), context: context)"] : [])
        if !willMigrate.isEmpty || !didMigrate.isEmpty {
            lines += carriers
            lines.append("\(carriers.isEmpty ? "" : "return ").custom(")
            lines.append("    fromVersion: \(fromName).self, toVersion: \(toName).self,")
            func handler(_ label: String, _ body: [String], last: Bool) {
                let end = last ? ")" : ","
                if body.isEmpty {
                    lines.append("    \(label): nil\(end)")
                    return
                }
                lines.append("    \(label): { context in")
                lines += body.map { "        " + $0 }
                lines.append("        try context.save()")
                lines.append("    }\(end)")
            }
            handler("willMigrate", willMigrate, last: false)
            handler("didMigrate", didMigrate, last: true)
        } else {
            lines.append(".lightweight(fromVersion: \(fromName).self, toVersion: \(toName).self)")
        }
        return .object([
            "name": .string(name),
            "comments": .lines(comments),
            "isCustom": .bool(isCustom),
            "body": .lines(lines),
        ])
    }
}

/// A step whose attributes change type, split in two as Apple describes staged migrations (each
/// stage one kind of change): the inferred step between `willMigrate` and `didMigrate` cannot
/// map a type, so a custom stage that converts in its handlers still loses the values. First
/// `intermediate`, the old version with a copy of each such attribute in its new type beside
/// it (optional, so adding it is inferred), whose `didMigrate` converts every value into the
/// copy; then `final`, the new version whose attribute renames the copy (`originalName:`) while
/// the old one goes.
struct SwiftDataTypeChangeSplit {
    let intermediate: Schema
    let final: Schema
    let copies: [(entity: Entity, source: Attribute, copy: Attribute, final: Attribute)]
    /// The copies every object has a value in (`Entity.copy`): converted without loss from a
    /// required attribute.
    let filled: Set<String>

    init?(from old: Schema, to new: Schema) {
        var intermediate = old, final = new
        var copies: [(entity: Entity, source: Attribute, copy: Attribute, final: Attribute)] = []
        var filled: Set<String> = []
        for (entityIndex, entity) in new.entities.enumerated() {
            guard let before = old.entity(named: entity.name) ?? entity.renamedFrom.flatMap(old.entity(named:)),
                let beforeIndex = intermediate.entities.firstIndex(where: { $0.name == before.name })
            else { continue }
            var taken = Set(before.attributes.map(\.name) + before.relationships.map(\.name) + entity.attributes.map(\.name) + entity.relationships.map(\.name))
            for (attributeIndex, attribute) in entity.attributes.enumerated() where !attribute.isTransient {
                guard let previous = attribute.renamedFrom.flatMap(before.attribute(named:)) ?? before.attribute(named: attribute.name), !previous.isTransient,
                    SwiftSyntax.typeName(previous.type) != SwiftSyntax.typeName(attribute.type),
                    let conversion = SwiftDataStage.conversion("value", from: previous.type, to: attribute.type)
                else { continue }
                var name = attribute.name + "Converted"
                while taken.contains(name) { name += "_" }
                taken.insert(name)
                var copy = attribute
                copy.name = name
                copy.columnName = Naming.defaultName(of: name)
                copy.jsonKey = name
                copy.isOptional = true
                copy.defaultValue = nil
                copy.backfill = nil
                copy.renamedFrom = nil
                copy.movedFromText = nil
                copy.doc = nil
                copy.coreData = nil
                (copy.isUnique, copy.isPrimaryKey, copy.isIndexed, copy.isSearchable) = (false, false, false, false)
                (copy.isEncrypted, copy.encryptsDeterministically, copy.preservesValueOnDeletion, copy.usesExternalStorage) = (false, false, false, false)
                intermediate.entities[beforeIndex].attributes.append(copy)
                final.entities[entityIndex].attributes[attributeIndex].renamedFrom = name
                copies.append((intermediate.entities[beforeIndex], previous, copy, final.entities[entityIndex].attributes[attributeIndex]))
                if !conversion.failable, !previous.isOptional { filled.insert("\(before.name).\(name)") }
            }
        }
        guard !copies.isEmpty else { return nil }
        self.intermediate = intermediate
        self.final = final
        self.copies = copies
        self.filled = filled
    }
}

/// A step that adds a required attribute with no default or literal backfill to an entity that
/// has objects, split in two: SwiftData's inferred step cannot give existing objects a value,
/// and the old version's models in `willMigrate` do not have the attribute yet. First
/// `intermediate`, the old version with each such attribute added optional (an inferred step),
/// then the new version, whose stage runs the plan's `willMigrate` hook on the intermediate's
/// models, where the user fills them, and checks every object has a value before the inferred
/// step makes them required.
struct SwiftDataNewRequiredSplit {
    let intermediate: Schema
    /// The attributes the user fills, `Entity.attribute` (the intermediate's names).
    let added: Set<String>

    init?(from old: Schema, to new: Schema) {
        var intermediate = old
        var added: Set<String> = []
        for entity in new.entities {
            guard let before = old.entity(named: entity.name) ?? entity.renamedFrom.flatMap(old.entity(named:)),
                let beforeIndex = intermediate.entities.firstIndex(where: { $0.name == before.name })
            else { continue }
            for attribute in entity.attributes where !attribute.isTransient && !attribute.isOptional && attribute.defaultValue == nil && attribute.movedFrom == nil {
                guard attribute.renamedFrom.flatMap(before.attribute(named:)) == nil, before.attribute(named: attribute.name) == nil else { continue }
                if case .value? = attribute.backfill { continue }
                var optional = attribute
                optional.isOptional = true
                optional.backfill = nil
                optional.renamedFrom = nil
                optional.doc = nil
                (optional.isUnique, optional.isPrimaryKey, optional.isIndexed, optional.isSearchable) = (false, false, false, false)
                intermediate.entities[beforeIndex].attributes.append(optional)
                added.insert("\(before.name).\(attribute.name)")
            }
        }
        guard !added.isEmpty else { return nil }
        self.intermediate = intermediate
        self.added = added
    }
}

/// A version step the inferred migration cannot take with handlers alone, through an
/// intermediate version (as Apple describes staged migrations: each stage one kind of change).
/// The intermediate is the old version with what the step needs beside it:
/// - a copy of each attribute that changes type, in its new type (`SwiftDataTypeChangeSplit`);
/// - each new required attribute without a default or literal backfill, optional, for the
///   plan's `willMigrate` hook to fill (`SwiftDataNewRequiredSplit`);
/// - each new entity that attributes move into, linked to the entity they come from, so the
///   first stage's `didMigrate` makes its objects from values on the same models, with no
///   identity carried across an inferred step.
/// The second stage is then the inferred step from the intermediate to the new version, with
/// the checks that every required value is there.
struct SwiftDataIntermediateStep {
    let intermediate: Schema
    let final: Schema
    let copies: [(entity: Entity, source: Attribute, copy: Attribute, final: Attribute)]
    /// Copies every object has a value in (`Entity.copy`).
    let filled: Set<String>
    /// Attributes the user fills in the plan's `willMigrate` hook (`Entity.attribute`): the
    /// hooks then run in the second stage, where those attributes exist.
    let userFilled: Set<String>
    /// New entities the intermediate adds for moved attributes.
    let splitEntities: Set<String>

    init?(from old: Schema, to new: Schema) {
        let typeChange = SwiftDataTypeChangeSplit(from: old, to: new)
        var intermediate = typeChange?.intermediate ?? old
        let final = typeChange?.final ?? new
        let added = SwiftDataNewRequiredSplit(from: intermediate, to: final)
        intermediate = added?.intermediate ?? intermediate
        let splitEntities = Self.addSplitEntities(to: &intermediate, old: old, final: final)
        guard typeChange != nil || added != nil || !splitEntities.isEmpty else { return nil }
        self.intermediate = intermediate
        self.final = final
        self.copies = typeChange?.copies ?? []
        self.filled = typeChange?.filled ?? []
        self.userFilled = added?.added ?? []
        self.splitEntities = splitEntities
    }

    /// Adds to `intermediate` each new entity of `final` that attributes move into from one
    /// old entity, as `final` declares it but with only its link to that entity (and the link's
    /// inverse on it); the names of those added. An entity is left to the stage's own carrying
    /// (`SwiftDataStage.carrySplit`, which says why it cannot) when its objects cannot be made
    /// from the old entity's values alone, or a name would clash in the intermediate.
    static func addSplitEntities(to intermediate: inout Schema, old: Schema, final: Schema) -> Set<String> {
        var added: Set<String> = []
        for entity in final.entities where old.entity(named: entity.name) == nil && entity.renamedFrom.flatMap(old.entity(named:)) == nil {
            let moved = entity.attributes.filter { !$0.isTransient && $0.movedFrom != nil }
            guard let ownerName = moved.first?.movedFrom?.entity, moved.allSatisfy({ $0.movedFrom?.entity == ownerName }),
                let ownerIndex = intermediate.entities.firstIndex(where: { $0.name == ownerName }), final.entity(named: ownerName) != nil,
                intermediate.entity(named: entity.name) == nil,
                let link = entity.relationships.first(where: { !$0.isToMany && $0.target == ownerName })
            else { continue }
            let owner = intermediate.entities[ownerIndex]
            guard moved.allSatisfy({ attribute in owner.attribute(named: attribute.movedFrom!.attribute).map { !$0.isTransient } ?? false }) else { continue }
            // Every other required member must come without a value from the old entity.
            let others = entity.attributes.filter { $0.movedFrom == nil && !$0.isTransient }
            guard others.allSatisfy({ $0.isOptional || $0.defaultValue != nil }),
                entity.relationships.allSatisfy({ $0.name == link.name || $0.isToMany || $0.isOptional })
            else { continue }
            let inverse = final.entity(named: ownerName)?.relationships.first { $0.target == entity.name && ($0.name == link.inverse || $0.inverse == link.name) }
            if let inverse, owner.attribute(named: inverse.name) != nil || owner.relationship(named: inverse.name) != nil { continue }
            var split = entity
            split.relationships = [link]
            // Unique only in the next step, which checks for duplicates first: here an insert
            // with a taken value would quietly update the object that has it (SwiftData's upsert).
            for index in split.attributes.indices { (split.attributes[index].isUnique, split.attributes[index].isPrimaryKey) = (false, false) }
            split.uniques = []
            split.primaryKey = .implicit
            let members = Set(split.attributes.map(\.name) + [link.name])
            split.indexes = split.indexes.filter { $0.allSatisfy(members.contains) }
            intermediate.entities.append(split)
            if let inverse { intermediate.entities[ownerIndex].relationships.append(inverse) }
            added.insert(entity.name)
        }
        return added
    }
}
