"""Skips that CI must not accept: one helper for every Python test script.

A test that cannot run here for a missing privilege or tool (root, network namespaces, kubectl, a
binary not built) skips on a developer's machine, but a CI run that skipped it would report a pass
that checked nothing. With CI=true (what GitHub Actions, GitLab and most CI systems set) it fails
instead, saying what is missing. Only GPU tests on a machine without a GPU may skip in CI.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import ci
    return ci.skip("the rehearsal needs root and network namespaces (no CAP_NET_ADMIN)")
"""
import os

SKIP = 77  # ctest SKIP_RETURN_CODE in the tests that use skip()


def in_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def skip(missing):
    """Prints why and returns the exit code: 77 (a skip) normally, 1 (a failure) under CI=true."""
    if in_ci():
        print(f"FAIL: CI=true, and this test cannot run here: {missing}")
        return 1
    print(f"SKIP: {missing}")
    return SKIP


def missing(what, errors, notes):
    """For a check that goes on without something (kubectl, a built binary): a note in `notes`
    normally, an error in `errors` under CI=true."""
    if in_ci():
        errors.append(f"CI=true, and this check cannot be complete here: {what}")
    else:
        notes.append(what)
