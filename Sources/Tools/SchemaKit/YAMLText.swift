import TextEscaping

/// How schema text is spelled where a program writes it: the spelling of releases before the
/// toolkit's escapers were gathered in `TextEscaping`.
public enum YAMLText {
    /// A double-quoted YAML scalar.
    ///
    ///     let value = YAMLText.quoted("key: value")   // was; now TextEscaping.yaml("key: value")
    @available(*, deprecated, renamed: "TextEscaping.yaml")
    public static func quoted(_ text: String) -> String { TextEscaping.yaml(text) }
}
