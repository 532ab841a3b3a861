"""A PyTorch c10d TCPStore server for the interop tests (tests/store/store_python_test.cpp).

Hosts the store (is_master=True) on a free port, prints "PORT <n>", writes keys for the C++ client
to read, then waits for "cpp/done" and checks everything the C++ client wrote. Exit 0 when all
checks pass; otherwise prints what differed and exits 1.
"""
import datetime
import os
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError as e:  # fail loudly: CI must have python3-torch
    print("PYTHON_TORCH_MISSING: %s cannot import torch.distributed (%s); "
          "install python3-torch" % (sys.executable, e), flush=True)
    sys.exit(3)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
import torch_store  # noqa: E402

TIMEOUT = datetime.timedelta(seconds=60)


def main():
    store = dist.TCPStore("127.0.0.1", 0, None, True, TIMEOUT, wait_for_workers=False,
                          **torch_store.tcpstore_kwargs())
    store.set("py/hello", "from python")
    store.set("py/bytes", bytes([0, 1, 2, 255]))
    store.add("py/counter", 10)
    # torch >= 2.4 hosts the store on its libuv server when it was built with libuv (pip's wheels
    # are; Debian's 2.6 is not), else on the classic one: say which one this run tested.
    backend = torch_store.backend_name(store)
    print("PORT %d torch %s server %s" % (store.port, torch.__version__, backend), flush=True)

    store.wait(["cpp/done"], TIMEOUT)
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append("%s: got %r, want %r" % (what, got, want))

    expect("cpp/set", store.get("cpp/set"), b"from c++")
    expect("cpp/binary", store.get("cpp/binary"), bytes([0, 200, 0, 7]))
    expect("cpp/counter (ASCII decimal)", store.get("cpp/counter"), b"42")
    expect("py/counter after C++ add", store.get("py/counter"), b"15")
    expect("cpp/cas", store.get("cpp/cas"), b"second")
    # torch 1.13's Python binding has no check(); delete_key tells presence just as well.
    expect("cpp/deleted gone", store.delete_key("cpp/deleted"), False)
    expect("cpp/after-timeout", store.get("cpp/after-timeout"), b"still works")
    expect("python add on C++ counter", store.add("cpp/counter", 1), 43)
    expect("prefix layout", store.get("group/inner"), b"prefixed")
    if errors:
        print("c10d_server.py: MISMATCH\n  " + "\n  ".join(errors), flush=True)
        return 1
    print("c10d_server.py: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
