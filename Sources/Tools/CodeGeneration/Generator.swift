import Mustache
import RelationalModel
import SchemaKit
import SchemaMetadata

/// One file a generation run produces.
public struct GeneratedFile: Sendable, Hashable {
    /// Relative to the output folder: `Flights/Airport.swift`.
    public var path: String
    public var contents: String
    /// Written once, when missing, then the user's: never replaced or deleted (a template whose
    /// name has `+Custom.`, such as `schema+MigrationPlan+Custom.swift`).
    public var isUserOwned: Bool

    public init(path: String, contents: String, isUserOwned: Bool = false) {
        self.path = path
        self.contents = contents
        self.isUserOwned = isUserOwned
    }

    /// Whether a template's files are the user's once written.
    public static func isUserOwned(template: String) -> Bool { template.contains("+Custom.") }
}

/// Renders every output template for a schema's elements.
public enum Generator {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case template(MustacheError)
        /// Two templates produced the same file.
        case collision(path: String, first: String, second: String)

        public var description: String {
            switch self {
            case .template(let error): error.description
            case .collision(let path, let first, let second):
                "templates '\(first)' and '\(second)' both produce '\(path)'; rename one of them"
            }
        }
    }

    /// The files for one schema, in a folder named after it, sorted by path. Outputs that render
    /// to nothing but whitespace are skipped: an empty template switches a default off.
    public static func generate(
        schema: Schema, model: SchemaSnapshot? = nil, sourceFile: String, templates: TemplateSet, migrations: [MigrationScript] = [],
        previousVersion: TemplateContext.PreviousVersion? = nil
    ) throws(Failure) -> [GeneratedFile] {
        let context = TemplateContext(schema: schema, model: model, sourceFile: sourceFile, migrations: migrations, previousVersion: previousVersion)
        var files: [String: (template: String, contents: String)] = [:]
        // Every output's jobs in one parallel batch, the schema-wide files (the largest) first,
        // so they render while the cores also work through the entities.
        var jobs: [Job] = []
        for output in templates.outputs {
            guard let template = templates.templates[output.name] else { continue }
            let scoped: [(name: String, data: MustacheValue)] =
                switch output.scope {
                case .schema: [(schema.name, context.schemaScope())]
                case .entity: schema.entities.map { ($0.name, context.entityScope($0)) }
                case .enum: schema.enums.map { ($0.name, context.enumScope($0)) }
                case .value: schema.values.map { ($0.name, context.valueScope($0)) }
                case .version: []
                }
            jobs += scoped.map { Job(output: output, template: template, name: $0.name, data: $0.data) }
        }
        let order = jobs.indices.sorted { (jobs[$0].output.scope == .schema ? 0 : 1, $0) < (jobs[$1].output.scope == .schema ? 0 : 1, $1) }
        let partials = templates.templates
        let ordered = order.map { jobs[$0] }
        let renderedInOrder = ordered.parallelMap { job in
            Result { () throws(MustacheError) -> String in
                normalize(try job.template.render(job.data, partials: partials, escaping: .none))
            }
        }
        var results = [Result<String, MustacheError>?](repeating: nil, count: jobs.count)
        for (position, index) in order.enumerated() { results[index] = renderedInOrder[position] }
        for (job, result) in zip(jobs, results) {
            let contents: String
            switch result {
            case .success(let text)?: contents = text
            case .failure(let error)?: throw .template(error)
            case nil: continue
            }
            guard !contents.isEmpty else { continue }
            let path = "\(schema.name)/\(job.name)\(job.output.fileSuffix)"
            if let existing = files[path] {
                throw .collision(path: path, first: existing.template, second: job.output.name)
            }
            files[path] = (job.output.name, contents)
        }
        return files.map { GeneratedFile(path: $0.key, contents: $0.value.contents) }.sorted { $0.path < $1.path }
    }

    /// SwiftData models for every version of a schema, oldest first (the last is the schema as
    /// it is now): one file per version (scope `version`), the migration plan and the current
    /// version's typealiases (scope `schema`), with what SwiftData cannot say.
    ///
    ///     let output = try Generator.generateSwiftData(versions: history.versions.map(\.schema), sourceFile: "Shop.yaml", templates: try .defaults(for: .swiftdata))
    ///
    /// `earlierForms`: what earlier releases wrote differently, for recognising their released
    /// output (`SwiftDataEarlierForms`).
    public static func generateSwiftData(
        versions: [Schema], sourceFile: String, templates: TemplateSet, deploymentTarget: DeploymentTarget = .default,
        typeAliases: SwiftDataTypeAliases = .sparingPlatformNames, earlierForms: SwiftDataEarlierForms = []
    ) throws(Failure) -> (files: [GeneratedFile], notes: [SwiftDataNote]) {
        guard let current = versions.last else { return ([], []) }
        let header = "\(TemplateContext.headerPrefix) from \(sourceFile) (schema \(current.name)). Do not edit."
        let (chain, stages) = swiftDataChain(versions)
        var notes = stages.flatMap(\.notes)
        var scoped: [(scope: TemplateSet.Scope, name: String, data: MustacheValue)] = []
        let modifiers = VersionHashModifiers.modifiers(versions)
        // Over the chain the plan lists, the steps schemagen inserts included.
        let renaming = RenamingIdentifiers.chain(chain.map(\.schema))
        notes += renaming.clashes.map { clash in
            SwiftDataNote(
                version: clash.version, subject: clash.second,
                message: "shares the renaming identifier '\(clash.identifier)' with \(clash.first), so SwiftData could move one's stored values into the other; rename one of them",
                location: clash.location)
        }
        for (entry, identifiers) in zip(chain, renaming.identifiers) {
            var version = SwiftDataVersion(
                schema: entry.schema, addedDefaults: entry.addedDefaults, deploymentTarget: deploymentTarget,
                hashModifier: entry.minor == 0 ? modifiers[entry.schema.version] : nil, minor: entry.minor,
                identifiers: earlierForms.contains(.declaredRenamingIdentifiers) ? RenamingIdentifiers(entry.schema) : identifiers,
                optionalToMany: entry.schema.cloudKit && !earlierForms.contains(.requiredToManyUnderCloudKit),
                uniquesOfAttributesOnly: earlierForms.contains(.uniquesOfAttributesOnly))
            let scope = version.scope(header: header)
            notes += version.notes
            scoped.append((.version, version.enumName, .object(scope)))
        }
        let plan = swiftDataPlanScope(current, chain: chain, stages: stages, header: header, typeAliases: typeAliases, notes: &notes)
        scoped.append((.schema, current.name, .object(plan)))
        var files: [String: (template: String, contents: String)] = [:]
        for output in templates.outputs {
            guard let template = templates.templates[output.name] else { continue }
            for item in scoped where item.scope == output.scope {
                let contents: String
                do {
                    contents = normalize(try template.render(item.data, partials: templates.templates, escaping: .none))
                } catch {
                    throw .template(error)
                }
                guard !contents.isEmpty else { continue }
                let path = "\(current.name)/\(item.name)\(output.fileSuffix)"
                if let existing = files[path] { throw .collision(path: path, first: existing.template, second: output.name) }
                files[path] = (output.name, contents)
            }
        }
        let sorted = files.map { GeneratedFile(path: $0.key, contents: $0.value.contents, isUserOwned: GeneratedFile.isUserOwned(template: $0.value.template)) }
            .sorted { $0.path < $1.path }
        // What every version says alike is reported once, for its newest version.
        var seen: Set<String> = []
        // A stage's own work is said for each stage that needs it.
        let distinct = notes.sorted { $0.version > $1.version }.filter { note in
            seen.insert(note.subject + "\u{0}" + note.message + (note.isIncompleteStage ? "\u{0}\(note.version)" : "")).inserted
        }.reversed()
        return (sorted, Array(distinct))
    }

    /// All combinations of `SwiftDataEarlierForms`, none first.
    public static let everyEarlierForm: [SwiftDataEarlierForms] = {
        let each: [SwiftDataEarlierForms] = [.declaredRenamingIdentifiers, .requiredToManyUnderCloudKit, .uniquesOfAttributesOnly]
        return (0..<(1 << each.count)).map { mask in
            each.indices.filter { mask & (1 << $0) != 0 }.reduce(into: SwiftDataEarlierForms()) { $0.formUnion(each[$1]) }
        }
    }()

    /// One version of the chain a SwiftData migration plan lists.
    typealias SwiftDataChainLink = (schema: Schema, minor: Int, addedDefaults: [String: String])

    /// The chain the plan lists: each version as its models say it, with the step a type change
    /// needs between two of them (`SwiftDataIntermediateStep`), and the stages between them.
    static func swiftDataChain(_ versions: [Schema]) -> (chain: [SwiftDataChainLink], stages: [SwiftDataStage]) {
        var stages: [SwiftDataStage] = []
        var chain: [SwiftDataChainLink] = versions.first.map { [($0, 0, [:])] } ?? []
        // An attribute that renamed a type change's copy keeps the copy's name as its renaming
        // identifier in every later version: Core Data matches properties by that identifier,
        // so dropping it would make the next step see a new attribute and lose the values.
        var identifiers: [String: String] = [:]
        for var new in versions.dropFirst() {
            for (entityIndex, entity) in new.entities.enumerated() {
                for (attributeIndex, attribute) in entity.attributes.enumerated() where attribute.renamedFrom == nil {
                    if let identifier = identifiers["\(entity.name).\(attribute.name)"] { new.entities[entityIndex].attributes[attributeIndex].renamedFrom = identifier }
                }
            }
            let old = chain[chain.count - 1].schema
            guard let step = SwiftDataIntermediateStep(from: old, to: new) else {
                let stage = SwiftDataStage(from: old, to: new, fromMinor: chain[chain.count - 1].minor)
                stages.append(stage)
                chain.append((new, 0, stage.addedDefaults))
                continue
            }
            // Values the user fills exist only on the intermediate's models: the plan's hooks
            // then run in the second stage, else around the step as usual.
            let hooksInSecond = !step.userFilled.isEmpty
            var first = SwiftDataStage(
                from: old, to: step.intermediate, fromMinor: chain[chain.count - 1].minor, toMinor: 1, hooks: (!hooksInSecond, false))
            for copy in step.copies { first.fillConverted(copy.copy, from: copy.source, of: copy.entity, final: copy.final) }
            let second = SwiftDataStage(from: step.intermediate, to: step.final, fromMinor: 1, filled: step.filled, userFilled: step.userFilled, hooks: (hooksInSecond, true))
            stages += [first, second]
            chain.append((step.intermediate, 1, first.addedDefaults))
            chain.append((step.final, 0, second.addedDefaults))
            for entity in step.final.entities {
                for attribute in entity.attributes where step.copies.contains(where: { $0.copy.name == attribute.renamedFrom && $0.final.name == attribute.name }) {
                    identifiers["\(entity.name).\(attribute.name)"] = attribute.renamedFrom
                }
            }
        }
        return (chain, stages)
    }

    /// The migration plan's template data (scope `schema`): the chain, its stages and the current
    /// version's typealiases, noting a typealias that hides a platform type.
    static func swiftDataPlanScope(
        _ current: Schema, chain: [SwiftDataChainLink], stages: [SwiftDataStage], header: String, typeAliases: SwiftDataTypeAliases, notes: inout [SwiftDataNote]
    ) -> [String: MustacheValue] {
        let currentVersion = SwiftDataVersion(schema: current)
        var plan: [String: MustacheValue] = [
            "header": .string(header),
            "schemaName": .string(current.name),
            "planName": .string("\(current.name)MigrationPlan"),
            "hooksName": .string("\(current.name)MigrationHooks"),
            "carrierName": .string("\(current.name)MigrationCarriedValues"),
            "errorName": .string("\(current.name)MigrationError"),
            "currentEnumName": .string(currentVersion.enumName),
            "docLines": .lines(SwiftSyntax.docLines(current.doc)),
            "schemas": .string(chain.map { SwiftDataVersion.enumName($0.schema, minor: $0.minor) + ".self" }.joined(separator: ", ")),
            "stageNames": .string(stages.map(\.name).joined(separator: ", ")),
            "stages": .listed(stages.map(\.value)),
            "usesCarriers": .bool(stages.contains { !$0.carriers.isEmpty }),
            "usesError": .bool(stages.contains { !$0.carriers.isEmpty || $0.usesError }),
            // Work only the app can do: required hooks whose deprecated defaults warn until written.
            "requirements": .listed(
                stages.flatMap(\.requirements).map { requirement in
                    .object([
                        "name": .string(requirement.name),
                        "docLines": .lines(SwiftSyntax.docLines(requirement.doc)),
                        "docText": .string(requirement.doc),
                        "deprecation": .string(
                            SwiftSyntax.stringLiteral(
                                "write \(requirement.name)(context:) in \(current.name)+MigrationPlan+Custom.swift: until then the migration stops on a store that has such objects")),
                    ])
                }),
        ]
        let types = current.entities.map { ($0.name, $0.location) } + current.enums.map { ($0.name, $0.location) } + current.values.map { ($0.name, $0.location) }
        plan["typeNames"] = .lines(types.map { SwiftSyntax.identifier($0.0) })
        var aliases: [MustacheValue] = []
        for (name, location) in types {
            guard let alias = typeAliases.alias(of: name) else {
                if typeAliases == .sparingPlatformNames, let framework = PlatformTypeNames.owner(of: name) {
                    let qualified = SwiftDataVersion.enumName(current) + "." + SwiftSyntax.identifier(name)
                    notes.append(
                        SwiftDataNote(
                            version: current.version, subject: name,
                            message:
                                "no typealias '\(name)': it would hide \(framework)'s \(name) wherever the module is imported; the app names \(qualified), or generate with --typealias-prefix (App\(name)), or with --typealiases on to write it anyway",
                            location: location))
                }
                continue
            }
            aliases.append(.object(["alias": .string(SwiftSyntax.identifier(alias)), "name": .string(SwiftSyntax.identifier(name))]))
            if let framework = PlatformTypeNames.owner(of: alias) {
                notes.append(
                    SwiftDataNote(
                        version: current.version, subject: name,
                        message:
                            "the typealias '\(alias)' hides \(framework)'s \(alias) wherever the module is imported (`\(alias)` then means the model, so code such as `Task { }` or `Color.red` stops compiling); rename the entity, or generate with --typealias-prefix (or --typealiases off)",
                        location: location))
            }
        }
        plan["typeAliases"] = .array(aliases)
        plan["hasTypeAliases"] = .bool(!aliases.isEmpty)
        return plan
    }

    /// No trailing whitespace on any line, no runs of blank lines, exactly one final newline;
    /// whitespace-only output becomes empty. Works on UTF-8 bytes: outputs can be large.
    static func normalize(_ text: String) -> String {
        let newline = UInt8(ascii: "\n")
        func isTrailingSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }
        var out: [UInt8] = []
        var text = text
        text.withUTF8 { bytes in
            out.reserveCapacity(bytes.count)
            var lineStart = 0
            var previousBlank = true
            var index = 0
            while index <= bytes.count {
                if index == bytes.count || bytes[index] == newline {
                    var end = index
                    while end > lineStart, isTrailingSpace(bytes[end - 1]) { end -= 1 }
                    let blank = end == lineStart
                    if !(blank && previousBlank) {
                        out.append(contentsOf: bytes[lineStart..<end])
                        out.append(newline)
                    }
                    previousBlank = blank
                    lineStart = index + 1
                }
                index += 1
            }
        }
        while out.count >= 2, out[out.count - 1] == newline, out[out.count - 2] == newline { out.removeLast() }
        if out == [newline] { return "" }
        return String(decoding: out, as: UTF8.self)
    }
}

/// One file to render: a template with its data.
private struct Job: Sendable {
    let output: TemplateSet.Output
    let template: Template
    let name: String
    let data: MustacheValue
}
