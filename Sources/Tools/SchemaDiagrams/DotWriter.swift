import Foundation
import TextEscaping

/// Graphviz dot: each entity a table of its rows, an edge per relationship with crow's-foot
/// ends, enums and value types in a cluster of their own.
public enum DotWriter {
    /// `link(entity)` makes each entity a link in SVG output (the site's entity sections).
    public static func diagram(_ model: ERModel, link: ((String) -> String)? = nil) -> String {
        var out = "digraph \(TextEscaping.dot(model.name)) {\n"
        out += "    graph [rankdir=LR, fontname=\"Helvetica\", nodesep=0.4, ranksep=1.0, pad=0.3];\n"
        out += "    node [shape=plain, fontname=\"Helvetica\", fontsize=11];\n"
        out += "    edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\", dir=both];\n"
        for box in model.boxes {
            var label = "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"4\">"
            label += "<tr><td bgcolor=\"#dbe8f7\" colspan=\"3\"><b>\(TextEscaping.html(box.name))</b></td></tr>"
            for row in box.rows {
                let keys = [row.isKey ? "PK" : nil, row.isForeignKey ? "FK" : nil, row.isUnique ? "UK" : nil].compactMap { $0 }.joined(separator: " ")
                let name = row.isKey ? "<u>\(TextEscaping.html(row.name))</u>" : TextEscaping.html(row.name)
                label +=
                    "<tr><td align=\"left\" port=\(TextEscaping.dot(row.name))>\(name)</td><td align=\"left\">\(TextEscaping.html(row.type + (row.isOptional ? "?" : "")))</td><td align=\"left\">\(keys)</td></tr>"
            }
            label += "</table>"
            let url = link.map { ", URL=\(TextEscaping.dot($0(box.name))), target=\"_top\"" } ?? ""
            out += "    \(TextEscaping.dot(box.name)) [label=<\(label)>\(url)];\n"
        }
        if !model.types.isEmpty {
            out += "    subgraph cluster_types {\n        label=\"Enums and value types\"; style=dashed; color=\"#999999\"; fontsize=10;\n"
            for type in model.types {
                let header = type.kind == .enumeration ? "enum " : "value "
                var label = "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">"
                label += "<tr><td bgcolor=\"\(type.kind == .enumeration ? "#f5ecd7" : "#e3f1e1")\"><i>\(header)</i><b>\(TextEscaping.html(type.name))</b></td></tr>"
                for row in type.rows { label += "<tr><td align=\"left\">\(TextEscaping.html(row))</td></tr>" }
                label += "</table>"
                out += "        \(TextEscaping.dot(type.name)) [label=<\(label)>];\n"
            }
            out += "    }\n"
        }
        for edge in model.edges {
            out +=
                "    \(TextEscaping.dot(edge.from)) -> \(TextEscaping.dot(edge.to)) [arrowtail=\(arrow(edge.fromCardinality)), arrowhead=\(arrow(edge.toCardinality)), label=\(TextEscaping.dot(edge.label))\(edge.isIdentifying ? "" : ", style=dashed")];\n"
        }
        for type in model.types {
            for user in type.usedBy {
                out += "    \(TextEscaping.dot(user)) -> \(TextEscaping.dot(type.name)) [dir=none, style=dotted, color=\"#aaaaaa\"];\n"
            }
        }
        return out + "}\n"
    }

    /// Crow's-foot ends, the shape nearest the node first: a bar for "one", a circle for
    /// "zero", a crow's foot for "many".
    static func arrow(_ cardinality: ERModel.Cardinality) -> String {
        switch cardinality {
        case .zeroOrOne: "teeodot"
        case .exactlyOne: "teetee"
        case .zeroOrMore: "crowodot"
        case .oneOrMore: "crowtee"
        }
    }

}
