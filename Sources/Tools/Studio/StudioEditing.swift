import Foundation
import HTTPServer
import PersistentStoreCore
import SchemaKit
import SchemaMetadata
import TextEscaping

/// Edits: forms on the record pages, answered through the store's record writes
/// (`updateRecord`, `insertRecord`, `deleteRecord`). Each form carries the version of the record
/// it showed; a save over a record another writer changed meanwhile is refused with both.
extension StudioApp {
    /// Why a schema's records cannot be edited, or nil when they can.
    func readOnlyReason(_ entry: StudioCatalog.Entry) -> String? {
        if catalog.readOnly { return catalog.readOnlyReason ?? "the studio was started read-only" }
        if entry.newestVersion != entry.schema.version { return "the database is at version \(entry.schema.version), behind the schema file's \(entry.newestVersion)" }
        if entry.encryptionLocked { return "encrypted attributes are locked (no key)" }
        return nil
    }

    /// The record's key from the link (`k.<column>=<value>`).
    func recordKey(_ request: HTTPRequest, entity: EntityDescriptor, columns: StudioColumns, entry: StudioCatalog.Entry) throws -> [StoredValue] {
        try entity.primaryKey.map { key in
            guard let text = request.queryValue("k." + key), let column = columns.column(named: key),
                let value = StudioValues.stored(text, column: column, attribute: columns.attribute(of: column), schema: entry.schema)
            else { throw StudioFailure(.badRequest, "the link does not give the record's key (\(entity.primaryKey.joined(separator: ", ")))") }
            return value
        }
    }

    /// The record as stored now.
    func current(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, _ key: [StoredValue]) throws -> StoredRecord? {
        let filters = zip(entity.primaryKey, key).map { RecordFilter($0, .equals($1)) }
        return try waitingOnThisThread { try await entry.store.records(of: entity, where: filters, limit: 1).records.first }
    }

    /// A record's version, as its form carries it: a hash of its values (FNV-1a), which any
    /// write by anyone changes.
    static func version(_ record: StoredRecord) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for value in record.values {
            for byte in Array("\(value)".utf8) + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }

    /// Columns a form edits: not the key (except a new record's own), not bytes, not files. An
    /// encrypted text is edited as its text (the store seals it; without the key nothing is
    /// editable at all).
    func editable(_ columns: StudioColumns, entity: EntityDescriptor, includingKey: Bool) -> [ColumnDescriptor] {
        columns.shown.filter { column in
            if entity.primaryKey.contains(column.column) { return includingKey && !entity.hasImplicitKey }
            return (column.storage != .blob || Self.isEncryptedText(column)) && !column.usesExternalStorage
        }
    }

    /// An encrypted `String`: stored as sealed bytes, written and read as text.
    static func isEncryptedText(_ column: ColumnDescriptor) -> Bool { column.isEncrypted && column.swiftType == "String" }

    /// One labelled field of a form: a menu for enum cases and Booleans, a text field else; an
    /// optional column gets a nil box.
    func field(_ column: ColumnDescriptor, columns: StudioColumns, entry: StudioCatalog.Entry, text: String, isNil: Bool) -> String {
        let id = "c-" + column.column
        let label = columns.label(column)
        var out = "<div class=\"filter\"><label for=\"\(html(id))\">\(html(label))</label> "
        let attribute = columns.attribute(of: column)
        var choices: [String]?
        if let attribute, case .enumeration(let name) = attribute.type, let type = entry.schema.enumType(named: name) { choices = type.cases.map(\.name) }
        if column.storage == .boolean { choices = ["true", "false"] }
        if let choices {
            out += "<select id=\"\(html(id))\" name=\"c.\(html(column.column))\">"
            for choice in choices { out += "<option\(choice == text ? " selected" : "")>\(html(choice))</option>" }
            out += "</select>"
        } else {
            out += "<input id=\"\(html(id))\" name=\"c.\(html(column.column))\" value=\"\(html(text))\">"
        }
        if column.isOptional {
            out += " <input type=\"checkbox\" id=\"\(html(id))-nil\" name=\"nil.\(html(column.column))\"\(isNil ? " checked" : "")><label for=\"\(html(id))-nil\">nil</label>"
        }
        return out + " <span class=\"type\">\(html(column.swiftType))\(column.isOptional ? "?" : "")</span></div>\n"
    }

    /// The text a field shows for a stored value: an enum's case name, a Boolean as a word.
    func fieldText(_ value: StoredValue, column: ColumnDescriptor, columns: StudioColumns, entry: StudioCatalog.Entry) -> String {
        if let attribute = columns.attribute(of: column), case .enumeration(let name) = attribute.type, let type = entry.schema.enumType(named: name),
            let match = type.cases.first(where: { StudioValues.stored($0.rawValue) == value })
        {
            return match.name
        }
        if column.storage == .boolean {
            switch value {
            case .integer(let number): return number == 0 ? "false" : "true"
            case .text(let text): return text == "t" || text == "true" ? "true" : "false"
            default: return ""
            }
        }
        return StudioValues.plain(value)
    }

    /// The edit form and the delete link of a record page, or why there are none. `typed`: a
    /// refused form's fields (`c.<column>`, `nil.<column>`), shown again instead of the record's.
    func editSection(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, _ record: StoredRecord, columns: StudioColumns, typed: [String: String]? = nil) -> String {
        if let reason = readOnlyReason(entry) { return "<p class=\"note\">Read-only: \(html(reason)).</p>\n" }
        guard let link = recordLink(entry, entity, record) else { return "" }
        let query = link.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""
        var out = "<section aria-labelledby=\"edit\"><h2 id=\"edit\">Edit</h2><form method=\"post\" action=\"\(html("/r/\(path(entry.schema.name))/\(path(entity.name))?\(query)"))\">\n"
        out += "<input type=\"hidden\" name=\"version\" value=\"\(Self.version(record))\">\n"
        for column in editable(columns, entity: entity, includingKey: false) {
            if let typed, let text = typed["c." + column.column] {
                out += field(column, columns: columns, entry: entry, text: text, isNil: typed["nil." + column.column] != nil)
                continue
            }
            let value = record[column.column] ?? .null
            out += field(column, columns: columns, entry: entry, text: fieldText(value, column: column, columns: columns, entry: entry), isNil: value == .null)
        }
        out += "<button type=\"submit\">Save</button></form>\n"
        out += "<p><a href=\"\(html("/d/\(path(entry.schema.name))/\(path(entity.name))?\(query)"))\">Delete this \(html(entity.name))…</a></p></section>\n"
        return out
    }

    // MARK: - Pages of their own

    /// What deleting the record would do, and the button that does it.
    func deletePage(schema schemaName: String, entity entityName: String, request: HTTPRequest) throws -> HTTPResponse {
        let (entry, entity) = try locate(schemaName, entityName)
        let columns = StudioColumns(entity: entity, model: entry.schema.entity(named: entity.name), entry: entry)
        let key = try recordKey(request, entity: entity, columns: columns, entry: entry)
        if let reason = readOnlyReason(entry) { throw StudioFailure(.forbidden, "Read-only: \(reason).") }
        guard let record = try current(entry, entity, key), let link = recordLink(entry, entity, record) else { return notFound("No \(entity.name) has that key.") }
        let effects = try waitingOnThisThread { try await entry.store.deleteEffects(of: entity, key: key) }
        var body = "<p><a href=\"\(html(link))\">Back to the record</a></p>\n"
        let denied = effects.filter { $0.rule == .deny && $0.count > 0 }
        let reached = effects.filter { $0.count > 0 }
        if reached.isEmpty {
            body += "<p>No other record refers to it.</p>\n"
        } else {
            body += "<table><thead><tr><th scope=\"col\">Relationship</th><th scope=\"col\">Records</th><th scope=\"col\">What happens to them</th></tr></thead><tbody>\n"
            for effect in reached {
                let what =
                    switch effect.rule {
                    case .cascade: "deleted too (cascade), and what their own rules reach"
                    case .nullify: "kept, their link cleared (nullify)"
                    case .deny: "they stop the delete (deny): delete or unlink them first"
                    case .noAction: "kept as they are (no action)"
                    }
                // A rule further down a cascade is named with the entity it belongs to.
                let name = effect.source == entity.name ? effect.relationship : "\(effect.source).\(effect.relationship)"
                body += "<tr><td>\(html(name))</td><td class=\"number\">\(effect.count) \(html(effect.target))</td><td>\(what)</td></tr>\n"
            }
            body += "</tbody></table>\n"
        }
        if denied.isEmpty {
            let query = link.split(separator: "?", maxSplits: 1).last.map(String.init) ?? ""
            body += "<form method=\"post\" action=\"\(html("/d/\(path(entry.schema.name))/\(path(entity.name))?\(query)"))\">"
            body += "<input type=\"hidden\" name=\"version\" value=\"\(Self.version(record))\"><button type=\"submit\">Delete</button></form>\n"
        }
        return page("Delete this \(entity.name)?", body)
    }

    /// A form for a new record.
    func newPage(schema schemaName: String, entity entityName: String, request: HTTPRequest, given: [String: String] = [:], problem: String? = nil) throws
        -> HTTPResponse
    {
        let (entry, entity) = try locate(schemaName, entityName)
        if let reason = readOnlyReason(entry) { throw StudioFailure(.forbidden, "Read-only: \(reason).") }
        let columns = StudioColumns(entity: entity, model: entry.schema.entity(named: entity.name), entry: entry)
        var body = "<p><a href=\"\(html(listLink(entry, entity, filters: [], sort: nil, dir: "asc")))\">\(html(entity.name)) list</a></p>\n"
        if let problem { body += "<p class=\"warn\" role=\"alert\">\(html(problem))</p>\n" }
        body += "<form method=\"post\" action=\"/n/\(path(entry.schema.name))/\(path(entity.name))\">\n"
        for column in editable(columns, entity: entity, includingKey: true) {
            body += field(column, columns: columns, entry: entry, text: given[column.column] ?? "", isNil: false)
        }
        body += "<p class=\"note\">A key or date left empty that the schema makes (<code>default: uuid</code>, <code>now</code>) is made for you; an optional number or date left empty is nil.</p>\n"
        body += "<button type=\"submit\">Insert</button></form>\n"
        return page("New \(entity.name)", status: problem == nil ? .ok : .unprocessableContent, body)
    }

    // MARK: - Submissions

    /// A form posted: `r` saves a record, `d` deletes one, `n` inserts one.
    func submit(_ kind: String, schema schemaName: String, entity entityName: String, request: HTTPRequest) throws -> HTTPResponse {
        let (entry, entity) = try locate(schemaName, entityName)
        if let reason = readOnlyReason(entry) { throw StudioFailure(.forbidden, "Read-only: \(reason).") }
        let columns = StudioColumns(entity: entity, model: entry.schema.entity(named: entity.name), entry: entry)
        var form: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = HTTPRequestParser.percentDecoded(parts[0], plusIsSpace: true),
                let value = HTTPRequestParser.percentDecoded(parts.count == 2 ? parts[1] : "", plusIsSpace: true)
            else { throw StudioFailure(.badRequest, "the form's data is not well encoded") }
            form[name] = value
        }
        switch kind {
        case "r": return try save(entry, entity, columns: columns, form: form, request: request)
        case "d": return try delete(entry, entity, columns: columns, form: form, request: request)
        case "n": return try insert(entry, entity, columns: columns, form: form, request: request)
        default: return notFound("No form at \(request.path).")
        }
    }

    /// The values a form gives, as the store holds them; or what is wrong with one.
    func values(_ form: [String: String], _ editable: [ColumnDescriptor], columns: StudioColumns, entry: StudioCatalog.Entry, fillDefaults: Bool) throws -> [String: StoredValue] {
        var values: [String: StoredValue] = [:]
        for column in editable {
            guard let text = form["c." + column.column] else { continue }
            let label = columns.label(column)
            if column.isOptional, form["nil." + column.column] != nil {
                values[column.column] = .null
                continue
            }
            if text.isEmpty, fillDefaults {
                switch column.defaultValue {
                case .generatedUUID?: values[column.column] = .text(UUID().uuidString.lowercased())
                case .now?: values[column.column] = .text(column.storage == .day ? StoredDate.day(Date()) : StoredDate.text(Date()))
                case .some: continue
                case nil: break
                }
                if values[column.column] != nil { continue }
            }
            if text.isEmpty, column.storage != .text {
                // An optional number or date left empty is nil; a required one needs a value.
                if column.isOptional {
                    values[column.column] = .null
                    continue
                }
                throw StudioFailure(.unprocessableContent, "\(label) needs a value (\(column.swiftType))\(column.isOptional ? ", or tick nil" : "")")
            }
            if Self.isEncryptedText(column) {
                values[column.column] = .text(text)
                continue
            }
            guard let value = StudioValues.stored(text, column: column, attribute: columns.attribute(of: column), schema: entry.schema) else {
                throw StudioFailure(.unprocessableContent, "'\(text)' is not a value of \(label) (\(column.swiftType))")
            }
            if let attribute = columns.attribute(of: column), case .enumeration(let name) = attribute.type, let type = entry.schema.enumType(named: name),
                !type.cases.contains(where: { StudioValues.stored($0.rawValue) == value })
            {
                throw StudioFailure(.unprocessableContent, "'\(text)' is not a case of \(name)")
            }
            values[column.column] = value
        }
        return values
    }

    private func save(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, columns: StudioColumns, form: [String: String], request: HTTPRequest) throws -> HTTPResponse {
        let key = try recordKey(request, entity: entity, columns: columns, entry: entry)
        guard let shown = try current(entry, entity, key) else { return notFound("No \(entity.name) has that key; it was deleted meanwhile.") }
        let given: [String: StoredValue]
        let outcome: RecordUpdate
        do {
            given = try values(form, editable(columns, entity: entity, includingKey: false), columns: columns, entry: entry, fillDefaults: false)
            // The form showed an older version: someone else wrote since.
            guard form["version"] == Self.version(shown) else { return conflict(entry, entity, columns: columns, given: given, current: shown) }
            let changes = given.filter { shown[$0.key] != $0.value }
            outcome = try waitingOnThisThread { try await entry.store.updateRecord(of: entity, key: key, set: changes, expecting: shown) }
        } catch let failure as StudioFailure {
            return refused(entry, entity, columns: columns, form: form, current: shown, reason: failure.message)
        } catch let error as StoreError {
            // A value of the wrong type, a taken unique value, a key no record has: the form again, as typed.
            return refused(entry, entity, columns: columns, form: form, current: shown, reason: Self.describe(error))
        }
        switch outcome {
        case .updated(let record):
            let link = recordLink(entry, entity, record) ?? "/"
            return HTTPResponse(status: .seeOther, headers: [("Location", link + "&notice=saved")])
        case .changedMeanwhile(let current): return conflict(entry, entity, columns: columns, given: given, current: current)
        case .missing: return notFound("No \(entity.name) has that key; it was deleted meanwhile.")
        }
    }

    /// A save the store or the schema refused: why, and the form again as it was typed.
    private func refused(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, columns: StudioColumns, form: [String: String], current: StoredRecord, reason: String)
        -> HTTPResponse
    {
        var body = "<p class=\"warn\" role=\"alert\">Not saved: \(html(reason))</p>\n"
        body += editSection(entry, entity, current, columns: columns, typed: form)
        return page("Not saved", status: .unprocessableContent, body)
    }

    /// The save refused: what the person typed beside what is stored now, and the form again
    /// on the current version.
    private func conflict(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, columns: StudioColumns, given: [String: StoredValue], current: StoredRecord) -> HTTPResponse {
        var body = "<p class=\"warn\" role=\"alert\">Not saved: this \(html(entity.name)) was changed by someone else since the page was shown. Here are both; edit the current one below.</p>\n"
        body += "<table><thead><tr><th scope=\"col\">Property</th><th scope=\"col\">Yours</th><th scope=\"col\">Stored now</th></tr></thead><tbody>\n"
        for column in editable(columns, entity: entity, includingKey: false) where given[column.column] != nil {
            let mine = given[column.column] ?? .null
            let now = current[column.column] ?? .null
            body +=
                "<tr\(mine == now ? "" : " class=\"differs\"")><td>\(html(columns.label(column)))</td><td>\(columns.cell(mine, column: column))</td><td>\(columns.cell(now, column: column))</td></tr>\n"
        }
        body += "</tbody></table>\n"
        body += editSection(entry, entity, current, columns: columns)
        return page("Changed meanwhile", status: .conflict, body)
    }

    private func delete(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, columns: StudioColumns, form: [String: String], request: HTTPRequest) throws -> HTTPResponse {
        let key = try recordKey(request, entity: entity, columns: columns, entry: entry)
        guard let shown = try current(entry, entity, key) else { return notFound("No \(entity.name) has that key; it was deleted meanwhile.") }
        guard form["version"] == Self.version(shown) else {
            throw StudioFailure(.conflict, "This \(entity.name) was changed since the page was shown; look at it again before deleting it.")
        }
        do {
            _ = try waitingOnThisThread { try await entry.store.deleteRecord(of: entity, key: key) }
        } catch let error as StoreError {
            if case .deleteDenied(let reason) = error { throw StudioFailure(.conflict, "Not deleted: \(reason).") }
            throw error
        }
        return HTTPResponse(status: .seeOther, headers: [("Location", listLink(entry, entity, filters: [], sort: nil, dir: "asc"))])
    }

    private func insert(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, columns: StudioColumns, form: [String: String], request: HTTPRequest) throws -> HTTPResponse {
        let echoed = Dictionary(form.compactMap { name, value in name.hasPrefix("c.") ? (String(name.dropFirst(2)), value) : nil }, uniquingKeysWith: { a, _ in a })
        do {
            let given = try values(form, editable(columns, entity: entity, includingKey: true), columns: columns, entry: entry, fillDefaults: true)
            let inserted = try waitingOnThisThread { try await entry.store.insertRecord(of: entity, values: given) }
            let link = recordLink(entry, entity, inserted) ?? "/"
            return HTTPResponse(status: .seeOther, headers: [("Location", link + "&notice=saved")])
        } catch let failure as StudioFailure {
            return try newPage(schema: entry.schema.name, entity: entity.name, request: request, given: echoed, problem: failure.message)
        } catch let error as StoreError {
            return try newPage(schema: entry.schema.name, entity: entity.name, request: request, given: echoed, problem: "Not inserted: \(Self.describe(error))")
        }
    }
}
