import Foundation
import TextEscaping

/// A plain SVG drawing of the diagram for when Graphviz is not installed: boxes on a grid,
/// straight edges with their cardinalities written at the ends. Deterministic, no fonts
/// measured: widths come from character counts.
public enum SVGLayout {
    static let characterWidth = 7.0, rowHeight = 18.0, headerHeight = 24.0, gap = 70.0, margin = 20.0

    struct Placed {
        var box: ERModel.Box
        var x: Double, y: Double, width: Double, height: Double
        var center: (Double, Double) { (x + width / 2, y + height / 2) }
    }

    static func rowText(_ row: ERModel.Row) -> String {
        let keys = [row.isKey ? "PK" : nil, row.isForeignKey ? "FK" : nil, row.isUnique ? "UK" : nil].compactMap { $0 }.joined(separator: " ")
        return "\(row.name): \(row.type)\(row.isOptional ? "?" : "")\(keys.isEmpty ? "" : "  " + keys)"
    }

    /// `link(entity)` gives each box a link target (the site's entity sections).
    public static func svg(_ model: ERModel, link: ((String) -> String)? = nil) -> String {
        let columns = max(1, Int(Double(model.boxes.count).squareRoot().rounded(.up)))
        var placed: [Placed] = []
        var columnWidths = Array(repeating: 0.0, count: columns)
        var rowHeights: [Double] = []
        for (index, box) in model.boxes.enumerated() {
            let longest = ([box.name] + box.rows.map(rowText)).map(\.count).max() ?? 4
            let width = Double(longest) * characterWidth + 24
            let height = headerHeight + Double(box.rows.count) * rowHeight + 6
            columnWidths[index % columns] = max(columnWidths[index % columns], width)
            if index / columns >= rowHeights.count { rowHeights.append(0) }
            rowHeights[index / columns] = max(rowHeights[index / columns], height)
            placed.append(Placed(box: box, x: 0, y: 0, width: width, height: height))
        }
        for index in placed.indices {
            let column = index % columns, row = index / columns
            placed[index].x = margin + columnWidths[..<column].reduce(0, +) + Double(column) * gap
            placed[index].y = margin + rowHeights[..<row].reduce(0, +) + Double(row) * gap
        }
        let width = margin * 2 + columnWidths.reduce(0, +) + Double(max(0, columns - 1)) * gap
        let height = margin * 2 + rowHeights.reduce(0, +) + Double(max(0, rowHeights.count - 1)) * gap
        var out =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"er-diagram\" viewBox=\"0 0 \(number(width)) \(number(height))\" width=\"\(number(width))\" height=\"\(number(height))\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
        out += "<title>\(TextEscaping.html(model.name)) entities and relationships</title>\n"
        let byName = Dictionary(uniqueKeysWithValues: placed.map { ($0.box.name, $0) })
        for edge in model.edges {
            guard let from = byName[edge.from], let to = byName[edge.to] else { continue }
            let start = border(of: from, toward: to.center), end = border(of: to, toward: from.center)
            out +=
                "<g class=\"edge\"><line x1=\"\(number(start.0))\" y1=\"\(number(start.1))\" x2=\"\(number(end.0))\" y2=\"\(number(end.1))\" stroke=\"#777\"\(edge.isIdentifying ? "" : " stroke-dasharray=\"5,3\"")/>"
            let middle = ((start.0 + end.0) / 2, (start.1 + end.1) / 2)
            out += "<text x=\"\(number(middle.0))\" y=\"\(number(middle.1 - 4))\" text-anchor=\"middle\" fill=\"#555\" font-size=\"10\">\(TextEscaping.html(edge.label))</text>"
            out += endLabel(edge.toCardinality, at: end, from: start) + endLabel(edge.fromCardinality, at: start, from: end) + "</g>\n"
        }
        for item in placed {
            var group = "<g class=\"entity\">"
            group += "<rect x=\"\(number(item.x))\" y=\"\(number(item.y))\" width=\"\(number(item.width))\" height=\"\(number(item.height))\" fill=\"#fff\" stroke=\"#456\"/>"
            group += "<rect x=\"\(number(item.x))\" y=\"\(number(item.y))\" width=\"\(number(item.width))\" height=\"\(number(headerHeight))\" fill=\"#dbe8f7\" stroke=\"#456\"/>"
            group += "<text x=\"\(number(item.x + 8))\" y=\"\(number(item.y + 16))\" font-weight=\"bold\">\(TextEscaping.html(item.box.name))</text>"
            for (index, row) in item.box.rows.enumerated() {
                group += "<text x=\"\(number(item.x + 8))\" y=\"\(number(item.y + headerHeight + 14 + Double(index) * rowHeight))\">\(TextEscaping.html(rowText(row)))</text>"
            }
            group += "</g>"
            if let link { group = "<a href=\"\(TextEscaping.html(link(item.box.name)))\">\(group)</a>" }
            out += group + "\n"
        }
        return out + "</svg>\n"
    }

    /// Where the line from the box's centre toward `point` leaves the box.
    static func border(of box: Placed, toward point: (Double, Double)) -> (Double, Double) {
        let (cx, cy) = box.center
        let dx = point.0 - cx, dy = point.1 - cy
        guard dx != 0 || dy != 0 else { return (cx, cy) }
        let scale = min(dx == 0 ? .infinity : (box.width / 2) / abs(dx), dy == 0 ? .infinity : (box.height / 2) / abs(dy))
        return (cx + dx * scale, cy + dy * scale)
    }

    static func endLabel(_ cardinality: ERModel.Cardinality, at point: (Double, Double), from other: (Double, Double)) -> String {
        let text: String =
            switch cardinality {
            case .zeroOrOne: "0..1"
            case .exactlyOne: "1"
            case .zeroOrMore: "0..*"
            case .oneOrMore: "1..*"
            }
        let length = max(1, ((point.0 - other.0) * (point.0 - other.0) + (point.1 - other.1) * (point.1 - other.1)).squareRoot())
        let x = point.0 + (other.0 - point.0) / length * 16, y = point.1 + (other.1 - point.1) / length * 16
        return "<text x=\"\(number(x))\" y=\"\(number(y))\" text-anchor=\"middle\" fill=\"#345\" font-size=\"10\">\(text)</text>"
    }

    static func number(_ value: Double) -> String {
        value.rounded() == value ? String(Int(value)) : String(format: "%.1f", value)
    }
}
