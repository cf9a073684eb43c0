#!/usr/bin/env bash
# Checks that every tracked C++ file (*.cpp, *.h) is formatted as
# clang-format-22 formats it under the repository's .clang-format; files that
# .clang-format-ignore names are skipped (clang-format reads that file
# itself). Lists the files that drift and fails. With --fix, formats them.
#   bash scripts/check-format.sh          # scripts/test.sh runs this
#   bash scripts/check-format.sh --fix
# CLANG_FORMAT overrides the binary (the version is pinned: another major
# version formats differently).
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found (scripts/install-deps.sh installs it)"
  exit 2
fi
mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
if ((${#files[@]} == 0)); then
  echo "check-format: no tracked C++ files (not a git checkout?)"
  exit 2
fi

if [[ ${1:-} == --fix ]]; then
  "$clang_format" -i -- "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

# --dry-run --Werror prints "<file>:<line>:<col>: error: code should be
# clang-formatted" for each drift.
mapfile -t drift < <("$clang_format" --dry-run --Werror -- "${files[@]}" 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' |
  sort -u)
if ((${#drift[@]} > 0)); then
  echo "check-format: ${#drift[@]} of ${#files[@]} files differ from $clang_format:"
  printf '  %s\n' "${drift[@]}"
  echo "check-format: run 'bash scripts/check-format.sh --fix' (or clang-format-22 -i FILE)"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
