"""How the Python oracle scripts construct a c10d TCPStore on any torch: 1.13, 2.x with libuv, and
Debian 13's 2.6, which is built without libuv yet defaults to it.

torch >= 2.4 hosts and dials stores through libuv unless told otherwise. A torch built without
libuv raises "use_libuv was requested but PyTorch was build without libuv support" for the
default; torch's own rendezvous then only works with USE_LIBUV=0 in the environment (which
init_process_group's env:// and torchrun's static rendezvous read), while a TCPStore constructed
directly needs use_libuv=False. These scripts follow the same switch: USE_LIBUV=0 means the classic
server and client (scripts/in-trixie.sh sets it where torch lacks libuv).

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
    import torch_store
    store = dist.TCPStore(host, port, world, is_master, timeout, **torch_store.tcpstore_kwargs())
"""
import os


def tcpstore_kwargs():
    """{} where TCPStore's defaults apply; {"use_libuv": False} when USE_LIBUV=0."""
    return {"use_libuv": False} if os.environ.get("USE_LIBUV", "").strip() == "0" else {}


def backend_name(store):
    """"libuv" or "classic": which server or client this store object is (torch >= 2.4 says)."""
    return "libuv" if getattr(store, "libuvBackend", False) else "classic"
