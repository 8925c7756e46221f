#!/usr/bin/env bash
# Compares two folders of e2e summaries (BENCHQ_E2E_SUMMARIES=DIR make test-e2e)
# with experiment codes and measured figures masked, so what is left is the
# layout: sections, columns, row labels, notes and test verdicts.
# Usage: scripts/compare-summaries.sh BEFORE_DIR AFTER_DIR  (exit 1 when they differ)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BEFORE_DIR AFTER_DIR" >&2; exit 2; }
mask() {
  # progress lines (how many depends on timing) go; numbers (with
  # separators, signs and exponents) -> N; table rules and padding -> one
  # space, because column widths follow the figures.
  sed -E -e '/^\[ *[0-9.]+s\]   /d' \
         -e 's/[0-9]+([.,][0-9]+)*([eE][-+]?[0-9]+)?/N/g' \
         -e 's/:?-{3,}:?/---/g' -e 's/ +/ /g' "$1"
}
status=0
for f in "$1"/*.md; do
  g="$2/$(basename "$f")"
  if [ ! -f "$g" ]; then echo "only in $1: $(basename "$f")"; status=1; continue; fi
  if ! diff -u <(mask "$f") <(mask "$g") > /tmp/compare-summaries.diff; then
    echo "differs: $(basename "$f")"; cat /tmp/compare-summaries.diff; status=1
  fi
done
for g in "$2"/*.md; do [ -f "$1/$(basename "$g")" ] || { echo "only in $2: $(basename "$g")"; status=1; }; done
exit $status
