// The macros of the SwiftData shim (SwiftData.swift): just enough expansion for generated code
// to type-check on Linux. `@Model` adds the `PersistentModel` conformance; the property
// attributes and `#Unique`/`#Index` expand to nothing (their arguments are still type-checked
// against the declarations in SwiftData.swift). Built with plain `swiftc` against the
// toolchain's own SwiftSyntax (docs: ../shared/guides/environment.md, "SwiftData on Linux").
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

public struct ModelMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else {
            throw ShimError("@Model applies to classes only")
        }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): SwiftData.PersistentModel {}")]
    }
}

public struct NoPeer: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext) throws
        -> [DeclSyntax]
    { [] }
}

public struct NoDeclaration: DeclarationMacro {
    public static func expansion(of node: some FreestandingMacroExpansionSyntax, in context: some MacroExpansionContext) throws -> [DeclSyntax] { [] }
}

struct ShimError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
