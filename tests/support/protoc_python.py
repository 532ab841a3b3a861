"""Python modules generated from vendored .proto files by protoc (Debian protobuf-compiler), for the
tests that parse with the real message definitions (tests/pipeline, tests/tensorboard). Generated
once per process into a temporary folder that is removed at exit.

    out = protoc_python.generate(PROTO_ROOT, ["a/b.proto", ...], includes=["/usr/include"])
    sys.path.insert(0, out); import a.b_pb2 (or b_pb2 for a proto at the root)
"""
import atexit
import os
import shutil
import subprocess
import tempfile

_GENERATED = {}


def generate(proto_root, protos, includes=()):
    """The folder holding the *_pb2.py modules of `protos` (paths relative to proto_root). Raises
    RuntimeError with protoc's message when it fails."""
    key = (os.path.abspath(proto_root), tuple(protos), tuple(includes))
    if key not in _GENERATED:
        out = tempfile.mkdtemp(prefix="ddp-protoc-")
        atexit.register(shutil.rmtree, out, True)
        r = subprocess.run(["protoc", f"-I{proto_root}"] + [f"-I{i}" for i in includes] + [f"--python_out={out}"]
                           + [os.path.join(proto_root, p) for p in protos], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"protoc failed on {proto_root}: {r.stderr.strip()}")
        _GENERATED[key] = out
    return _GENERATED[key]
