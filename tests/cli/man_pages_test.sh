#!/usr/bin/env bash
# The man pages help2man made from the binaries (cmake/DdpManPages.cmake): each page and its .gz
# exist, groff renders the page without a warning, and the rendered page names every long option
# the binary's --help lists, so a flag missing from the page (or a page left from an older binary) fails.
#   man_pages_test.sh MAN_DIR BINARY...
set -euo pipefail
man_dir=$1
shift
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
for binary in "$@"; do
  before=$failures
  name=$(basename "$binary")
  page=$man_dir/$name.1
  [[ -f $page ]] || { fail "$page: missing"; continue; }
  [[ -f $page.gz ]] || fail "$page.gz: missing"
  [[ ! -f $page.gz ]] || cmp -s <(gzip -dc "$page.gz") "$page" || fail "$page.gz: not $page compressed"
  # -ww: every warning groff has (man --warnings and lintian ask fewer); -z: only the warnings.
  warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "$page: groff exited $?"
  [[ -z $warnings ]] || fail "$page: groff warns: $warnings"
  # -P-cbou: plain text, no bold or underline, so "--flag" reads as typed.
  # tr -s: lines are justified, so words may stand two spaces apart.
  text=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -P-cbou "$page" 2> /dev/null | tr -s ' ')
  grep -q "^ *$name - " <<< "$text" || fail "$page: its NAME section lacks '$name - <what it does>'"
  grep -q "^ *$name \[OPTION...\]" <<< "$text" || fail "$page: its SYNOPSIS lacks '$name [OPTION...]'"
  options=$("$binary" --help | grep -oE '^(  -[A-Za-z0-9], |      )--[A-Za-z0-9][A-Za-z0-9_-]*' | grep -oE -- '--[A-Za-z0-9_-]+$')
  [[ -n $options ]] || fail "$name --help lists no option"
  for option in $options; do
    grep -qE -- "(^|[^A-Za-z0-9-])$option([^A-Za-z0-9-]|$)" <<< "$text" || fail "$page: lacks $option"
  done
  ((failures > before)) || echo "ok: $name.1 ($(wc -w <<< "$options") options)"
done
((failures == 0)) || { echo "$failures failure(s)" >&2; exit 1; }
