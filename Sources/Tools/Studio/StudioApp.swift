import Foundation
import HTTPServer
import PersistentStoreCore
import SchemaKit
import SchemaMetadata
import TextEscaping

/// The studio's web app: answers each request of the local server, after checking its token.
/// Pages are plain HTML with a stylesheet, all made here; every read goes through the store.
///
/// Routes: `/` the schemas and entities; `/e/<Schema>/<Entity>` a list of records (filters,
/// order and pages in the query); `/r/<Schema>/<Entity>?k.<column>=<value>` one record;
/// `/style.css`.
public final class StudioApp: Sendable {
    public let catalog: StudioCatalog
    /// The secret every request carries, in the URL the studio prints or in its cookie.
    public let token: String
    /// The cookie's name, its own each run: cookies are shared by every port of a host, so two
    /// studios open at once would otherwise overwrite each other's.
    let cookie: String

    public init(catalog: StudioCatalog, token: String) {
        self.catalog = catalog
        self.token = token
        cookie = "schemagen_studio_" + String(Self.newToken().prefix(8))
    }

    /// A random token: 32 bytes from the system's generator, as hex.
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    // MARK: - Requests

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard ["GET", "HEAD", "POST"].contains(request.method) else {
            return page("Not allowed", status: .methodNotAllowed, "<p>The studio answers GET and POST only.</p>", extraHeaders: [("Allow", "GET, HEAD, POST")])
        }
        // The stylesheet holds no data: the page that asks for the token is styled too.
        if request.path == "/style.css" {
            return HTTPResponse(headers: [("Content-Type", "text/css; charset=utf-8"), ("Cache-Control", "no-store")], body: .bytes(Array(StudioStyle.css.utf8)))
        }
        if request.path == "/studio.js" {
            return HTTPResponse(headers: [("Content-Type", "text/javascript; charset=utf-8"), ("Cache-Control", "no-store")], body: .bytes(Array(StudioStyle.script.utf8)))
        }
        if request.path == "/studio-worker.js" {
            return HTTPResponse(headers: [("Content-Type", "text/javascript; charset=utf-8"), ("Cache-Control", "no-store")], body: .bytes(Array(StudioStyle.worker.utf8)))
        }
        if let given = request.queryValue("token") {
            guard Self.same(given, token) else { return unauthorized() }
            // The token moves into a cookie, and the address bar loses it.
            let rest = request.query.filter { $0.name != "token" }
            // Always a path of this server: `//host` or `/\host` would send the browser elsewhere.
            let path = "/" + request.path.drop { $0 == "/" || $0 == "\\" }
            let location = path + (rest.isEmpty ? "" : "?" + rest.map { Self.percent($0.name) + "=" + Self.percent($0.value) }.joined(separator: "&"))
            return HTTPResponse(
                status: .seeOther,
                headers: [("Location", location), ("Set-Cookie", "\(cookie)=\(token); HttpOnly; SameSite=Strict; Path=/"), ("Cache-Control", "no-store")])
        }
        guard let given = request.cookie(cookie), Self.same(given, token) else { return unauthorized() }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        do {
            if request.method == "POST" {
                // A form of this studio's pages only: another site's page cannot post here (the
                // cookie is SameSite=Strict too).
                if let origin = request.header("Origin"), let host = request.header("Host"), origin != "http://\(host)" {
                    throw StudioFailure(.forbidden, "a form from \(origin) cannot write here")
                }
                guard parts.count == 3 else { return notFound("No form at \(request.path).") }
                return try submit(parts[0], schema: parts[1], entity: parts[2], request: request)
            }
            switch parts.first {
            case nil: return try home()
            case "e" where parts.count == 3: return try list(schema: parts[1], entity: parts[2], request: request)
            case "r" where parts.count == 3: return try record(schema: parts[1], entity: parts[2], request: request)
            case "x" where parts.count == 3: return try export(schema: parts[1], file: parts[2], request: request)
            case "site" where parts.count == 2: return sitePage(parts[1])
            case "d" where parts.count == 3: return try deletePage(schema: parts[1], entity: parts[2], request: request)
            case "n" where parts.count == 3: return try newPage(schema: parts[1], entity: parts[2], request: request)
            case "events" where parts.count == 1:
                let catalog = self.catalog
                // A reconnecting stream says the last event it had (its id: every schema's position).
                let since = StudioLive.since(request.queryValue("since") ?? "").merging(StudioLive.since(request.header("Last-Event-ID") ?? "")) {
                    HistoryToken(max($0.value, $1.value))
                }
                return .eventStream { writer in try StudioLive.events(catalog, since: since, writer: writer) }
            default: return notFound("No page at \(request.path).")
            }
        } catch let failure as StudioFailure {
            return page("Cannot show this", status: failure.status, "<p>\(TextEscaping.html(failure.message))</p>")
        } catch let error as StoreError where Self.isRequestMistake(error) {
            return page("Cannot show this", status: .badRequest, "<p>\(TextEscaping.html("\(error)"))</p>")
        } catch {
            return page("Cannot show this", status: .internalServerError, "<p>\(TextEscaping.html(Self.describe(error)))</p>")
        }
    }

    /// Equal tokens, compared in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let (left, right) = (Array(a.utf8), Array(b.utf8))
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private func unauthorized() -> HTTPResponse {
        page(
            "Token needed", status: .unauthorized,
            "<p>Open the studio with the address it printed when it started: it holds the token (<code>?token=…</code>).</p>", title: "Studio")
    }

    func notFound(_ message: String) -> HTTPResponse { page("Not found", status: .notFound, "<p>\(TextEscaping.html(message))</p>") }

    // MARK: - Pages

    private func home() throws -> HTTPResponse {
        let since = StudioLive.positions(catalog, schema: nil)
        var body = ""
        for entry in catalog.entries {
            let schema = entry.schema
            body += "<section aria-labelledby=\"s-\(html(schema.name))\"><h2 id=\"s-\(html(schema.name))\">\(html(schema.name))</h2>\n"
            body += "<p>Version \(schema.version)"
            if entry.newestVersion != schema.version {
                body +=
                    " <strong class=\"warn\">(the schema file is at version \(entry.newestVersion); this database has not been migrated to it, so it is shown as version \(schema.version) and read-only)</strong>"
            }
            body += ". Migrations applied: \(entry.migrations.applied.map(String.init).joined(separator: ", ").ifEmpty("none"))"
            body += "; pending: \(entry.migrations.pending.map(String.init).joined(separator: ", ").ifEmpty("none"))"
            if !entry.migrations.servedVersions.isEmpty { body += "; online versions served: \(entry.migrations.servedVersions.map(String.init).joined(separator: ", "))" }
            body += ".</p>\n"
            if entry.encryptionLocked { body += "<p class=\"warn\">Encrypted attributes are locked: start the studio with <code>--key-file</code> to read them.</p>\n" }
            body += "<table><thead><tr><th scope=\"col\">Entity</th><th scope=\"col\">Records</th><th scope=\"col\">About</th><th scope=\"col\">Docs</th></tr></thead><tbody>\n"
            for entity in entry.descriptor.entities {
                let count = try waitingOnThisThread { try await entry.store.countRecords(of: entity) }
                let doc = schema.entity(named: entity.name)?.doc ?? ""
                let docs = siteLink(schema.name, entity.name).map { "<a href=\"\(html($0))\" aria-label=\"\(html(entity.name)) in the schema site\">diagram and docs</a>" } ?? ""
                body += "<tr><td><a href=\"/e/\(path(schema.name))/\(path(entity.name))\">\(html(entity.name))</a></td><td class=\"number\">\(count)</td><td>\(html(doc))</td><td>\(docs)</td></tr>\n"
            }
            body += "</tbody></table></section>\n"
        }
        return page("Studio", body, live: StudioLive.View(schema: nil, entity: nil, since: since))
    }

    /// A page of an entity's records, as the query filters, orders and pages them.
    private func list(schema schemaName: String, entity entityName: String, request: HTTPRequest) throws -> HTTPResponse {
        let (entry, entity) = try locate(schemaName, entityName)
        let since = StudioLive.positions(catalog, schema: entry.schema.name)
        let model = entry.schema.entity(named: entity.name)
        let columns = StudioColumns(entity: entity, model: model, entry: entry)
        let (filters, shownFilters, sortColumn, ascending) = try listQuery(request, columns: columns, entry: entry, model: model)
        let order = sortColumn.map { RecordOrder($0.column, ascending: ascending) }
        let limit = min(max(Int(request.queryValue("limit") ?? "") ?? Self.defaultPageSize, 1), 1000)
        // A page size the person chose stays with the sort and page links.
        let pageSize = limit == Self.defaultPageSize ? nil : limit
        var cursor: RecordCursor?
        if let after = request.queryValue("after"), !after.isEmpty {
            guard let decoded = CursorText.decode(after) else { throw StudioFailure(.badRequest, "the page link is damaged; start from the first page") }
            cursor = decoded
        }
        let (chosen, start) = (filters, cursor)
        let searchable = entity.indexes.contains { $0.kind == .fullText }
        let words = searchable ? (request.queryValue("q") ?? "").trimmingCharacters(in: .whitespaces) : ""
        let (records, next, total, matching) = try waitingOnThisThread {
            let total = try await entry.store.countRecords(of: entity)
            if !words.isEmpty {
                // Best matches first: a search is one page, in the engine's order.
                let found = try await entry.store.searchRecords(of: entity, .words(words), where: chosen, limit: limit)
                return (found, nil as RecordCursor?, total, found.count)
            }
            let page = try await entry.store.records(of: entity, where: chosen, orderedBy: order, after: start, limit: limit)
            let matching = chosen.isEmpty ? total : try await entry.store.countRecords(of: entity, where: chosen)
            return (page.records, page.next, total, matching)
        }
        var body = "<p><a href=\"/\">All entities</a> · \(html(entry.schema.name)) version \(entry.schema.version)"
        if let docs = siteLink(entry.schema.name, entity.name) { body += " · <a href=\"\(html(docs))\">diagram and docs</a>" }
        body += "</p>\n"
        if let doc = model?.doc { body += "<p>\(html(doc))</p>\n" }
        if searchable {
            body += "<form method=\"get\" action=\"/e/\(path(entry.schema.name))/\(path(entity.name))\" role=\"search\"><label for=\"q\">Search</label> "
            body += "<input id=\"q\" name=\"q\" type=\"search\" value=\"\(html(words))\"> <button type=\"submit\">Search</button></form>\n"
        }
        if words.isEmpty {
            body += "<p>\(matching == total ? "\(total) records" : "\(matching) of \(total) records match")</p>\n"
        } else {
            body += "<p>\(matching) best matches for “\(html(words))”, best first (at most \(limit)); <a href=\"/e/\(path(entry.schema.name))/\(path(entity.name))\">all records</a></p>\n"
        }
        for link in shownFilters where link.op == Self.linkedFilter {
            guard let relationship = entity.relationship(named: link.column), let target = entry.descriptor.entity(named: relationship.target) else { continue }
            let record = "/r/\(path(entry.schema.name))/\(path(target.name))?k.\(Self.percent(target.primaryKey[0]))=\(Self.percent(link.value))"
            let others = shownFilters.filter { $0.column != link.column }
            body += "<p>Only those linked to <a href=\"\(html(record))\">\(html(target.name)) \(html(link.value))</a> through \(html(relationship.name)). "
            body += "<a href=\"\(html(listLink(entry, entity, filters: others, sort: sortColumn?.column, dir: ascending ? "asc" : "desc")))\">Without this link</a></p>\n"
        }
        body += filterForm(columns: columns, shown: shownFilters, sort: sortColumn?.column, ascending: ascending, entry: entry, entity: entity)
        body += "<div class=\"scroll\"><table class=\"records\"><thead><tr>"
        for column in columns.shown {
            let name = columns.label(column)
            if columns.sortable.contains(where: { $0.column == column.column }) {
                let next = sortColumn?.column == column.column && ascending ? "desc" : "asc"
                let state = sortColumn?.column == column.column ? (ascending ? "ascending" : "descending") : "none"
                let link = listLink(entry, entity, filters: shownFilters, sort: column.column, dir: next, limit: pageSize)
                body += "<th scope=\"col\" aria-sort=\"\(state)\"><a href=\"\(html(link))\">\(html(name))</a></th>"
            } else {
                body += "<th scope=\"col\">\(html(name))</th>"
            }
        }
        for relationship in columns.toMany { body += "<th scope=\"col\">\(html(relationship.name))</th>" }
        body += "</tr></thead><tbody>\n"
        for record in records {
            body += "<tr>"
            for (index, column) in columns.shown.enumerated() {
                var cell = columns.cell(of: record, column: column)
                if index == 0, let link = recordLink(entry, entity, record) { cell = "<a href=\"\(html(link))\">\(cell)</a>" }
                body += "<td>\(cell)</td>"
            }
            for relationship in columns.toMany {
                body += "<td>\(toManyLink(entry, entity, relationship, record).map { "<a href=\"\(html($0))\">\(html(relationship.target)) list</a>" } ?? "")</td>"
            }
            body += "</tr>\n"
        }
        body += "</tbody></table></div>\n"
        if cursor == nil, shownFilters.isEmpty, words.isEmpty { body += deletedSection(entry, entity) }
        body += "<nav aria-label=\"pages\"><p>"
        var exportQuery =
            listLink(entry, entity, filters: shownFilters, sort: sortColumn?.column, dir: ascending ? "asc" : "desc").split(separator: "?", maxSplits: 1).dropFirst().first.map { "?" + $0 } ?? ""
        // A search exports its matches, best first (up to `searchExportLimit`).
        if !words.isEmpty { exportQuery += (exportQuery.isEmpty ? "?" : "&") + "q=" + Self.percent(words) }
        body +=
            "Export this list as <a href=\"\(html("/x/\(path(entry.schema.name))/\(path(entity.name)).csv" + exportQuery))\">CSV</a> or <a href=\"\(html("/x/\(path(entry.schema.name))/\(path(entity.name)).json" + exportQuery))\">JSON</a>. "
        if readOnlyReason(entry) == nil { body += "<a href=\"/n/\(path(entry.schema.name))/\(path(entity.name))\">New \(html(entity.name))</a> " }
        if cursor != nil { body += "<a href=\"\(html(listLink(entry, entity, filters: shownFilters, sort: sortColumn?.column, dir: ascending ? "asc" : "desc", limit: pageSize)))\">First page</a> " }
        if let next {
            body +=
                "<a rel=\"next\" href=\"\(html(listLink(entry, entity, filters: shownFilters, sort: sortColumn?.column, dir: ascending ? "asc" : "desc", limit: pageSize, after: CursorText.encode(next))))\">Next page</a>"
        }
        body += "</p></nav>\n"
        return page(entity.name, body, live: StudioLive.View(schema: entry.schema.name, entity: entity.name, since: since))
    }

    /// One record: every property, and its relationships as links.
    private func record(schema schemaName: String, entity entityName: String, request: HTTPRequest) throws -> HTTPResponse {
        let (entry, entity) = try locate(schemaName, entityName)
        let since = StudioLive.positions(catalog, schema: entry.schema.name)
        let model = entry.schema.entity(named: entity.name)
        let columns = StudioColumns(entity: entity, model: model, entry: entry)
        let key = try recordKey(request, entity: entity, columns: columns, entry: entry)
        guard let found = try current(entry, entity, key) else {
            // A deleted record is still in the history: its page says so and shows what it kept.
            let changes = (try? StudioLive.changes(of: entity.name, key: key, in: entry.store)) ?? nil
            guard let changes, changes.contains(where: { $0.1.kind == .delete }) else { return notFound("No \(entity.name) has that key; it may have been deleted.") }
            let history = historySection(entry, entity, StoredRecord(columns: entity.primaryKey, values: key), columns: columns, read: changes)
            return page(
                "\(entity.name) (deleted)", status: .notFound,
                "<p class=\"warn\">This \(html(entity.name)) was deleted; its history follows.</p>\n" + history, live: StudioLive.View(schema: entry.schema.name, entity: entity.name, since: since))
        }
        var body = "<p><a href=\"/\">All entities</a> · <a href=\"\(html(listLink(entry, entity, filters: [], sort: nil, dir: "asc")))\">\(html(entity.name)) list</a></p>\n"
        if request.queryValue("notice") == "saved" { body += "<p class=\"notice\" role=\"status\">Saved.</p>\n" }
        body += "<dl>\n"
        for column in columns.shown {
            body += "<dt>\(html(columns.label(column)))</dt><dd>\(columns.cell(of: found, column: column))</dd>\n"
        }
        for relationship in columns.toMany {
            if let link = toManyLink(entry, entity, relationship, found) { body += "<dt>\(html(relationship.name))</dt><dd><a href=\"\(html(link))\">\(html(relationship.target)) list</a></dd>\n" }
        }
        body += "</dl>\n"
        body += editSection(entry, entity, found, columns: columns)
        body += historySection(entry, entity, found, columns: columns)
        return page("\(entity.name)", body, live: StudioLive.View(schema: entry.schema.name, entity: entity.name, since: since))
    }

    /// The filters, sort column and direction a list's query gives.
    private func listQuery(_ request: HTTPRequest, columns: StudioColumns, entry: StudioCatalog.Entry, model: Entity?) throws -> (
        filters: [RecordFilter], shown: [(column: String, op: String, value: String)], sort: ColumnDescriptor?, ascending: Bool
    ) {
        var filters: [RecordFilter] = []
        var shown: [(column: String, op: String, value: String)] = []
        for column in columns.filterable {
            guard let op = request.queryValue("op." + column.column), !op.isEmpty else { continue }
            let text = request.queryValue("v." + column.column) ?? ""
            shown.append((column.column, op, text))
            filters.append(try filter(op, text, column: column, entry: entry, model: model))
        }
        for relationship in columns.linkable {
            guard request.queryValue("op." + relationship.name) == Self.linkedFilter else { continue }
            let text = request.queryValue("v." + relationship.name) ?? ""
            guard let target = entry.descriptor.entity(named: relationship.target), target.primaryKey.count == 1,
                let keyColumn = StudioColumns(entity: target, model: nil, entry: entry).column(named: target.primaryKey[0]),
                let key = StudioValues.stored(text, column: keyColumn, attribute: nil, schema: entry.schema)
            else { throw StudioFailure(.badRequest, "'\(text)' is not a key of \(relationship.target)") }
            shown.append((relationship.name, Self.linkedFilter, text))
            filters.append(.linked(through: relationship.name, to: key))
        }
        let sort = request.queryValue("sort").flatMap { name in columns.sortable.first { $0.column == name } }
        return (filters, shown, sort, request.queryValue("dir") != "desc")
    }

    /// The whole list as filtered and sorted, as CSV or JSON, written a page at a time as it is
    /// read: memory holds one page however long the list.
    private func export(schema schemaName: String, file: String, request: HTTPRequest) throws -> HTTPResponse {
        let format = file.hasSuffix(".csv") ? "csv" : file.hasSuffix(".json") ? "json" : ""
        guard !format.isEmpty else { throw StudioFailure(.notFound, "An export is .csv or .json.") }
        let (entry, entity) = try locate(schemaName, String(file.dropLast(format.count + 1)))
        let model = entry.schema.entity(named: entity.name)
        let columns = StudioColumns(entity: entity, model: model, entry: entry)
        let (filters, _, sort, ascending) = try listQuery(request, columns: columns, entry: entry, model: model)
        let order = sort.map { RecordOrder($0.column, ascending: ascending) }
        let searchable = entity.indexes.contains { $0.kind == .fullText }
        let words = searchable ? (request.queryValue("q") ?? "").trimmingCharacters(in: .whitespaces) : ""
        let shown = columns.shown
        let labels = shown.map(columns.label)
        let locked = shown.map { columns.isEncrypted($0) && entry.encryptionLocked }
        let store = entry.store
        let type = format == "csv" ? "text/csv; charset=utf-8" : "application/json"
        let headers: [(name: String, value: String)] = [
            ("Content-Type", type), ("Cache-Control", "no-store"), ("Content-Disposition", "attachment; filename=\"\(entity.name).\(format)\""),
        ]
        return HTTPResponse(
            headers: headers,
            body: .stream { writer in
                var cursor: RecordCursor?
                var first = true
                try writer.write(format == "csv" ? StudioExport.csvLine(labels) : "[")
                repeat {
                    let start = cursor
                    let page = try waitingOnThisThread {
                        if !words.isEmpty {
                            return (records: try await store.searchRecords(of: entity, .words(words), where: filters, limit: Self.searchExportLimit), next: nil as RecordCursor?)
                        }
                        return try await store.records(of: entity, where: filters, orderedBy: order, after: start, limit: 1000)
                    }
                    var chunk = ""
                    for record in page.records {
                        // Locked and unreadable values are empty: an export never holds what the page would not show.
                        let values = zip(shown, locked).map { column, isLocked in
                            isLocked || record.unreadable[column.column] != nil
                                ? StoredValue.null : StudioValues.exported(record[column.column] ?? .null, attribute: columns.attribute(of: column), schema: entry.schema)
                        }
                        if format == "csv" {
                            chunk += StudioExport.csvLine(zip(values, shown).map { StudioValues.csvField($0, column: $1) })
                        } else {
                            chunk += (first ? "\n" : ",\n") + StudioExport.jsonObject(labels, values, shown)
                            first = false
                        }
                    }
                    try writer.write(chunk)
                    cursor = page.next
                } while cursor != nil
                if format == "json" { try writer.write("\n]\n") }
            })
    }

    /// The entity's deleted records the history keeps: when, by whom, the key, and the values
    /// kept after deletion (`preserveValueOnDeletion`).
    private func deletedSection(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor) -> String {
        guard let deleted = try? StudioLive.deletions(of: entity.name, in: entry.store), !deleted.isEmpty else { return "" }
        var out = "<details><summary>Recently deleted (\(deleted.count))</summary><table><thead><tr><th scope=\"col\">When</th><th scope=\"col\">Who</th>"
        out += "<th scope=\"col\">Key</th><th scope=\"col\">Kept values</th></tr></thead><tbody>\n"
        let formatter = ISO8601DateFormatter()
        for (transaction, change) in deleted {
            let key = change.key.map { html(StudioValues.plain($0)) }.joined(separator: ", ")
            let kept = (change.tombstone ?? [:]).sorted { $0.key < $1.key }.map { "\(html($0.key)) = \(html(StudioValues.plain($0.value)))" }.joined(separator: "<br>")
            out += "<tr><td><time>\(formatter.string(from: transaction.date))</time></td><td>\(html(transaction.author ?? "unknown"))</td><td>\(key)</td><td>\(kept)</td></tr>\n"
        }
        return out + "</tbody></table></details>\n"
    }

    /// Where the schema site describes an entity, when it is served.
    func siteLink(_ schema: String, _ entity: String) -> String? {
        catalog.site["\(schema).html"] == nil ? nil : "/site/\(Self.percent(schema)).html#entity-\(Self.percent(entity))"
    }

    /// A file of the schema site. Its pages draw diagrams with inline styles, which the site's
    /// own policy allows; nothing else differs.
    private func sitePage(_ name: String) -> HTTPResponse {
        guard let contents = catalog.site[name] else { return notFound("The schema site has no \(name).") }
        let type = name.hasSuffix(".css") ? "text/css" : name.hasSuffix(".js") ? "text/javascript" : "text/html"
        return HTTPResponse(
            headers: [
                ("Content-Type", "\(type); charset=utf-8"), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'"),
            ], body: .bytes(Array(contents.utf8)))
    }

    /// A record's history: who changed what, and when, newest first.
    /// `read`: the record's changes when the caller has already read them.
    private func historySection(
        _ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, _ record: StoredRecord, columns: StudioColumns, read: [(HistoryTransaction, HistoryChange)]? = nil
    ) -> String {
        let key = entity.primaryKey.map { record[$0] ?? .null }
        var out = "<section aria-labelledby=\"history\"><h2 id=\"history\">History</h2>\n"
        let changes: [(HistoryTransaction, HistoryChange)]?
        do {
            changes = try read ?? StudioLive.changes(of: entity.name, key: key, in: entry.store)
        } catch {
            return out + "<p>The history cannot be read: \(html(Self.describe(error)))</p></section>\n"
        }
        guard let changes else { return out + "<p>\(html(entry.schema.name)) keeps no history (<code>history: false</code>).</p></section>\n" }
        guard !changes.isEmpty else { return out + "<p>No change of this record is in the kept history.</p></section>\n" }
        out += "<table><thead><tr><th scope=\"col\">When</th><th scope=\"col\">Who</th><th scope=\"col\">What</th><th scope=\"col\">Values</th></tr></thead><tbody>\n"
        let formatter = ISO8601DateFormatter()
        for (transaction, change) in changes {
            let values = change.changedAttributes.map { name -> String in
                guard let value = change.values[name] else { return html(name) }
                let column = entity.columns.first { $0.property == name }
                let shown = column.map { columns.cell(value, column: $0) } ?? html(StudioValues.plain(value))
                return "\(html(name)) = \(shown)"
            }
            out +=
                "<tr><td><time>\(formatter.string(from: transaction.date))</time></td><td>\(html(transaction.author ?? "unknown"))</td><td>\(change.kind.rawValue)</td><td>\(values.joined(separator: "<br>"))</td></tr>\n"
        }
        return out + "</tbody></table></section>\n"
    }

    // MARK: - Pieces

    func locate(_ schemaName: String, _ entityName: String) throws -> (StudioCatalog.Entry, EntityDescriptor) {
        guard let entry = catalog.entry(named: schemaName) else { throw StudioFailure(.notFound, "No schema named \(schemaName).") }
        guard let entity = entry.descriptor.entity(named: entityName) else { throw StudioFailure(.notFound, "\(schemaName) has no entity named \(entityName).") }
        return (entry, entity)
    }

    private func filter(_ op: String, _ text: String, column: ColumnDescriptor, entry: StudioCatalog.Entry, model: Entity?) throws -> RecordFilter {
        let attribute = model?.attributes.first { $0.columnName == column.column }
        func value(_ text: String) throws -> StoredValue {
            guard let value = StudioValues.stored(text, column: column, attribute: attribute, schema: entry.schema) else {
                throw StudioFailure(.badRequest, "'\(text)' is not a value of \(attribute?.name ?? column.column) (\(column.swiftType))")
            }
            return value
        }
        // A day on a column of moments means the whole day, in UTC.
        let wholeDay = column.storage == .date && text.utf8.count == 10 && StoredDate.date(text) != nil
        switch op {
        case "eq" where wholeDay: return RecordFilter(column.column, .between(lower: .text(text + "T00:00:00.000Z"), upper: .text(text + "T23:59:59.999Z")))
        case "eq": return RecordFilter(column.column, .equals(try value(text)))
        case "contains": return RecordFilter(column.column, .contains(text))
        case "null": return RecordFilter(column.column, .isNull)
        case "notnull": return RecordFilter(column.column, .isNotNull)
        case "range":
            let bounds = text.components(separatedBy: "..")
            guard bounds.count == 2 else { throw StudioFailure(.badRequest, "a range is written low..high (either may be left out)") }
            func bound(_ text: String, endOfDay: Bool) throws -> StoredValue? {
                if text.isEmpty { return nil }
                if column.storage == .date, text.utf8.count == 10, StoredDate.date(text) != nil { return .text(text + (endOfDay ? "T23:59:59.999Z" : "T00:00:00.000Z")) }
                return try value(text)
            }
            return RecordFilter(column.column, .between(lower: try bound(bounds[0], endOfDay: false), upper: try bound(bounds[1], endOfDay: true)))
        default: throw StudioFailure(.badRequest, "'\(op)' is not a filter (eq, contains, range, null, notnull)")
        }
    }

    private func filterForm(columns: StudioColumns, shown: [(column: String, op: String, value: String)], sort: String?, ascending: Bool, entry: StudioCatalog.Entry, entity: EntityDescriptor)
        -> String
    {
        var form = "<details\(shown.isEmpty ? "" : " open")><summary>Filter</summary><form method=\"get\" action=\"/e/\(path(entry.schema.name))/\(path(entity.name))\">\n"
        if let sort { form += "<input type=\"hidden\" name=\"sort\" value=\"\(html(sort))\"><input type=\"hidden\" name=\"dir\" value=\"\(ascending ? "asc" : "desc")\">\n" }
        // A link's filter has no field of its own: it stays while the others change.
        for link in shown where link.op == Self.linkedFilter {
            form += "<input type=\"hidden\" name=\"op.\(html(link.column))\" value=\"\(Self.linkedFilter)\"><input type=\"hidden\" name=\"v.\(html(link.column))\" value=\"\(html(link.value))\">\n"
        }
        for column in columns.filterable {
            let current = shown.first { $0.column == column.column }
            let id = "f-" + column.column
            form += "<div class=\"filter\"><label for=\"\(html(id))-op\">\(html(columns.label(column)))</label> <select id=\"\(html(id))-op\" name=\"op.\(html(column.column))\">"
            for (value, label) in [("", "any"), ("eq", "equals"), ("contains", "contains"), ("range", "range a..b"), ("null", "is nil"), ("notnull", "is not nil")] {
                form += "<option value=\"\(value)\"\(current?.op == value ? " selected" : "")>\(label)</option>"
            }
            form +=
                "</select> <label class=\"hidden\" for=\"\(html(id))\">value of \(html(columns.label(column)))</label><input id=\"\(html(id))\" name=\"v.\(html(column.column))\" value=\"\(html(current?.value ?? ""))\"></div>\n"
        }
        form += "<button type=\"submit\">Apply</button> <a href=\"/e/\(path(entry.schema.name))/\(path(entity.name))\">Clear</a></form></details>\n"
        return form
    }

    func listLink(
        _ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, filters: [(column: String, op: String, value: String)], sort: String?, dir: String, limit: Int? = nil,
        after: String? = nil
    ) -> String {
        var query: [(String, String)] = filters.flatMap { [("op." + $0.column, $0.op), ("v." + $0.column, $0.value)] }
        if let sort { query += [("sort", sort), ("dir", dir)] }
        if let limit { query.append(("limit", String(limit))) }
        if let after { query.append(("after", after)) }
        return "/e/\(path(entry.schema.name))/\(path(entity.name))" + (query.isEmpty ? "" : "?" + query.map { Self.percent($0.0) + "=" + Self.percent($0.1) }.joined(separator: "&"))
    }

    func recordLink(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, _ record: StoredRecord) -> String? {
        let keys = entity.primaryKey.map { ($0, record[$0] ?? .null) }
        guard !keys.contains(where: { $0.1 == .null }) else { return nil }
        return "/r/\(path(entry.schema.name))/\(path(entity.name))?" + keys.map { "k." + Self.percent($0.0) + "=" + Self.percent(StudioValues.plain($0.1)) }.joined(separator: "&")
    }

    /// The list of the target's records linked to this one: those holding its key, or, for a
    /// many-to-many relationship, those its join table pairs with it (the target's side of the link).
    private func toManyLink(_ entry: StudioCatalog.Entry, _ entity: EntityDescriptor, _ relationship: RelationshipDescriptor, _ record: StoredRecord) -> String? {
        guard let target = entry.descriptor.entity(named: relationship.target), entity.primaryKey.count == 1, let key = record[entity.primaryKey[0]], key != .null else { return nil }
        if let joinTable = relationship.joinTable {
            let side = target.relationships.first { $0.joinTable == joinTable && $0.target == entity.name && $0.joinTargetColumns == relationship.joinColumns }
            guard let side else { return nil }
            return listLink(entry, target, filters: [(side.name, Self.linkedFilter, StudioValues.plain(key))], sort: nil, dir: "asc")
        }
        guard let inverse = relationship.inverse.flatMap(target.relationship(named:)), inverse.foreignKeyColumns.count == 1 else { return nil }
        return listLink(entry, target, filters: [(inverse.foreignKeyColumns[0], "eq", StudioValues.plain(key))], sort: nil, dir: "asc")
    }

    /// The most matches a search's export holds, best first.
    static let searchExportLimit = 10_000

    /// Records a list page shows unless its address says otherwise.
    static let defaultPageSize = 50

    /// A list filter's operator that names a many-to-many relationship instead of a column.
    static let linkedFilter = "linked"

    /// A whole page. `live`: what commits refresh it, and where its data was read; a page
    /// without it (an error, the token page) is not refreshed.
    func page(
        _ heading: String, status: HTTPStatus = .ok, _ body: String, title: String? = nil, extraHeaders: [(name: String, value: String)] = [],
        live: StudioLive.View? = nil
    ) -> HTTPResponse {
        let data = live.map { live in
            (live.schema.map { " data-schema=\"\(html($0))\"" } ?? "") + (live.entity.map { " data-entity=\"\(html($0))\"" } ?? "")
                + " data-since=\"\(html(StudioLive.sinceText(live.since)))\""
        }
        let script = data == nil ? "" : "<script src=\"/studio.js\" defer></script>"
        let text = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(html(title ?? "\(heading) · Studio"))</title><link rel="stylesheet" href="/style.css">\(script)</head>
            <body\(data ?? "")><header><p class="where">Studio · \(html(catalog.databaseLabel))\(catalog.readOnly ? " · read-only" : "")</p><h1>\(html(heading))</h1><p id="live" role="status" aria-live="polite"></p></header>
            <main>
            \(body)
            </main></body></html>

            """
        let headers: [(name: String, value: String)] =
            [
                ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"),
                ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'"),
                ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin"),
            ] + extraHeaders
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(text.utf8)))
    }

    func html(_ text: String) -> String { TextEscaping.html(text) }
    func path(_ text: String) -> String { Self.percent(text) }

    /// Percent-encoded for a URL's path segment or query.
    static func percent(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// An error as a page says it: the store's own words.
    /// An error as a page says it: the database's own message for what it refused (a taken
    /// unique value, a key no record has), without the statement.
    static func describe(_ error: any Error) -> String {
        if case .database(let failure)? = error as? StoreError, failure.kind == .uniquenessConflict || failure.kind == .constraint {
            return "the database refused it: \(failure.summary ?? failure.message)"
        }
        return "\(error)"
    }

    /// The store refused what the address asked (a value of the wrong type, a page link for
    /// another order): the request's mistake, not the server's.
    static func isRequestMistake(_ error: StoreError) -> Bool {
        switch error {
        case .invalidValue, .notSupported, .unsupportedPredicate: true
        default: false
        }
    }
}

/// A page that cannot be shown, and the status that says why.
struct StudioFailure: Error {
    let status: HTTPStatus
    let message: String

    init(_ status: HTTPStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
