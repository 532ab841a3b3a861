"""A PyTorch c10d TCPStore client for the interop tests (tests/store/store_python_test.cpp).

Usage: c10d_client.py PORT. Talks to our server (started by the C++ test) and uses every client
operation c10d has: set/get/add/compare_set/wait/check/delete_key/num_keys, checks the values the
C++ side wrote, and writes values the C++ side checks afterwards. Exit 0 when all checks pass.
"""
import datetime
import os
import socket
import struct
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


def raw_check(port, wire_keys):
    """c10d 1.x CHECK on a fresh connection: byte 4, u64 count, (u64 len, key)*; reply one byte,
    0 READY / 1 NOT_READY."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        msg = bytes([4]) + struct.pack("<Q", len(wire_keys))
        for k in wire_keys:
            msg += struct.pack("<Q", len(k)) + k.encode()
        c.sendall(msg)
        reply = c.recv(1)
        return reply[0] if reply else None


def main():
    port = int(sys.argv[1])
    # world_size=2: the c10d client also does its "init/" rendezvous add on connect.
    store = dist.TCPStore("127.0.0.1", port, 2, False, datetime.timedelta(seconds=30),
                          **torch_store.tcpstore_kwargs())
    errors = []

    def expect(what, got, want):
        if got != want:
            errors.append("%s: got %r, want %r" % (what, got, want))

    expect("cpp/hello", store.get("cpp/hello"), b"from c++")
    expect("cpp/bytes", store.get("cpp/bytes"), bytes([255, 0, 9]))
    expect("cpp/counter", store.get("cpp/counter"), b"7")
    expect("add on C++ counter", store.add("cpp/counter", 3), 10)
    expect("add new", store.add("py/counter", -4), -4)
    store.set("py/set", "from python")
    store.set("py/binary", bytes([1, 0, 254]))
    expect("compare_set create", store.compare_set("py/cas", "", "first"), b"first")
    expect("compare_set mismatch", store.compare_set("py/cas", "nope", "x"), b"first")
    expect("compare_set swap", store.compare_set("py/cas", "first", "second"), b"second")
    expect("compare_set missing", store.compare_set("py/absent", "exp", "x"), b"exp")
    # torch 1.13's Python binding has no check(): send c10d 1.x's CHECK (query byte 4) by hand.
    expect("raw CHECK present", raw_check(port, ["/cpp/hello", "/py/set"]), 0)
    expect("raw CHECK absent", raw_check(port, ["/cpp/hello", "/py/absent"]), 1)
    # torch 2.x's binding has check(), multi_set/multi_get and append (c10d 2.x queries); 1.13's
    # has none of them. Only the version tells which to expect, so a 2.x without them fails.
    major = int(torch.__version__.split(".")[0])
    if major >= 2:
        expect("check present", store.check(["cpp/hello", "py/set"]), True)
        expect("check absent", store.check(["cpp/hello", "py/absent"]), False)
        store.multi_set(["py/m1", "py/m2"], ["one", bytes([0, 2])])
        expect("multi_get", store.multi_get(["py/m2", "py/m1", "cpp/hello"]), [bytes([0, 2]), b"one", b"from c++"])
        store.append("py/appended", "ab")
        store.append("py/appended", "cd")
        expect("append", store.get("py/appended"), b"abcd")
    store.set("py/to-delete", "x")
    expect("delete_key present", store.delete_key("py/to-delete"), True)
    expect("delete_key absent", store.delete_key("py/to-delete"), False)
    store.wait(["cpp/hello", "py/set"], datetime.timedelta(seconds=5))
    n = store.num_keys()
    expect("num_keys positive", n >= 8, True)

    # A wait that times out: c10d 1.13 raises; the server must forget the wait cleanly.
    try:
        store.wait(["py/never"], datetime.timedelta(milliseconds=300))
        errors.append("wait on a missing key did not time out")
    except RuntimeError as e:
        if "imeout" not in str(e) and "timed out" not in str(e):
            errors.append("wait timeout raised an unexpected error: %s" % e)

    if major >= 2:
        # 2.x cancels a timed-out wait (CANCEL_WAIT) and keeps using the same connection.
        expect("get on the same connection after a timed-out wait", store.get("cpp/hello"), b"from c++")

    # A get that blocks until the C++ side sets the key (on a fresh connection: the one above
    # may be out of step after the timeout, which is c10d 1.13's own behaviour).
    store2 = dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=30),
                           **torch_store.tcpstore_kwargs())
    store2.set("py/waiting", "1")
    expect("blocking get", store2.get("cpp/late"), b"late value")
    store2.set("py/done", "1")
    if errors:
        print("c10d_client.py: MISMATCH\n  " + "\n  ".join(errors), flush=True)
        return 1
    print("c10d_client.py: all checks passed (torch %s)" % torch.__version__, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
