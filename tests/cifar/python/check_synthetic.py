"""Checks that Python reads make_cifar10_synthetic's Python layout the way torchvision does.

usage: check_synthetic.py ROOT   (ROOT holds cifar-10-batches-py/ and cifar-10-batches-bin/)

1. pickle.load(f, encoding='latin1') on every batch gives data uint8 [n, 3072] and n labels in 0..9,
   equal to the binary layout's records;
2. torchvision.datasets.CIFAR10's own loading code accepts the folder once its md5 check of the
   *published* files is bypassed (a synthetic file cannot match those checksums);
3. the stock class refuses it (so we know why we bypass).
Prints "OK" at the end; any failure raises.
"""
import os
import pickle
import sys

import numpy as np


def main():
    root = sys.argv[1]
    py = os.path.join(root, "cifar-10-batches-py")
    binary = os.path.join(root, "cifar-10-batches-bin")
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        with open(os.path.join(py, name), "rb") as f:
            entry = pickle.load(f, encoding="latin1")
        data, labels = entry["data"], entry["labels"]
        assert isinstance(data, np.ndarray) and data.dtype == np.uint8, (name, type(data), getattr(data, "dtype", None))
        assert data.ndim == 2 and data.shape[1] == 3072, (name, data.shape)
        assert isinstance(labels, list) and len(labels) == data.shape[0], name
        assert all(isinstance(x, int) and 0 <= x <= 9 for x in labels), name
        rec = np.fromfile(os.path.join(binary, name + ".bin"), dtype=np.uint8).reshape(-1, 3073)
        assert (rec[:, 0] == np.array(labels)).all(), name
        assert (rec[:, 1:] == data).all(), name

    import torchvision

    class UncheckedCIFAR10(torchvision.datasets.CIFAR10):
        def _check_integrity(self):
            return all(os.path.isfile(os.path.join(self.root, self.base_folder, f)) for f, _ in self.train_list + self.test_list)

        def _load_meta(self):
            with open(os.path.join(self.root, self.base_folder, self.meta["filename"]), "rb") as f:
                self.classes = pickle.load(f, encoding="latin1")[self.meta["key"]]
            self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    train = UncheckedCIFAR10(root, train=True, download=False)
    test = UncheckedCIFAR10(root, train=False, download=False)
    img, label = train[0]
    assert img.size == (32, 32) and 0 <= label <= 9
    assert len(train.classes) == 10
    print(f"torchvision read {len(train)} train / {len(test)} test images")
    try:
        torchvision.datasets.CIFAR10(root, train=True, download=False)
        raise AssertionError("stock torchvision accepted synthetic files (md5 check expected to fail)")
    except RuntimeError as e:
        print(f"stock torchvision refuses (md5 of the published files): {e}")
    print("OK")


if __name__ == "__main__":
    main()
