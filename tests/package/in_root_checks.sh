#!/usr/bin/env bash
# Runs inside a fresh Debian 12 root (tests/package/debs_in_fresh_root.sh), with the .debs in
# /tmp/debs and the consumer project in /tmp/consumer. Asserts, in order:
#   1. `apt-get install ./ddp-tools_*.deb ./libddp*.deb` pulls every dependency from the mirror and
#      configures the three packages (Recommends left out but python3-matplotlib, which ddp-plot
#      needs: with them apt also brings systemd, dbus and ~200 more packages, minutes of unpacking);
#   2. `ddprun --version` prints this version; `man ddprun` renders the page and it names
#      --nproc-per-node; bash completion for ddprun is where bash-completion looks for it;
#   3. the BLAS choice is pinned: libblas.so.3 is the OpenMP variant in manual mode, and installing
#      libopenblas0-pthread afterwards (priority 100 vs 95) leaves it there;
#   4. a 2-rank job: make_cifar10_synthetic writes data, ddprun runs 2 train_cifar10 ranks for one
#      epoch, the model appears; ddp-plot draws the run's metrics to a PNG;
#   5. the consumer project (tests/package/consumer) configures with find_package(ddp) against the
#      installed libddp-dev, builds and runs;
#   6. `apt-get purge` of the three packages leaves none of their files, no /usr/include/ddp,
#      /usr/lib/cmake/ddp, /usr/libexec/ddp or /var/lib/ddp-tools, and the BLAS alternatives that
#      the postinst pinned are back in auto mode.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
t0=$(date +%s)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
blas=libblas.so.3-$multiarch
query_blas() { update-alternatives --query "$blas" | sed -n "s/^$1: //p"; }

step "apt-get update"
apt-get update -q > /tmp/apt-update.log || { cat /tmp/apt-update.log; fail "apt-get update"; }
cd /tmp/debs
debs=(./ddp-tools_*_"$arch".deb ./libddp*_"$arch".deb)
step "apt-get install ${debs[*]} python3-matplotlib man-db"
# man-db stands for the Debian system a user has (minbase has no man); the rest comes from the debs'
# Depends. No fsync per file (dpkg --force-unsafe-io, as container images do): this root is thrown away.
echo force-unsafe-io > /etc/dpkg/dpkg.cfg.d/unsafe-io
apt-get install -y -q --no-install-recommends "${debs[@]}" python3-matplotlib man-db > /tmp/apt-install.log 2>&1 ||
  { tail -n 40 /tmp/apt-install.log; fail "apt-get install of the packages"; }
grep -E "^(Setting up|Unpacking) (ddp-tools|libddp)" /tmp/apt-install.log || true
for p in ddp-tools libddp-dev "$(basename ./libddp[0-9]*_"$arch".deb | cut -d_ -f1)"; do
  dpkg-query -W -f='${Package} ${Version} ${Status}\n' "$p" | grep -q "install ok installed" || fail "$p not installed"
done
echo "installed: $(dpkg-query -W -f='${binary:Package} ' ddp-tools libddp-dev 'libddp[0-9]*')"

step "ddprun --version, man ddprun, completion"
version=$(ddprun --version) || fail "ddprun --version exited $?"
echo "$version"
want=$(dpkg-query -W -f='${Version}' ddp-tools); want=${want%-*}
[[ $version == *"$want"* ]] || fail "ddprun --version '$version' does not name the package version $want"
page=$(MANPAGER=cat MANWIDTH=100 man ddprun 2>&1) || fail "man ddprun: $page"
grep -q -- "--nproc-per-node" <<< "$page" || fail "man ddprun does not mention --nproc-per-node"
[[ -f /usr/share/bash-completion/completions/ddprun ]] || fail "no bash completion for ddprun"

step "BLAS pinned"
[[ $(query_blas Value) == */openblas-openmp/libblas.so.3 ]] || fail "libblas.so.3 is $(query_blas Value)"
[[ $(query_blas Status) == manual ]] || fail "libblas.so.3 is in $(query_blas Status) mode, not pinned"
apt-get install -y -q libopenblas0-pthread > /tmp/apt-pthread.log 2>&1 || { tail /tmp/apt-pthread.log; fail "install libopenblas0-pthread"; }
[[ $(query_blas Value) == */openblas-openmp/libblas.so.3 ]] ||
  fail "installing libopenblas0-pthread moved libblas.so.3 to $(query_blas Value)"
echo "libblas.so.3 stays $(query_blas Value) ($(query_blas Status)) with libopenblas0-pthread installed"

step "2-rank job"
work=$(mktemp -d)
make_cifar10_synthetic --out "$work/data" --train 400 --test 100 --layout bin --seed 1 > /dev/null
ddprun --standalone --nproc-per-node 2 train_cifar10 --data-dir "$work/data" --model-dir "$work/model" \
  --epochs 1 --batch-size 50 --threads 1 --metrics-file "$work/metrics.jsonl" > "$work/train.log" 2>&1 ||
  { tail -n 30 "$work/train.log"; fail "ddprun + train_cifar10"; }
[[ -s $work/model/model.pt ]] || fail "no model.pt after the 2-rank run"
grep -h "transport\|Test set" "$work/train.log" | head -n 3
ddp-plot "$work/metrics.jsonl" --out "$work/curves" || fail "ddp-plot exited $?"
[[ -s $work/curves.png ]] || fail "ddp-plot wrote no PNG"

step "consumer builds against libddp-dev"
apt-get install -y -q --no-install-recommends g++ cmake make > /tmp/apt-build.log 2>&1 ||
  { tail /tmp/apt-build.log; fail "install g++ cmake make"; }
cmake -S /tmp/consumer -B "$work/consumer" > "$work/consumer-configure.log" 2>&1 ||
  { cat "$work/consumer-configure.log"; fail "consumer: find_package(ddp) configure"; }
cmake --build "$work/consumer" > "$work/consumer-build.log" 2>&1 || { tail -n 30 "$work/consumer-build.log"; fail "consumer build"; }
"$work/consumer/consumer" || fail "consumer exited $?"

step "purge"
pkgs=(ddp-tools libddp-dev "$(dpkg-query -W -f='${Package}\n' 'libddp[0-9]*' | head -n 1)")
files=$(dpkg -L "${pkgs[@]}" | sort -u)
apt-get purge -y -q "${pkgs[@]}" > /tmp/apt-purge.log 2>&1 || { tail /tmp/apt-purge.log; fail "purge"; }
left=0
while read -r f; do
  [[ -n $f && ! -d $f && ( -e $f || -L $f ) ]] && { echo "left behind: $f"; left=1; }
done <<< "$files"
for d in /usr/include/ddp /usr/lib/cmake/ddp /usr/libexec/ddp /var/lib/ddp-tools /usr/share/doc/ddp-tools; do
  [[ -e $d ]] && { echo "left behind: $d"; left=1; }
done
((left == 0)) || fail "purge left files behind"
[[ $(query_blas Status) == auto ]] || fail "libblas.so.3 still $(query_blas Status) after ddp-tools was removed"
echo "after purge: libblas.so.3 $(query_blas Status) -> $(query_blas Value)"
step "all checks passed"
