"""The Kubeflow Pipelines spec messages, generated at test time from the vendored proto.

    msgs = proto_messages.load()       # compiles proto/pipeline_spec.proto with protoc into a temp dir
    msgs.PipelineSpec, msgs.PipelineDeploymentConfig, msgs.PlatformSpec
    proto_messages.parse(msgs.PipelineSpec, doc)   # json_format.ParseDict, unknown fields are errors

Needs protoc (Debian protobuf-compiler, which also ships google/protobuf/*.proto in /usr/include) and
python3-protobuf. missing() says which is absent, for the caller to skip or fail.
"""
import importlib
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "proto")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import protoc_python  # noqa: E402
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
    out = protoc_python.generate(PROTO_DIR, PROTOS, includes=[INCLUDE])
    sys.path.insert(0, out)
    try:
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
