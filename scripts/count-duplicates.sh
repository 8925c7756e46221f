#!/usr/bin/env bash
# Issue 10's count: pairs of repeated blocks (6+ lines, the `duplicates`
# tool of the workplace library) with no side in a test, printed with the
# pairs. Same filter before and after a clean-up, so the counts compare.
#   scripts/count-duplicates.sh [DIR]    # default: this checkout
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tests='(_test\.go|/tests/|(^|/)test_[^/]*\.py|(^|/)e2e/|internal/testenv|internal/k8stest|internal/obstest)'
out=$(cd "$dir" && duplicates --most 200 --seconds 300)
echo "$out" | head -1
pairs=$(echo "$out" | grep -E '^D[0-9]+ ' | awk -v t="$tests" '{ split($0, f, " "); a = f[2]; b = f[4]; if (a !~ t && b !~ t) print }')
echo "$pairs"
echo "pairs outside tests: $(echo -n "$pairs" | grep -c '^D' || true)"
