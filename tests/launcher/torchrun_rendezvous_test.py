#!/usr/bin/python3
"""ddprun and PyTorch's torchrun in one c10d rendezvous, against the real torchrun (the python3-torch
of the suite: 1.13 on Debian 12, 2.6 in the Debian 13 root).

The two cannot share a rendezvous: torchrun's agents keep the round's state in the store as a pickled
Python object under 'torch.rendezvous.<rdzv id>' (c10d_rendezvous_backend.py, both versions), ddprun
under 'ddprun/'. What must hold is that ddprun says so at once, exit 2, naming torch's key, instead of
waiting out --join-timeout, whichever launcher hosts the store:

  1. torchrun hosts it (started first), ddprun joins as a client of torch's TCPStore;
  2. ddprun hosts it, and torchrun's agent (which finds the port taken and falls back to a client,
     as torch does on one machine) joins ddprun's store.

  torchrun_rendezvous_test.py --ddprun PATH --shim tests/support/torchrun_shim.py
"""
import argparse
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, limit=60):
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def torchrun(shim, port):
    return subprocess.Popen(
        [sys.executable, shim, "--nnodes", "2", "--nproc_per_node", "1", "--rdzv_backend", "c10d",
         "--rdzv_endpoint", "127.0.0.1:%d" % port, "--rdzv_id", "mix", "--redirects", "1", "--tee", "1",
         "--no_python", "/bin/true"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def ddprun(path, port):
    return subprocess.Popen(
        [path, "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
         "127.0.0.1:%d" % port, "--rdzv-id", "mix", "--join-timeout", "60", "/bin/true"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def expect_refused(name, ours, theirs):
    try:
        out, _ = ours.communicate(timeout=40)
    finally:
        theirs.kill()
        theirs.communicate()
    want = "holds 'torch.rendezvous.mix', a torchrun agent's c10d rendezvous"
    if ours.returncode != 2 or want not in out:
        print("FAIL %s: ddprun exited %s; expected 2 and %r in:\n%s" % (name, ours.returncode, want, out))
        return False
    print("ok %s: ddprun exit 2, naming torch's key" % name)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", required=True)
    ap.add_argument("--shim", required=True)
    args = ap.parse_args()
    ok = True

    for name, host, guest in (("torchrun hosts", lambda p: torchrun(args.shim, p), lambda p: ddprun(args.ddprun, p)),
                              ("ddprun hosts", lambda p: ddprun(args.ddprun, p), lambda p: torchrun(args.shim, p))):
        port = free_port()
        first = host(port)
        if not wait_listening(port):
            first.kill()
            print("FAIL %s: the store never listened:\n%s" % (name, first.communicate()[0]))
            return 1
        # ddprun is the one to refuse: the guest when torchrun hosts, the host when ddprun does.
        second = guest(port)
        ok &= expect_refused(name, *((second, first) if name == "torchrun hosts" else (first, second)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
