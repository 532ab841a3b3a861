#!/usr/bin/env bash
# The bash completion of ddp's commands (tools/bash_completion/ddp.bash), as bash would call it: the
# built binaries on PATH, the file a build tree holds sourced, COMP_WORDS/COMP_CWORD set for a
# command line and the completion function called; COMPREPLY is what a user would be offered.
# Runs once on its own and once after bash-completion's library (its _command_offset then completes
# the program ddprun runs), when that library is installed.
#   completion_test.sh COMPLETION_FILE BINARY...
set -uo pipefail
completion_file=$(realpath "$1")
shift
bin=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$bin" "$work"' EXIT
for binary in "$@"; do ln -s "$(realpath "$binary")" "$bin/$(basename "$binary")"; done
export PATH="$bin:$PATH"
# The folders and files a path value completes among.
mkdir -p "$work/alpha-dir" "$work/beta-dir"
touch "$work/alpha.txt" "$work/alpha-dir/inside"
cd "$work" || exit 1

run_cases() {
  local failures=0
  # complete_line WORD... : COMP_WORDS as readline splits the line (at blanks and '='), the cursor on
  # the last word; sets `got` to the sorted replies. Runs in this shell, not in $(...), as bash runs
  # a completion: what the function caches stays for the next line.
  complete_line() {
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    local spec function
    if ! spec=$(complete -p "$1" 2> /dev/null); then
      got="no completion for $1"
      return
    fi
    function=${spec#*-F }
    function=${function%% *}
    "$function" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    got=$( ((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
  }
  # expect "WANT" WORD... : the sorted replies are exactly WANT.
  expect() {
    local want=$1
    shift
    complete_line "$@"
    if [[ $got != "$want" ]]; then
      echo "FAIL: '$*': got '$got', want '$want'" >&2
      failures=$((failures + 1))
    fi
  }
  # expect_has "WORD..." WORD... : the replies include each of the words.
  expect_has() {
    local want=$1 w
    shift
    complete_line "$@"
    for w in $want; do
      if [[ " $got " != *" $w "* ]]; then
        echo "FAIL: '$*': '$w' not among '$got'" >&2
        failures=$((failures + 1))
      fi
    done
  }
  # Long options, read from the command's --help.
  expect "--backend --batch-size" train_cifar10 --ba
  expect_has "--data-dir --resume --checkpoint-dir --help --version --epochs" train_cifar10 ""
  expect "--images" make_ranzcr_synthetic --im
  expect "--max-steps" train_cifar10 --max-
  expect "--static-graph" train_cifar10 --stat
  expect "--static-graph" train_ranzcr --static
  expect "--zero" train_ranzcr --ze
  expect "--checkpoint-dir --checkpoint-every --checkpoint-keep" train_ranzcr --checkpoint-
  # A choice {a|b|c}, after "--flag VALUE" and "--flag=VALUE" (readline splits the latter at '=').
  expect "auto gloo nccl" train_cifar10 --backend ""
  expect "gloo" train_cifar10 --backend = g
  expect "auto bar plain" train_ranzcr --progress =
  expect "resnet18 resnet34 resnet50" train_ranzcr --arch res
  expect "bf16 fp16 none powersgd:" train_cifar10 --comm-hook ""
  expect "powersgd:" train_ranzcr --comm-hook pow
  expect "auto cpu gpu" ddprun --nproc-per-node ""
  expect "c10d static" ddprun --rdzv-backend ""
  # A folder: folders only; a file: files and folders (to walk into); {auto|none|FILE}: both.
  expect "alpha-dir beta-dir" train_cifar10 --data-dir ""
  expect "alpha-dir" make_cifar10_synthetic --out al
  expect "alpha-dir alpha.txt" train_ranzcr --csv al
  expect "alpha-dir alpha.txt auto" train_cifar10 --resume a
  # A number completes to nothing, and is no option either.
  expect "" train_cifar10 --epochs ""
  # ddprun: its own options, then the program's name as a command, then the program's options.
  expect "--max-restarts" ddprun --max-r
  expect_has "train_cifar10" ddprun --nproc-per-node 2 --standalone train_ci
  expect_has "train_cifar10" ddprun --nnodes=1 -- train_ci
  expect "--epochs" ddprun --nproc-per-node 2 train_cifar10 --ep
  expect "0 1 2 3" ddprun -r ""
  expect_has "train_cifar10" ddprun -r 3 train_ci
  expect "auto gloo nccl" ddprun --standalone -- train_cifar10 --backend ""
  return "$failures"
}

# shellcheck source=/dev/null
source "$completion_file"
run_cases
failures=$?
echo "without bash-completion's library: $failures failure(s)"
if [[ -f /usr/share/bash-completion/bash_completion ]]; then
  # shellcheck source=/dev/null
  source /usr/share/bash-completion/bash_completion
  # shellcheck source=/dev/null
  source "$completion_file"
  run_cases
  library_failures=$?
  echo "with bash-completion's library: $library_failures failure(s)"
  failures=$((failures + library_failures))
fi
((failures == 0))
