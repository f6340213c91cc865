#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds taken from the test fixtures:
#   check       every fixture and example template (XML files, also those in folders)
#   expression  every expression line of tests/fixtures/expressions.txt
#   bundle      the bundle of every valid fixture and example, compiled with tvc
#   vm          structured input: it starts from what is checked in
# Seeds are named after their content, so running this again adds nothing twice.
# Usage: fuzz/seed.sh [corpus-dir]   (default: fuzz/corpus)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
corpus="${1:-fuzz/corpus}"
mkdir -p "$corpus"/{check,expression,bundle,vm}

# Copies stdin to <dir>/<sha1 of the content>.
put() {
    local dir="$1" tmp sum
    tmp="$(mktemp)"
    cat >"$tmp"
    sum="$(sha1sum "$tmp" | cut -d' ' -f1)"
    mv "$tmp" "$dir/$sum"
}

n=0
while IFS= read -r -d '' f; do
    put "$corpus/check" <"$f"
    n=$((n + 1))
done < <(find tests/fixtures/valid tests/fixtures/invalid examples -name '*.xml' -print0 | sort -z)
echo "check: $n templates"

n=0
while IFS= read -r line; do
    [[ -z "${line// /}" || "$line" == \#* ]] && continue
    printf '%s' "$line" | put "$corpus/expression"
    n=$((n + 1))
done <tests/fixtures/expressions.txt
echo "expression: $n expressions"

cargo build -q --bin tvc
tvc="$(cargo metadata -q --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/tvc"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
n=0
for f in tests/fixtures/valid/* examples/*.xml; do
    [[ -d "$f" || "$f" == *.xml ]] || continue
    if "$tvc" compile "$f" -o "$out/bundle" --color never 2>/dev/null; then
        put "$corpus/bundle" <"$out/bundle"
        n=$((n + 1))
    fi
done
echo "bundle: $n bundles"
