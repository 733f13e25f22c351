import CommandLineKit
import Foundation
import Mustache

/// `schemagen render`: one template against JSON data, for template authors.
public enum RenderCommand: Command {
    public static let spec = CommandSpec(
        name: "render",
        abstract: "Render a Mustache template against JSON data and print exactly the result.",
        discussion: """
            Partials are the *.mustache files of --partials, named without the extension; {{>name}}
            and {{<name}} find them there. Exit status: 0 rendered, 1 a template or JSON error
            (printed as file:line:column), 2 usage error or unreadable file.
            """,
        options: [
            .value("template", valueName: "file", help: "The template to render."),
            .value("data", valueName: "file", help: "JSON data to render against."),
            .value("partials", valueName: "dir", help: "A folder of partials."),
            .value(
                "escape", valueName: "mode", help: "How {{name}} escapes: html as the specification says, or none for source code.",
                allowed: Escaping.allCases.map(\.rawValue), defaultValue: "html"),
        ])

    public static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let templatePath = arguments.value("template"), let dataPath = arguments.value("data") else {
            io.writeError("schemagen: error: render needs --template FILE and --data FILE.json\nUsage: schemagen render --template FILE --data FILE.json [--partials DIR]\n")
            return .usageOrIO
        }
        guard let templateText = try? String(contentsOfFile: templatePath, encoding: .utf8) else {
            io.writeError("schemagen: error: cannot read template '\(templatePath)'\n")
            return .usageOrIO
        }
        guard let json = FileManager.default.contents(atPath: dataPath) else {
            io.writeError("schemagen: error: cannot read data '\(dataPath)'\n")
            return .usageOrIO
        }
        let data: MustacheValue
        do {
            data = try JSONDecoder().decode(JSONValue.self, from: json).value
        } catch {
            io.writeError("schemagen: error: \(dataPath) is not valid JSON: \(describe(error))\n")
            return .failure
        }
        var partials: [String: Template] = [:]
        do {
            if let folder = arguments.value("partials") {
                guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else {
                    io.writeError("schemagen: error: cannot read partials folder '\(folder)'\n")
                    return .usageOrIO
                }
                for name in names.sorted() where name.hasSuffix(".mustache") {
                    let path = URL(fileURLWithPath: folder).appendingPathComponent(name).path
                    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                        io.writeError("schemagen: error: cannot read partial '\(path)'\n")
                        return .usageOrIO
                    }
                    partials[String(name.dropLast(".mustache".count))] = try Template(name: path, source: text)
                }
            }
            let template = try Template(name: templatePath, source: templateText)
            let escaping = arguments.value("escape").flatMap(Escaping.init(rawValue:)) ?? .html
            io.writeOutput(try template.render(data, partials: partials, escaping: escaping))
            return .success
        } catch {
            io.writeError("schemagen: error: \(error)\n")
            return .failure
        }
    }

    private static func describe(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            return (context.underlyingError as NSError?)?.localizedDescription ?? context.debugDescription
        }
        return "\(error)"
    }
}

/// JSON decoded into template data, keeping booleans apart from numbers.
struct JSONValue: Decodable {
    let value: MustacheValue

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [MustacheValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONValue.self).value) }
            value = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var fields: [String: MustacheValue] = [:]
            for key in object.allKeys { fields[key.stringValue] = try object.decode(JSONValue.self, forKey: key).value }
            value = .object(fields)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            value = .null
        } else if let flag = try? single.decode(Bool.self) {
            value = .bool(flag)
        } else if let number = try? single.decode(Double.self) {
            value = .number(number)
        } else {
            value = .string(try single.decode(String.self))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
