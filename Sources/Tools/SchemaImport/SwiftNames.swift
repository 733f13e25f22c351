import Foundation
import SchemaKit

/// Swift-style names for things named by databases and model files, which use any spelling:
/// `first_name`, `FirstName`, `Order Details`, `NVARCHAR`.
enum SwiftNames {
    /// The words of a name: split at `_`, spaces, punctuation and case changes.
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        // Spelled in ASCII letters (ICU's Any-Latin and Latin-ASCII): `Straße` -> `Strasse`,
        // `имя` -> `ima`, `名前` -> `ming qian`. The `table:`/`column:` override keeps the real name.
        let ascii = name.utf8.allSatisfy { $0 < 0x80 } ? name : (name.applyingTransform(StringTransform("Any-Latin; Latin-ASCII"), reverse: false) ?? name)
        let characters = Array(ascii)
        for (index, character) in characters.enumerated() {
            guard character.isASCII, character.isLetter || character.isNumber else {
                if !current.isEmpty {
                    words.append(current)
                    current = ""
                }
                continue
            }
            if character.isUppercase, !current.isEmpty {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    words.append(current)
                    current = ""
                }
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `order_details` -> `OrderDetails`; a name with no letters becomes `fallback`.
    static func upperCamel(_ name: String, fallback: String) -> String {
        let joined = words(name).map(capitalized).joined()
        return identifier(joined, fallback: fallback)
    }

    /// A schema's name from a file name: UpperCamelCase, starting with a letter
    /// (`music-store` -> `MusicStore`, `2024 sales` -> `Imported2024Sales`).
    static func schemaName(_ stem: String) -> String {
        let name = upperCamel(stem, fallback: "Imported")
        guard let first = name.unicodeScalars.first, first.properties.isUppercase else {
            return "Imported" + name.drop { $0 == "_" }
        }
        return name
    }

    /// `FirstName` -> `firstName`, `ArtistId` -> `artistId`, `URL` -> `url`.
    static func lowerCamel(_ name: String, fallback: String) -> String {
        let parts = words(name)
        guard let first = parts.first else { return fallback }
        let joined = first.lowercased() + parts.dropFirst().map(capitalized).joined()
        return identifier(joined, fallback: fallback)
    }

    private static func capitalized(_ word: String) -> String {
        // An all-capitals word is an acronym or a shouted name: `ID` -> `Id`, `NAME` -> `Name`.
        let lower = word.allSatisfy { !$0.isLowercase } ? word.lowercased() : word
        return lower.prefix(1).uppercased() + lower.dropFirst()
    }

    /// A name that starts with a digit gets a `_` in front; one with nothing left, the fallback.
    private static func identifier(_ name: String, fallback: String) -> String {
        guard let first = name.first else { return fallback }
        let result = first.isNumber ? "_" + name : name
        return Naming.isIdentifier(result) ? result : fallback
    }

    /// `tracks` -> `track`, `categories` -> `category`, `addresses` -> `address`. Conservative:
    /// a word it does not recognise as a plural is returned as it is.
    static func singular(_ word: String) -> String {
        let lower = word.lowercased()
        guard lower.count > 3 else { return word }
        for ending in ["ss", "us", "is", "news", "series", "status"] where lower.hasSuffix(ending) { return word }
        if lower.hasSuffix("ies") { return word.dropLast(3) + (word.last!.isUppercase ? "Y" : "y") }
        for ending in ["sses", "xes", "ches", "shes", "zzes"] where lower.hasSuffix(ending) { return String(word.dropLast(2)) }
        if lower.hasSuffix("s") { return String(word.dropLast()) }
        return word
    }

    /// `Track` -> `tracks`, `Category` -> `categories`, `Address` -> `addresses`.
    static func plural(_ word: String) -> String {
        let lower = word.lowercased()
        if lower.hasSuffix("y"), let beforeY = lower.dropLast().last, !"aeiou".contains(beforeY) {
            return word.dropLast() + "ies"
        }
        for ending in ["s", "x", "z", "ch", "sh"] where lower.hasSuffix(ending) { return word + "es" }
        return word + "s"
    }

    /// `base`, or `base2`, `base3`, ... the first that `taken` does not hold (compared
    /// case-insensitively, as generated file names and SQL compare them).
    static func unique(_ base: String, among taken: Set<String>) -> String {
        unique(base, amongFolded: Set(taken.map { $0.lowercased() }))
    }

    /// The same, for a set already lowercased (kept by callers that name thousands of things).
    static func unique(_ base: String, amongFolded folded: Set<String>) -> String {
        guard folded.contains(base.lowercased()) else { return base }
        var number = 2
        while folded.contains("\(base)\(number)".lowercased()) { number += 1 }
        return "\(base)\(number)"
    }
}
