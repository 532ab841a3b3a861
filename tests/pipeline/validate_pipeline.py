#!/usr/bin/python3
"""Validates the compiled Kubeflow pipelines under pipelines/ (pipeline_checks.py says what is
checked) and that each is exactly what pipelines/compile.py writes from its sources today.

  validate_pipeline.py [--repo DIR] [FILE...]     default: pipelines/hybrid-training.yaml

Exit 0: valid; 1: errors (each printed); 77: protoc or python3-protobuf missing (a failure under
CI=true, tests/support/ci.py).
"""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import ci  # noqa: E402
import pipeline_checks  # noqa: E402
import proto_messages  # noqa: E402


def load_compiler(repo):
    """pipelines/compile.py of `repo` as a module (its render() is the expected text)."""
    path = os.path.join(repo, "pipelines", "compile.py")
    spec = importlib.util.spec_from_file_location("ddp_pipelines_compile", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def validate(text, msgs, expected=None):
    """Every error in `text`; with `expected` (compile.py's output), a difference is one too."""
    errors = pipeline_checks.check_text(text, msgs)
    if expected is not None and text != expected:
        errors.append("differs from what pipelines/compile.py writes from its sources: run pipelines/compile.py")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    why = proto_messages.missing()
    if why:
        return ci.skip(f"cannot generate the pipeline spec messages: no {why}")
    msgs = proto_messages.load()
    compiler = load_compiler(args.repo)
    files = args.files or [compiler.OUTPUT]
    failed = False
    for path in files:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as e:
            print(f"FAIL {path}: {e}")
            failed = True
            continue
        ours = os.path.abspath(path) == os.path.abspath(compiler.OUTPUT)
        errors = validate(text, msgs, compiler.render() if ours else None)
        for e in errors:
            print(f"FAIL {os.path.relpath(path, args.repo)}: {e}")
        if not errors:
            print(f"ok   {os.path.relpath(path, args.repo)}: a valid PipelineSpec, references and conditions checked, "
                  f"up to date with compile.py")
        failed = failed or bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
