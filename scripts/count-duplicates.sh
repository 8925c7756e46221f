#!/usr/bin/env bash
# The duplication count: pairs of repeated blocks (6+ lines, the `duplicates`
# tool of the workplace library) with no side in a test, printed with the
# pairs. Same filter before and after a clean-up, so the counts compare.
#   scripts/count-duplicates.sh [DIR]    # default: this checkout
# The tool skips import lines but not the lines of a Go import block
# ("import ( ... )"): a pair whose only shared run is two files' import
# blocks is marked "import block" and counted apart, and so are the pairs
# whose runs are alike in shape only (same structure, other names).
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tests='(_test\.go|/tests/|(^|/)test_[^/]*\.py|(^|/)e2e/|internal/testenv|internal/k8stest|internal/obstest)'
out=$(cd "$dir" && duplicates --most 200 --seconds 300)
echo "$out" | head -1
pairs=$(echo "$out" | grep -E '^D[0-9]+ ' | awk -v t="$tests" '{ split($0, f, " "); a = f[2]; b = f[4]; if (a !~ t && b !~ t) print }')

# in_import FILE:FROM-TO: the range lies inside FILE's Go import block.
in_import() {
  local file=${1%%:*} range=${1#*:}
  [[ $file == *.go ]] || return 1
  awk -v from="${range%-*}" -v to="${range#*-}" '
    /^import \($/ { start = NR } start && !end && /^\)$/ { end = NR }
    END { exit !(start && from >= start && to <= end) }' "$dir/$file"
}
imports=0 shapes=0
while read -r id a _ b rest; do
  [[ -n ${id:-} ]] || continue
  mark=
  if [[ $rest != *"more run"* ]] && in_import "$a" && in_import "$b"; then
    mark="  [import block]"; imports=$((imports + 1))
  elif [[ $rest == shape* ]]; then
    shapes=$((shapes + 1))
  fi
  echo "$id $a ~ $b $rest$mark"
done <<<"$pairs"
total=$(echo -n "$pairs" | grep -c '^D' || true)
echo "pairs outside tests: $total ($imports of them Go import blocks only; $((total - imports)) others, of which $shapes alike in shape only and $((total - imports - shapes)) with identical lines)"
