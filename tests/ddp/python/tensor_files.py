"""Python side of the raw tensor exchange format (tests/ddp/tensor_files.h).

<dir>/<stem>.txt: "name dtype offset numel dim0 dim1 ..." per line; <dir>/<stem>.bin: the bytes,
little-endian, contiguous. dtype is float32 or int64.
"""
import os

import numpy as np
import torch

_DTYPES = {"float32": np.float32, "int64": np.int64}


def read_tensors(directory, stem):
    out = {}
    with open(os.path.join(directory, stem + ".bin"), "rb") as f:
        raw = f.read()
    with open(os.path.join(directory, stem + ".txt")) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            name, dtype, offset, numel = parts[0], parts[1], int(parts[2]), int(parts[3])
            shape = [int(d) for d in parts[4:]]
            dt = np.dtype(_DTYPES[dtype]).newbyteorder("<")
            arr = np.frombuffer(raw, dtype=dt, count=numel, offset=offset).reshape(shape)
            out[name] = torch.from_numpy(arr.astype(dt.newbyteorder("=")).copy())
    return out


def write_tensors(directory, stem, tensors):
    offset = 0
    with open(os.path.join(directory, stem + ".txt"), "w") as txt, \
            open(os.path.join(directory, stem + ".bin"), "wb") as binf:
        for name, t in tensors.items():
            t = t.detach().cpu().contiguous()
            if t.dtype == torch.float32:
                dtype, npdt = "float32", "<f4"
            elif t.dtype == torch.int64:
                dtype, npdt = "int64", "<i8"
            else:
                raise ValueError("unsupported dtype %s for %s" % (t.dtype, name))
            data = t.numpy().astype(npdt).tobytes()
            txt.write("%s %s %d %d%s\n" % (name, dtype, offset, t.numel(),
                                          "".join(" %d" % d for d in t.shape)))
            binf.write(data)
            offset += len(data)
