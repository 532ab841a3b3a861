#!/usr/bin/python3
"""What the BLAS behind Debian's LibTorch costs: a 1024x1024 float32 matmul and nn.Linear(400, 120)
on 64 rows (the CIFAR Net's first Linear), 1 and 2 threads, for each BLAS given on the command line.

  /usr/bin/python3 bench/python/blas_matmul.py                      # this process's BLAS
  /usr/bin/python3 bench/python/blas_matmul.py --compare            # reference, openblas-openmp, openblas-pthread

With --compare each BLAS runs in a child whose LD_LIBRARY_PATH puts that variant's libblas.so.3 and
libopenblas.so.0 first, so one invocation measures all of them on the same machine state. Median of
repeats; GFLOP/s = 2*n^3 / time.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import time


def median_time(fn, repeats, min_seconds=0.2):
    fn()
    times = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            if time.perf_counter() - t0 >= min_seconds:
                break
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def measure(threads, repeats):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    mm = median_time(lambda: torch.mm(a, b), repeats)
    lin, x = torch.nn.Linear(400, 120), torch.randn(64, 400)
    with torch.no_grad():
        fwd = median_time(lambda: lin(x), repeats)
    return {"threads": threads, "matmul_gflops": 2 * 1024 ** 3 / mm / 1e9, "matmul_ms": mm * 1e3, "linear_us": fwd * 1e6}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not args.compare:
        for threads in (1, 2):
            r = measure(threads, args.repeats)
            print(f"{threads} thread(s): matmul 1024^3 {r['matmul_ms']:.2f} ms = {r['matmul_gflops']:.1f} GFLOP/s, "
                  f"Linear(400,120) x 64 rows {r['linear_us']:.1f} us")
        return
    libdir = os.path.dirname(glob.glob("/usr/lib/*/libc.so.6")[0])
    for name, sub in (("reference BLAS", "blas"), ("OpenBLAS openmp", "openblas-openmp"), ("OpenBLAS pthread", "openblas-pthread")):
        folder = os.path.join(libdir, sub)
        if not os.path.exists(os.path.join(folder, "libblas.so.3")):
            print(f"== {name}: not installed ({folder})")
            continue
        print(f"== {name} ({folder})", flush=True)
        env = dict(os.environ, LD_LIBRARY_PATH=folder)
        subprocess.run([sys.executable, __file__, "--repeats", str(args.repeats)], env=env, check=True)


if __name__ == "__main__":
    main()
