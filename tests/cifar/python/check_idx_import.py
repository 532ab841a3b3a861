"""Checks make_cifar10_from_idx's output against the IDX files it read, with numpy as the oracle.

usage: check_idx_import.py SOURCE_DIR OUT_DIR TRAIN TEST

For the first TRAIN training and TEST test images of SOURCE_DIR's {train,t10k}-*-ubyte.gz:
1. the IDX files are decoded here independently (gzip + the header's big-endian dims);
2. every image of cifar-10-batches-py/ (pickle.load(f, encoding='latin1'), as torchvision reads it)
   and of cifar-10-batches-bin/ equals the source image zero-padded by 2 on each side, in R, G and B;
3. the labels are the source labels, in order, and batches.meta lists Fashion-MNIST's class names.
Prints "OK" at the end; any difference raises.
"""
import gzip
import os
import pickle
import sys

import numpy as np

NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    assert raw[0] == 0 and raw[1] == 0 and raw[2] == 8, path
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def expected(source, stem, n):
    images = read_idx(os.path.join(source, f"{stem}-images-idx3-ubyte.gz"))[:n]
    labels = read_idx(os.path.join(source, f"{stem}-labels-idx1-ubyte.gz"))[:n]
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    rgb = np.repeat(padded[:, None, :, :], 3, axis=1).reshape(len(images), 3072)
    return rgb, labels.astype(np.int64)


def from_py(folder, names):
    data, labels = [], []
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            entry = pickle.load(f, encoding="latin1")
        data.append(entry["data"])
        labels.extend(entry["labels"])
    return np.concatenate(data), np.array(labels, dtype=np.int64)


def from_bin(folder, names):
    records = np.concatenate([np.fromfile(os.path.join(folder, n + ".bin"), dtype=np.uint8).reshape(-1, 3073) for n in names])
    return records[:, 1:], records[:, 0].astype(np.int64)


def main():
    source, out, n_train, n_test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    train_names = [f"data_batch_{i}" for i in range(1, 6)]
    for split, stem, n, names in (("train", "train", n_train, train_names), ("test", "t10k", n_test, ["test_batch"])):
        want_x, want_y = expected(source, stem, n)
        for layout, read in (("py", from_py), ("bin", from_bin)):
            got_x, got_y = read(os.path.join(out, f"cifar-10-batches-{layout}"), names)
            assert got_x.shape == want_x.shape, (split, layout, got_x.shape, want_x.shape)
            assert np.array_equal(got_x, want_x), (split, layout, "images differ")
            assert np.array_equal(got_y, want_y), (split, layout, "labels differ")
    with open(os.path.join(out, "cifar-10-batches-py", "batches.meta"), "rb") as f:
        meta = pickle.load(f, encoding="latin1")
    assert meta["label_names"] == NAMES, meta["label_names"]
    with open(os.path.join(out, "cifar-10-batches-bin", "batches.meta.txt")) as f:
        assert f.read().split("\n")[:10] == NAMES
    print("OK")


if __name__ == "__main__":
    main()
