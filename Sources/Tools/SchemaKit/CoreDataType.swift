/// Core Data's attribute types for the schema's: what `export coredata` writes, and what
/// Core Data's version hash sees of a type.
public enum CoreDataType {
    /// The Core Data type a schema type is stored as, and the schema type Core Data's reads
    /// back as (when they differ, the exact one travels in `schemagen.type`).
    ///
    ///     CoreDataType.of(.scalar(.int), in: schema).coreData   // "Integer 64"
    public static func of(_ type: AttributeType, in schema: Schema) -> (coreData: String, readsBackAs: String?, composite: String?) {
        switch type {
        case .scalar(let scalar):
            switch scalar {
            case .string: return ("String", "String", nil)
            case .int: return ("Integer 64", "Int64", nil)
            case .int8: return ("Integer 16", "Int16", nil)
            case .int16: return ("Integer 16", "Int16", nil)
            case .int32: return ("Integer 32", "Int32", nil)
            case .int64: return ("Integer 64", "Int64", nil)
            case .double: return ("Double", "Double", nil)
            case .float: return ("Float", "Float", nil)
            case .bool: return ("Boolean", "Bool", nil)
            case .date: return ("Date", "Date", nil)
            case .data: return ("Binary", "Data", nil)
            case .uuid: return ("UUID", "UUID", nil)
            case .url: return ("URI", "URL", nil)
            case .decimal: return ("Decimal", "Decimal", nil)
            }
        case .enumeration(let name):
            let raw = schema.enumType(named: name)?.rawType == .int ? ("Integer 64", "Int64") : ("String", "String")
            return (raw.0, raw.1, nil)
        case .value(let name): return ("Composite", name, name)
        case .array, .unresolved: return ("Transformable", "Data", nil)
        }
    }
}
