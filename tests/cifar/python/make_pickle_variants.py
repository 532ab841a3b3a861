"""Writes CIFAR-10 style pickles for the C++ reader tests (run with Debian's /usr/bin/python3).

usage: make_pickle_variants.py SOURCE_BATCH OUT_DIR

SOURCE_BATCH is a Python-2 style batch (from make_cifar10_synthetic). OUT_DIR receives:
  good/p{2,3,4,5}          the same dict re-saved by Python 3 at each protocol (str keys)
  good/bytes_keys_p{2,3,4}  loaded with encoding='bytes' and re-saved (bytes keys, bytes values)
  good/labels_ndarray      labels as an int64 numpy array
  bad/<case>               one defect each (the C++ test knows what each must report)
"""
import os
import pickle
import sys

import numpy as np


def dump(path, obj, protocol=2):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def main():
    source, out = sys.argv[1], sys.argv[2]
    with open(source, "rb") as f:
        raw = f.read()
    d = pickle.loads(raw, encoding="latin1")
    db = pickle.loads(raw, encoding="bytes")
    for p in (2, 3, 4, 5):
        dump(f"{out}/good/p{p}", d, p)
    for p in (2, 3, 4):
        dump(f"{out}/good/bytes_keys_p{p}", db, p)
    dump(f"{out}/good/labels_ndarray", dict(d, labels=np.array(d["labels"], dtype=np.int64)), 4)

    n = d["data"].shape[0]
    bad = {
        "missing_data": {k: v for k, v in d.items() if k != "data"},
        "missing_labels": {k: v for k, v in d.items() if k != "labels"},
        "cifar100_labels": dict({k: v for k, v in d.items() if k != "labels"}, fine_labels=d["labels"]),
        "label_10": dict(d, labels=[10] + d["labels"][1:]),
        "label_negative": dict(d, labels=[-1] + d["labels"][1:]),
        "label_not_int": dict(d, labels=["cat"] + d["labels"][1:]),
        "labels_short": dict(d, labels=d["labels"][:-1]),
        "shape_4d": dict(d, data=d["data"].reshape(n, 3, 32, 32)),
        "shape_1024": dict(d, data=np.ascontiguousarray(d["data"][:, :1024])),
        "dtype_float32": dict(d, data=d["data"].astype(np.float32)),
        "fortran_order": dict(d, data=np.asfortranarray(d["data"])),
        "data_is_list": dict(d, data=[1, 2, 3]),
        "not_a_dict": [d["data"], d["labels"]],
    }
    for name, obj in bad.items():
        dump(f"{out}/bad/{name}", obj, 2)

    # A pickle that would run code: must be refused, never executed.
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    dump(f"{out}/bad/evil_global", dict(d, extra=Evil()), 2)


if __name__ == "__main__":
    main()
