/// Derived names (constraints, indexes, triggers) fitted to a dialect's identifier limit: the
/// planner names constraints and indexes with it, the store its change triggers.
public enum SQLIdentifiers {
    /// Hex digits of the name's SHA-256 that keep two long names that share a beginning apart.
    static let hashDigits = 8

    /// `name` when it fits `limit` bytes (nil: no limit); else its longest beginning of whole
    /// characters that leaves room for `_` and `hashDigits` hex digits of its SHA-256, then
    /// those. PostgreSQL (63 bytes) cuts a longer name silently, which could make two names one.
    public static func fitted(_ name: String, to limit: Int?) -> String {
        guard let limit, name.utf8.count > limit else { return name }
        let room = limit - 1 - hashDigits
        var prefix = ""
        for character in name {
            guard prefix.utf8.count + String(character).utf8.count <= room else { break }
            prefix.append(character)
        }
        return prefix + "_" + String(SHA256.hex(name).prefix(hashDigits))
    }
}
