#!/usr/bin/env bash
# Prints the last lines of each failed test's output from a build's last ctest run
# (Testing/Temporary/LastTestsFailed.log names them, LastTest.log holds their output).
#   scripts/failure-tails.sh BUILD_DIR PART [LINES]
# Why: ctest --output-on-failure prints a failure where it happens, in the middle of an hour of
# output, and a CI log cut to its head and tail loses it (stop 36: rehearsal_chaos failed, its
# reason cut away). run-tests.sh collects these after each part and prints them last.
set -uo pipefail
dir=$1/Testing/Temporary part=$2 lines=${3:-40}
[[ -s $dir/LastTestsFailed.log ]] || exit 0
while IFS= read -r entry; do
  name=${entry#*:}
  echo "---- [$part] $name: the last $lines lines of its output"
  # The entry of one test: from its "Test: NAME" line, the lines between "Output:" + a dashed
  # line and "<end of output>".
  awk -v name="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); mine = ($0 == name); next }
    mine && /^Output:$/ { getline; grab = 1; next }
    mine && grab && /^<end of output>$/ { grab = 0; mine = 0; next }
    mine && grab { print }
  ' "$dir/LastTest.log" | tail -n "$lines"
done < "$dir/LastTestsFailed.log"
