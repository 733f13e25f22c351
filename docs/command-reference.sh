#!/bin/sh
# Writes the generated blocks of docs/commands.md again from the tools' own option
# declarations (`<tool> help --markdown`), the text `--help` prints. A block goes where its
# opening comment is; CommandReferenceTests fails while a block differs or is missing.
set -eu
cd "$(dirname "$0")/.."
for tool in schemagen migrate flights todo; do swift build --product "$tool" >/dev/null; done
bin=$(swift build --show-bin-path)
for tool in schemagen migrate flights todo; do "$bin/$tool" help --markdown; done > .build/command-reference.md
python3 - .build/command-reference.md docs/commands.md <<'PY'
import re, sys
generated, document = open(sys.argv[1]).read(), open(sys.argv[2]).read()
closing = "<!-- end of generated text -->"
blocks = {m.group(1): m.group(0) for m in re.finditer(r"<!-- generated from `([^`]+) --help`: do not edit -->.*?" + re.escape(closing), generated, re.S)}
def replace(match):
    command = match.group(1)
    if command not in blocks:
        sys.exit(f"docs/commands.md has a block for '{command}', which no tool has: remove it")
    return blocks.pop(command)
document = re.sub(r"<!-- generated from `([^`]+) --help`: do not edit -->.*?" + re.escape(closing), replace, document, flags=re.S)
open(sys.argv[2], "w").write(document)
if blocks:
    sys.exit("no place in docs/commands.md for: " + ", ".join(blocks) + " (add each one's opening and closing comments where it belongs)")
PY
echo "docs/commands.md: generated blocks written"
