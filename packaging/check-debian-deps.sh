#!/usr/bin/env bash
# Fails when an ELF file about to be packaged needs a shared library that no Debian package provides
# (and that is not in the packages being made): a libddp built against NCCL and CUDA from
# /usr/local/cuda, or a pip LibTorch, would install fine and then not start ("libnccl.so.2: cannot
# open shared object file"). dpkg-shlibdeps cannot say so: CPack runs it with --ignore-missing-info,
# which drops such libraries from Depends without a word. Run by cpack before it packs
# (cmake/DdpDebian.cmake, CPACK_PRE_BUILD_SCRIPTS).
# usage: check-debian-deps.sh STAGING_DIR
set -euo pipefail
staging=$1
libdirs=$(find "$staging" -name 'libddp.so*' -printf '%h\n' | sort -u | paste -sd:)
declare -A needed_by   # library path -> the first packaged file that needs it
missing=()
checked=0
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]] || continue
  checked=$((checked + 1))
  # Only the file's own NEEDED entries: what they need in turn is their packages' business.
  direct=" $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ') "
  while read -r lib path; do
    [[ $direct == *" $lib "* ]] || continue
    case $path in
      "$staging"/*) ;;                                             # one of ours
      "not found") missing+=("$(basename "$f") needs $lib, which is not found") ;;
      *) [[ -n ${needed_by[$path]:-} ]] || needed_by[$path]=$(basename "$f") ;;
    esac
  done < <(LD_LIBRARY_PATH=$libdirs ldd "$f" 2>/dev/null | sed -n 's/^\s*\(\S*\) => \(not found\|\S*\).*/\1 \2/p')
done < <(find "$staging" -type f -print0)
# One dpkg query for all (each call reads the whole package database); a path dpkg does not know
# is tried again by its real path (merged /usr: /lib/x86_64-linux-gnu vs /usr/lib/...).
owned=$(dpkg -S "${!needed_by[@]}" 2>/dev/null | sed 's/^.*: //' || true)
for path in "${!needed_by[@]}"; do
  grep -qxF "$path" <<< "$owned" && continue
  real=$(readlink -f "$path")
  dpkg -S "$real" > /dev/null 2>&1 && continue
  missing+=("${needed_by[$path]} needs $path, which no Debian package provides")
done
if ((${#missing[@]})); then
  printf 'check-debian-deps: %s\n' "${missing[@]}" >&2
  echo "check-debian-deps: these packages would not start where those files are missing. Package a" >&2
  echo "build against Debian's libraries only, e.g. configure with -DDDP_WITH_NCCL=OFF when NCCL" >&2
  echo "and CUDA come from /usr/local/cuda." >&2
  exit 1
fi
echo "check-debian-deps: $checked ELF files; each library they need is Debian's (${#needed_by[@]}) or ours"
