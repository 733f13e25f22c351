#!/usr/bin/env bash
# Builds the API reference of the runtime modules offline with the toolchain's DocC: symbol
# graphs from a build of their own (the everyday build keeps its flags and its cache), then one
# archive per module, transformed for static hosting, with DocC's documentation coverage.
#
#   docs/api-reference.sh [OUTPUT-FOLDER]      (default .build/api-reference)
#
# Open OUTPUT-FOLDER/<Module>.doccarchive/index.html through any static file server.
set -euo pipefail
cd "$(dirname "$0")/.."
output="${1:-.build/api-reference}"
scratch=.build/api-reference-build
graphs="$scratch/symbol-graphs"
modules=(SchemaMetadata PersistentStore Migrator MigratorSQLite MigratorPostgres FieldEncryption)

# The compiler writes a module's graph when it compiles the module, so the graphs stay beside
# the build they came from; without them, build afresh.
for module in "${modules[@]}"; do
    [ -f "$graphs/$module.symbols.json" ] || { rm -rf "$scratch"; break; }
done
mkdir -p "$graphs" "$output"
# The targets whose dependencies are every module documented.
for target in PersistentStore MigratorPostgres; do
    swift build --scratch-path "$scratch" --target "$target" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" >&2
done

for module in "${modules[@]}"; do
    # A module's own graph and its extensions of other modules' types, nothing else.
    own="$scratch/graphs-$module"
    rm -rf "$own" && mkdir -p "$own"
    cp "$graphs/$module.symbols.json" "$own/"
    find "$graphs" -name "$module@*.symbols.json" -exec cp {} "$own/" \;
    rm -rf "$output/$module.doccarchive"
    docc convert \
        --additional-symbol-graph-dir "$own" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.schematoolkit.$module" \
        --fallback-bundle-version 1 \
        --transform-for-static-hosting --hosting-base-path "$module" \
        --experimental-documentation-coverage --coverage-summary-level brief \
        --output-path "$output/$module.doccarchive" 2>&1 | grep -v "^$" | sed "s/^/$module: /" >&2
done
echo "API reference of ${modules[*]} in $output" >&2
