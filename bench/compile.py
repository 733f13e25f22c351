#!/usr/bin/env python3
"""What users pay for generated code: its size per entity and the debug build of a package
holding the generated models of ENTITIES entities (20 attributes and 2 relationships each).

The baseline, measured in the same run, is the least a user would write by hand for the same
models: one plain `Codable, Hashable, Sendable` struct per entity with the same stored
properties. The package is made in a temporary folder with its own copy of SchemaMetadata;
after one warm-up build, each round touches one target's files and rebuilds it, rounds
alternating generated and plain, and each figure is the median of the rounds."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import figure, run_checked, write_schema

ENTITIES = int(os.environ.get("BENCH_COMPILE_ENTITIES", "200"))
ROUNDS = int(os.environ.get("BENCH_COMPILE_ROUNDS", "3"))
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MANIFEST = """// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "CompileBench",
    targets: [
        .target(name: "SchemaMetadata"),
        .target(name: "Models", dependencies: ["SchemaMetadata"]),
        .target(name: "Plain"),
    ]
)
"""


def plain_models(entity_count):
    """The hand-written minimum: the same stored properties, nothing else."""
    out = ["import Foundation", "",
           "public enum Status: String, Codable, Hashable, Sendable { case draft, active, archived, deleted }",
           "public enum Level: Int, Codable, Hashable, Sendable { case low = 0, medium = 1, high = 2 }",
           "public struct Point: Codable, Hashable, Sendable { public var x: Double; public var y: Double; public var label: String? }", ""]
    for i in range(entity_count):
        out += [f"public struct Entity{i}: Codable, Hashable, Sendable, Identifiable {{",
                "    public var id: Int64?", "    public var code: String", "    public var name: String",
                "    public var title: String?", "    public var summary: String", "    public var count: Int",
                "    public var small: Int16", "    public var ratio: Double?", "    public var weight: Float",
                "    public var price: Decimal?", "    public var isActive: Bool", "    public var createdAt: Date",
                "    public var updatedAt: Date?", "    public var token: UUID", "    public var homepage: URL?",
                "    public var payload: Data?", "    public var status: Status", "    public var level: Level",
                "    public var location: Point?", "    public var tags: [String]", "    public var ownerID: Int64?",
                "}", ""]
    return "\n".join(out)


def entity_bytes(folder, entity_count):
    """Bytes of generated Swift per entity: its own files and its share of the schema-wide
    ones, with the embedded migration SQL counted apart."""
    total = migrations = 0
    for name in os.listdir(folder):
        size = os.path.getsize(os.path.join(folder, name))
        if name.endswith("+Migrations.swift"):
            migrations += size
        elif re.match(r"^(Entity\d+(\+Patch)?|Benchmark\+Metadata)\.swift$", name):
            total += size
    return total / entity_count, migrations / entity_count


def build_seconds(package, target, files_folder):
    for name in os.listdir(files_folder):
        os.utime(os.path.join(files_folder, name))
    start = time.perf_counter()
    result = subprocess.run(["swift", "build", "-c", "debug", "--target", target], cwd=package, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"building {target} failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}")
    return time.perf_counter() - start


def main():
    schemagen = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        schema = write_schema(folder, ENTITIES)
        package = os.path.join(folder, "package")
        sources = os.path.join(package, "Sources")
        os.makedirs(os.path.join(sources, "Plain"))
        shutil.copytree(os.path.join(REPO, "Sources", "SchemaMetadata"), os.path.join(sources, "SchemaMetadata"))
        with open(os.path.join(package, "Package.swift"), "w") as file:
            file.write(MANIFEST)
        with open(os.path.join(sources, "Plain", "Models.swift"), "w") as file:
            file.write(plain_models(ENTITIES))
        # Migrations go to the temporary folder: the working tree stays as it was.
        run_checked([schemagen, "generate", "--schema", schema, "--output", os.path.join(sources, "Models"),
                     "--migrations", os.path.join(folder, "Migrations")])
        models = os.path.join(sources, "Models", "Benchmark")
        code, migrations = entity_bytes(models, ENTITIES)
        plain = os.path.getsize(os.path.join(sources, "Plain", "Models.swift")) / ENTITIES

        build_seconds(package, "Models", models)  # warm-up: SchemaMetadata and the build folder
        build_seconds(package, "Plain", os.path.join(sources, "Plain"))
        samples = {"Models": [], "Plain": []}
        for _ in range(ROUNDS):
            samples["Models"].append(build_seconds(package, "Models", models))
            samples["Plain"].append(build_seconds(package, "Plain", os.path.join(sources, "Plain")))
    generated, baseline = statistics.median(samples["Models"]), statistics.median(samples["Plain"])
    figure(f"generated_code_per_entity", code / 1024, "KiB", plain / 1024, f"plain_struct_same_properties({plain / 1024:.2f}KiB)", digits=2)
    figure(f"compile_debug_{ENTITIES}_generated_models", generated, "s", baseline, f"plain_structs_same_properties({baseline:.2f}s)", digits=2)
    print(f"# generated Swift per entity (20 attributes, 2 relationships): {code:,.0f} bytes of code and its share of the "
          f"metadata (target 8 KiB), plus {migrations:,.0f} bytes of embedded migration SQL; compile: median of {ROUNDS} "
          "alternating rebuilds of each target after touching its files", file=sys.stderr)


if __name__ == "__main__":
    main()
