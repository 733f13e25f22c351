#!/usr/bin/env bash
# Builds the API reference of the runtime modules offline with the toolchain's DocC: symbol
# graphs from a build of their own (the everyday build keeps its flags and its cache), then one
# archive per module from its catalog (`Sources/<layer>/<Module>/<Module>.docc`: a landing page,
# and getting-started articles for the store and the migrator), transformed for static hosting.
# Warnings are errors, so a broken symbol link or article reference fails the run (and CI).
#
#   docs/api-reference.sh [OUTPUT-FOLDER]      (default .build/api-reference)
#
# Open OUTPUT-FOLDER/<Module>.doccarchive/index.html through any static file server.
set -euo pipefail
cd "$(dirname "$0")/.."
output="${1:-.build/api-reference}"
scratch=.build/api-reference-build
graphs="$scratch/symbol-graphs"
modules=(SchemaMetadata SQLDialects FieldEncryption PersistentStoreCore PersistentStoreSQLite PersistentStorePostgres MigratorCore MigratorSQLite MigratorPostgres)

# The compiler writes a module's graph when it compiles the module, so the graphs stay beside
# the build they came from; without them, build afresh.
for module in "${modules[@]}"; do
    [ -f "$graphs/$module.symbols.json" ] || { rm -rf "$scratch"; break; }
done
mkdir -p "$graphs" "$output"
# The targets whose dependencies are every module documented.
for target in PersistentStoreSQLite PersistentStorePostgres MigratorSQLite MigratorPostgres; do
    swift build --scratch-path "$scratch" --target "$target" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" >&2
done

for module in "${modules[@]}"; do
    catalog="$(find Sources -maxdepth 3 -type d -name "$module.docc" | head -1)"
    [ -n "$catalog" ] || { echo "docs/api-reference.sh: $module has no documentation catalog ($module.docc)" >&2; exit 1; }
    # A module's own graph and its extensions of other modules' types, nothing else.
    own="$scratch/graphs-$module"
    rm -rf "$own" && mkdir -p "$own"
    cp "$graphs/$module.symbols.json" "$own/"
    find "$graphs" -name "$module@*.symbols.json" -exec cp {} "$own/" \;
    rm -rf "$output/$module.doccarchive"
    if ! docc convert "$catalog" \
        --additional-symbol-graph-dir "$own" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.schematoolkit.$module" \
        --fallback-bundle-version 1 \
        --transform-for-static-hosting --hosting-base-path "$module" \
        --warnings-as-errors \
        --output-path "$output/$module.doccarchive" 2>&1 | sed "s/^/$module: /" >&2; then
        echo "docs/api-reference.sh: DocC refused $module's documentation (above)" >&2
        exit 1
    fi
done
echo "API reference of ${modules[*]} in $output" >&2
