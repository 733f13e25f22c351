import Mustache
import SchemaKit

extension TemplateContext {
    // MARK: - Enums and values

    func enumValue(_ enumType: EnumType) -> MustacheValue {
        let cases: [MustacheValue] = enumType.cases.map { enumCase in
            let rawText: String
            let literal: String
            let explicit: Bool
            switch enumCase.rawValue {
            case .string(let raw):
                rawText = raw
                literal = SwiftSyntax.stringLiteral(raw)
                explicit = raw != enumCase.name
            case .int(let raw):
                rawText = String(raw)
                literal = String(raw)
                explicit = true
            }
            return [
                "name": .string(enumCase.name), "swiftName": .string(SwiftSyntax.identifier(enumCase.name)),
                "rawValue": .string(rawText), "rawValueLiteral": .string(literal), "hasExplicitRawValue": .bool(explicit),
            ]
        }
        return [
            "name": .string(enumType.name), "swiftName": .string(SwiftSyntax.identifier(enumType.name)),
            "rawType": .string(enumType.rawType.rawValue), "doc": optional(enumType.doc), "docLines": lines(enumType.doc),
            "cases": list(cases),
        ]
    }

    func valueTypeValue(_ valueType: ValueType) -> MustacheValue {
        let fields: [MustacheValue] = valueType.fields.map { field in
            let type = SwiftSyntax.typeName(field.type) + (field.isOptional ? "?" : "")
            let initDefault =
                field.defaultValue.map { " = " + SwiftSyntax.expression(for: $0, type: field.type, schema: schema) }
                ?? (field.isOptional ? " = nil" : "")
            return [
                "name": .string(field.name), "swiftName": .string(SwiftSyntax.identifier(field.name)), "swiftType": .string(type),
                "jsonKey": .string(field.jsonKey), "jsonKeyLiteral": .string(SwiftSyntax.stringLiteral(field.jsonKey)),
                "hasCustomJSONKey": .bool(field.jsonKey != field.name), "isOptional": .bool(field.isOptional),
                "initDefault": .string(initDefault), "doc": optional(field.doc), "docLines": lines(field.doc),
                "declaration": .string("\(SwiftSyntax.identifier(field.name)): \(type)\(initDefault)"),
            ]
        }
        return [
            "name": .string(valueType.name), "swiftName": .string(SwiftSyntax.identifier(valueType.name)),
            "doc": optional(valueType.doc), "docLines": lines(valueType.doc), "fields": list(fields),
            "hasCustomJSONKeys": .bool(valueType.fields.contains { $0.jsonKey != $0.name }),
        ]
    }
}
