#!/usr/bin/env python3
"""Writes a large, valid schema for benchmarks: N entities of about 20 attributes and
2 relationships each, with enums, a value type, indexes and defaults, like a real model."""
import sys

def generate(entity_count: int) -> str:
    out = [
        "schema: Benchmark",
        "version: 7",
        "doc: A generated schema for timing schemagen validate.",
        "enums:",
        "  Status:",
        "    cases: [draft, active, archived, deleted]",
        "  Level:",
        "    type: Int",
        "    cases: {low: 0, medium: 1, high: 2}",
        "values:",
        "  Point: {x: Double, y: Double, label: String?}",
        "entities:",
    ]
    for i in range(entity_count):
        nxt = (i + 1) % entity_count
        prev = (i - 1) % entity_count
        out += [
            f"  Entity{i}:",
            f"    doc: Entity number {i}, generated.",
            f"    table: entity_{i}",
            "    attributes:",
            f"      code: {{type: String, unique: true, jsonKey: code_{i}, doc: Stable code.}}",
            "      name: {type: String, searchable: true}",
            "      title: String?",
            "      summary: {type: String, default: \"\"}",
            "      count: {type: Int, default: 0}",
            "      small: {type: Int16, default: 12}",
            "      ratio: Double?",
            "      weight: {type: Float, default: 1.5}",
            "      price: {type: Decimal?, default: 9.99}",
            "      isActive: {type: Bool, default: true}",
            "      createdAt: {type: Date, default: now}",
            "      updatedAt: Date?",
            "      token: {type: UUID, default: uuid}",
            "      homepage: URL?",
            "      payload: {type: Data?, externalStorage: true}",
            "      status: {type: Status, default: active}",
            "      level: {type: Level, default: medium}",
            "      location: Point?",
            "      tags: {type: \"[String]\", default: []}",
            "      scratch: {type: Bool, transient: true, default: false}",
            "    relationships:",
            f"      owner: {{to: Entity{nxt}?, inverse: owned, deleteRule: nullify}}",
            f"      owned: {{to: \"[Entity{prev}]\"}}",
            "    indexes: [[name], [status, createdAt]]",
            "    uniques: [[name, owner]]",
        ]
    return "\n".join(out) + "\n"

if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    sys.stdout.write(generate(count))
