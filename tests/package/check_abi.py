#!/usr/bin/env python3
"""libddp's SONAME follows its ABI: a public symbol may only disappear with a new SONAME.

tests/package/libddp.symbols lists, under the SONAME they were exported with, the mangled names of
libddp's public symbols (ddp's own functions, typeinfo and vtables, as `nm -D --defined-only` sees
them). This test fails
  - when a listed symbol is no longer exported while the SONAME is still the listed one: an ABI
    break. Raise the version (before 1.0 the minor: 0.2 -> 0.3 makes libddp.so.0.3,
    cmake/DdpVersion.cmake), then regenerate the list;
  - when the SONAME differs from the list's: the list is stale, regenerate it.
Symbols added since are listed as additions (compatible) and do not fail.

Usage: check_abi.py LIBDDP SYMBOLS_FILE           check
       check_abi.py --write LIBDDP SYMBOLS_FILE   regenerate the list from this library
"""
import re
import subprocess
import sys


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\).*\[(.*)\]", out)
    if not m:
        sys.exit(f"check_abi: {lib} has no SONAME")
    return m.group(1)


def public_symbols(lib):
    """Mangled name -> demangled name of the defined dynamic symbols that are ddp's own entities.

    Template instantiations of other namespaces that merely mention a ddp type
    (std::make_exception_ptr<ddp::Error>) are weak copies of the implementation, not API."""
    mangled = subprocess.run(["nm", "-D", "--defined-only", "--format=just-symbols", lib], check=True,
                             capture_output=True, text=True).stdout.split()
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), check=True, capture_output=True,
                               text=True).stdout.split("\n")
    own = re.compile(r"^(typeinfo for |typeinfo name for |vtable for |VTT for |(non-)?virtual thunk to )?ddp::")
    return {m: d for m, d in zip(mangled, demangled) if own.match(d)}


def main(argv):
    write = argv[:1] == ["--write"]
    if write:
        argv = argv[1:]
    if len(argv) != 2:
        sys.exit(__doc__)
    lib, listing = argv
    name, symbols = soname(lib), public_symbols(lib)
    if write:
        with open(listing, "w") as f:
            f.write("# libddp's public symbols (tests/package/check_abi.py --write LIBDDP THIS_FILE)\n")
            f.write(f"soname {name}\n")
            f.writelines(f"{m}\n" for m in sorted(symbols))
        print(f"wrote {len(symbols)} symbols of {name} to {listing}")
        return 0
    listed_soname, listed = None, []
    with open(listing) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("soname "):
                listed_soname = line.split()[1]
            else:
                listed.append(line)
    if listed_soname != name:
        print(f"FAIL: {listing} lists the symbols of {listed_soname}, the library is {name}: regenerate it "
              f"with check_abi.py --write")
        return 1
    gone = [m for m in listed if m not in symbols]
    added = sorted(set(symbols) - set(listed))
    for m in added:
        print(f"added (compatible): {symbols[m]}")
    if gone:
        demangled = subprocess.run(["c++filt"], input="\n".join(gone), capture_output=True, text=True).stdout
        for d in demangled.split("\n"):
            if d:
                print(f"gone: {d}")
        print(f"FAIL: {len(gone)} public symbols of {name} are gone while the SONAME stays: an ABI break. "
              "Raise the version (cmake/DdpVersion.cmake: before 1.0 the minor), then regenerate the list.")
        return 1
    print(f"ok: all {len(listed)} listed symbols of {name} exported ({len(added)} added)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
