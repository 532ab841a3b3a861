#!/usr/bin/env python3
"""No file outside libddp includes libddp's internal headers.

libddp's internals (src/ddp/{core,store,gloo,nccl,reducer,layers,checkpoint}) are neither installed nor
exported (hidden visibility): code outside those folders uses the public headers <ddp/...h> only.
A test that exercises an internal unit on purpose compiles that unit into itself
(ddp_test_internal_units in cmake/DdpHelpers.cmake) and is listed in TESTS_OF_INTERNALS.
Usage: check_layering.py <source root>; prints every offending include and exits 1 when there is one.
"""
import os
import re
import sys

AREAS = ("core", "store", "gloo", "nccl", "reducer", "layers", "checkpoint")
INTERNAL_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](ddp/(?:%s)/[^">]+)[">]' % "|".join(AREAS))
LIBDDP_FOLDERS = tuple("src/ddp/%s/" % a for a in AREAS)
SCANNED = ("include", "src", "apps", "tools", "tests", "bench")
SUFFIXES = (".h", ".hpp", ".cpp", ".cc")

# Tests of internal units: each compiles the unit it includes (see ddp_test_internal_units).
TESTS_OF_INTERNALS = {
    "tests/checkpoint/checkpoint_file_test.cpp",
    "tests/checkpoint/checkpoint_test.cpp",
    "tests/core/restart_count_test.cpp",
    "tests/ddp/bucket_assignment_test.cpp",
    "tests/gloo/peer_directory_test.cpp",
    "tests/nccl/nccl_internals_test.cpp",
    "tests/nccl/nccl_settings_test.cpp",
}

# Fuzz targets build every unit they include from their <name>.sources list, with no libddp at all.
FUZZ_TARGETS = ("tests/fuzz/",)


def offending_includes(root):
    for top in SCANNED:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel.startswith(LIBDDP_FOLDERS + FUZZ_TARGETS) or rel in TESTS_OF_INTERNALS:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INTERNAL_INCLUDE.match(line)
                        if m:
                            yield "%s:%d: includes libddp-internal \"%s\"" % (rel, number, m.group(1))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    if not os.path.isdir(os.path.join(root, "src", "ddp")):
        sys.exit("not a ddp source tree: " + root)
    bad = list(offending_includes(root))
    for line in bad:
        print(line)
    print("%d include(s) of libddp internals from outside libddp" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
