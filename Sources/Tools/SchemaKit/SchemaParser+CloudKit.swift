import Diagnostics
import YAMLReader

/// `cloudKit: true`: the rules CloudKit sets for a Core Data or SwiftData model it syncs. Apple's
/// "Creating a Core Data Model for CloudKit": no unique constraints, every relationship optional
/// and with an inverse, no Deny rule; its runtime refuses ordered relationships too (error
/// 134060). SwiftData's CloudKit sync also needs every attribute optional or with a default. A
/// model that breaks one fails to load in a CloudKit container, on the device.
extension SchemaParser {
    mutating func checkCloudKitRules() {
        func broken(_ message: String, at node: YAMLNode) { error(.cloudKit, "\(message) (the schema says cloudKit: true)", at: node) }
        for parsedEntity in entities {
            let entity = parsedEntity.model
            if !entity.uniques.isEmpty {
                broken("CloudKit allows no unique constraints, but entity '\(entity.name)' declares 'uniques'; check uniqueness in the app instead", at: parsedEntity.node("uniques"))
            }
            if parsedEntity.options.has("primaryKey") {
                broken("CloudKit allows no unique constraints, and a declared primary key of entity '\(entity.name)' is one; leave the key implicit", at: parsedEntity.node("primaryKey"))
            }
            for parsed in attributeNodes[entity.name] ?? [] {
                let attribute = parsed.model
                let what = "attribute '\(entity.name).\(attribute.name)'"
                if attribute.isUnique {
                    broken("CloudKit allows no unique constraints, but \(what) is unique", at: parsed.options.keyNode("unique") ?? parsed.nameNode)
                }
                if attribute.isPrimaryKey {
                    broken("CloudKit allows no unique constraints, but \(what) is the primary key; leave the key implicit", at: parsed.options.keyNode("primaryKey") ?? parsed.nameNode)
                }
                if !attribute.isTransient, !attribute.isOptional, attribute.defaultValue == nil {
                    broken("CloudKit needs every attribute optional or with a default, but \(what) is required without one; make it optional or give it a 'default'", at: parsed.nameNode)
                }
            }
            for parsed in relationshipNodes[entity.name] ?? [] {
                let relationship = entity.relationship(named: parsed.model.name) ?? parsed.model
                let what = "relationship '\(entity.name).\(relationship.name)'"
                if !relationship.isToMany, !relationship.isOptional {
                    broken("CloudKit needs every relationship optional, but \(what) is required; write '\(relationship.target)?'", at: parsed.options["to"] ?? parsed.nameNode)
                }
                if relationship.isToMany, let minimum = relationship.minCount, minimum > 0 {
                    broken("CloudKit needs every relationship optional, but \(what) has minCount \(minimum); remove it", at: parsed.options["minCount"] ?? parsed.nameNode)
                }
                if relationship.inverse == nil {
                    broken("CloudKit needs an inverse for every relationship, but \(what) has none; declare one on '\(relationship.target)' and name it in 'inverse'", at: parsed.nameNode)
                }
                if relationship.deleteRule == .deny {
                    broken("CloudKit does not allow the Deny delete rule, but \(what) has it; use nullify or cascade", at: parsed.options["deleteRule"] ?? parsed.nameNode)
                }
                // What an exported model writes as given counts as much as the schema's own words.
                let given = relationship.coreData?.attributes ?? [:]
                let at = parsed.options["coreData"] ?? parsed.nameNode
                if given["deletionRule"] == "Deny" { broken("CloudKit does not allow the Deny delete rule, but the 'coreData' of \(what) gives it", at: at) }
                if given["optional"] == "NO" { broken("CloudKit needs every relationship optional, but the 'coreData' of \(what) makes it required", at: at) }
                if given["ordered"] == "YES" { broken("CloudKit does not sync ordered relationships, but the 'coreData' of \(what) makes it ordered", at: at) }
            }
        }
    }
}
