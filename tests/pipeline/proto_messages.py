"""The Kubeflow Pipelines spec messages, generated at test time from the vendored proto.

    msgs = proto_messages.load()       # compiles proto/pipeline_spec.proto with protoc into a temp dir
    msgs.PipelineSpec, msgs.PipelineDeploymentConfig, msgs.PlatformSpec
    proto_messages.parse(msgs.PipelineSpec, doc)   # json_format.ParseDict, unknown fields are errors

Needs protoc (Debian protobuf-compiler, which also ships google/protobuf/*.proto in /usr/include) and
python3-protobuf. missing() says which is absent, for the caller to skip or fail.
"""
import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "proto")
PROTOS = ["pipeline_spec.proto", "google/rpc/status.proto"]
INCLUDE = "/usr/include"


def missing():
    """None, or what this machine lacks to generate and use the messages."""
    if shutil.which("protoc") is None:
        return "protoc (Debian package protobuf-compiler)"
    if not os.path.exists(os.path.join(INCLUDE, "google", "protobuf", "struct.proto")):
        return f"{INCLUDE}/google/protobuf/struct.proto (Debian package libprotobuf-dev)"
    try:
        importlib.import_module("google.protobuf.json_format")
    except ImportError:
        return "the Python protobuf runtime (Debian package python3-protobuf)"
    return None


_CACHE = {}


def load():
    if "module" in _CACHE:
        return _CACHE["module"]
    out = tempfile.mkdtemp(prefix="ddp-kfp-proto-")
    atexit.register(shutil.rmtree, out, True)
    try:
        r = subprocess.run(["protoc", f"-I{PROTO_DIR}", f"-I{INCLUDE}", f"--python_out={out}"]
                           + [os.path.join(PROTO_DIR, p) for p in PROTOS], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"protoc failed on {PROTO_DIR}: {r.stderr.strip()}")
        sys.path.insert(0, out)
        import google  # the system package's namespace: add the generated google/rpc beside google/protobuf
        gen = os.path.join(out, "google")
        if gen not in list(google.__path__):
            google.__path__.append(gen)
        module = importlib.import_module("pipeline_spec_pb2")
    finally:
        sys.path[:] = [p for p in sys.path if p != out]
    _CACHE["module"] = module
    _CACHE["dir"] = out
    return module


def parse(message_class, doc):
    """ParseDict with unknown fields as errors; raises json_format.ParseError naming the field."""
    from google.protobuf import json_format
    msg = message_class()
    json_format.ParseDict(doc, msg, ignore_unknown_fields=False)
    return msg
