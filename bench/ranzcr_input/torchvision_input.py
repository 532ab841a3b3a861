#!/usr/bin/python3
"""The PyTorch baseline for bench_ranzcr_input: PIL decode + torchvision transforms in a DataLoader,
the seed's pipeline with the same augmentation as ours (resize, random resized crop, rotation,
brightness/contrast, normalise), grayscale.

  /usr/bin/python3 torchvision_input.py --data DIR --image-size 224 --workers 2 --epochs 2
"""
import argparse
import csv
import os
import time

import torch
from PIL import Image
from torchvision import transforms


class Xrays(torch.utils.data.Dataset):
    def __init__(self, folder, transform):
        with open(os.path.join(folder, "train.csv")) as f:
            rows = list(csv.DictReader(f))
        self.paths = [os.path.join(folder, "train", r["StudyInstanceUID"] + ".jpg") for r in rows]
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.transform(Image.open(self.paths[i]).convert("L"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    s = a.image_size
    transform = transforms.Compose([
        transforms.Resize((s, s)),
        transforms.RandomResizedCrop(s, scale=(0.85, 1.0), ratio=(1 / 1.1, 1.1)),
        transforms.RandomRotation(7),
        transforms.ColorJitter(brightness=0.1, contrast=0.1),
        transforms.ToTensor(),
        transforms.Normalize([0.449], [0.226]),
    ])
    loader = torch.utils.data.DataLoader(Xrays(a.data, transform), batch_size=a.batch_size,
                                         num_workers=a.workers, shuffle=False)
    best = 0.0
    for e in range(a.epochs):
        t0 = time.perf_counter()
        n = 0
        for batch in loader:
            n += batch.shape[0]
        dt = time.perf_counter() - t0
        best = max(best, n / dt)
        print("torchvision epoch %d: %d images in %.3f s = %.1f images/s" % (e, n, dt, n / dt), flush=True)
    print("RESULT torchvision images_per_s=%.1f image_size=%d workers=%d" % (best, s, a.workers))


if __name__ == "__main__":
    main()
