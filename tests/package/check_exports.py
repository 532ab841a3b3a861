#!/usr/bin/env python3
"""libddp.so exports its public API and nothing of its internals.

libddp builds with hidden visibility; only declarations marked DDP_API (include/ddp/export.h) are
exported. This reads the dynamic symbol table (nm -D -C --defined-only) and fails when
  - a symbol of an internal namespace is exported, or
  - a symbol of the public API is missing (REQUIRED below: a sample of each header's kinds).
Usage: check_exports.py path/to/libddp.so
"""
import re
import subprocess
import sys

# Namespaces that only libddp's own sources use (src/ddp/...).
# ddp::util is the internal static library libddp links privately (src/util): its copy in
# libddp.so must stay hidden, every binary has its own.
INTERNAL = ["ddp::detail::", "ddp::gloo_backend::", "ddp::nccl_backend::", "ddp::store::",
            "ddp::launcher::", "ddp::util::"]

# One of each kind of public symbol: free functions, constructors, exception typeinfo (thrown across
# the .so boundary), polymorphic bases' typeinfo, the generated version header's function.
REQUIRED = [
    r"^ddp::init_process_group\(ddp::InitOptions const&\)$",
    r"^ddp::make_gloo_process_group\(",
    r"^ddp::make_nccl_process_group\(",
    r"^ddp::TCPStore::TCPStore\(ddp::TCPStoreOptions\)$",
    r"^ddp::Checkpointer::save\(",
    r"^ddp::DistributedDataParallelBase::pre_forward\(\)$",
    r"^ddp::DistributedSampler::set_epoch\(",
    r"^ddp::StopVote::poll\(\)$",
    r"^ddp::WorldInfo::from_env\(\)$",
    r"^ddp::log_line\(",
    r"^ddp::version\(\)$",
    r"^typeinfo for ddp::Error$",
    r"^typeinfo for ddp::ConfigError$",
    r"^typeinfo for ddp::TimeoutError$",
    r"^typeinfo for ddp::ProcessGroup$",
    r"^typeinfo for ddp::Store$",
]


def exported_symbols(library):
    out = subprocess.run(["nm", "-D", "-C", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split(" ", 2)  # address, type, name
        if len(parts) == 3:
            symbols.append(parts[2])
    return symbols


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    symbols = exported_symbols(sys.argv[1])
    # The name (with template arguments) decides, not the parameter list: a public constructor may
    # take a pointer to an internal type (NoSyncGuard(detail::DdpState*)).
    leaked = [s for s in symbols
              if any(ns in s.split("(")[0] for ns in INTERNAL)]
    missing = [r for r in REQUIRED if not any(re.search(r, s) for s in symbols)]
    for s in leaked:
        print("internal symbol exported: " + s)
    for r in missing:
        print("public symbol not exported: " + r)
    public = sum(1 for s in symbols if "ddp::" in s)
    print(f"{len(symbols)} exported symbols, {public} of them ddp's; {len(leaked)} internal leaked, "
          f"{len(missing)} public missing")
    return 1 if leaked or missing else 0


if __name__ == "__main__":
    sys.exit(main())
