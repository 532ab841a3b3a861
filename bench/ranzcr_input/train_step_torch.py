#!/usr/bin/python3
"""PyTorch side of bench_ranzcr_train_step: torchvision ResNet with a 1-channel stem and 11 outputs,
BCE-with-logits, Adam(lr 1e-3, weight_decay 0.1), CPU.

  /usr/bin/python3 train_step_torch.py --arch resnet18 --image-size 224 --batch-size 16 --steps 5 --threads 2
"""
import argparse
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--arch", default="resnet18")
p.add_argument("--image-size", type=int, default=224)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
net = getattr(torchvision.models, a.arch)(num_classes=11)
net.conv1 = torch.nn.Conv2d(1, 64, 7, 2, 3, bias=False)
opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=0.1)
x = torch.randn(a.batch_size, 1, a.image_size, a.image_size)
y = (torch.rand(a.batch_size, 11) < 0.3).float()


def step():
    opt.zero_grad()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x), y)
    loss.backward()
    opt.step()


for _ in range(a.warmup):
    step()
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(a.steps):
    step()
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
print("RESULT torch arch=%s image_size=%d batch=%d threads=%d step_s=%.4f images_per_s=%.2f cpu_s_per_image=%.4f"
      % (a.arch, a.image_size, a.batch_size, a.threads, dt / a.steps, a.batch_size * a.steps / dt,
         cpu / (a.batch_size * a.steps)))
