"""torch.optim.AdamW replaying what tests/train/adamw_test.cc wrote: the
initial parameters, each step's gradients (none where a file is missing) and
dtbench's parameters after each step. Exit 0 when every step is equal bit for
bit, 1 at the first difference, 3 when this torch is not the build's version.
Usage: adamw_reference.py DIR LIBTORCH_VERSION"""
import os
import sys

import torch

d, want = sys.argv[1], sys.argv[2]
# Major.minor: Debian's python3-torch calls itself 1.13.0a0, its LibTorch 1.13.0.
if torch.__version__.split(".")[:2] != want.split(".")[:2]:
    print(f"the reference's torch is {torch.__version__}, the build's LibTorch {want}: run it with the "
          "flavour's python (/usr/bin/python3 for Debian's, bench/peers/python-wheel for the wheel's)")
    sys.exit(3)
head, *rest = open(os.path.join(d, "manifest.txt")).read().split("\n")
lr, beta1, beta2, eps, wd, steps = head.split()
lr, beta1, beta2, eps, wd, steps = float(lr), float(beta1), float(beta2), float(eps), float(wd), int(steps)
shapes = [[int(x) for x in line.split()] for line in rest if line.strip()]


def load(name, shape):
    data = bytearray(open(os.path.join(d, name), "rb").read())
    return torch.frombuffer(data, dtype=torch.float32).reshape(shape).clone()


ps = [load(f"p_init_{i}.bin", s).requires_grad_(True) for i, s in enumerate(shapes)]
opt = torch.optim.AdamW(ps, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
for step in range(steps):
    for i, p in enumerate(ps):
        g = f"g_{step}_{i}.bin"
        p.grad = load(g, shapes[i]) if os.path.exists(os.path.join(d, g)) else None
    opt.step()
    for i, p in enumerate(ps):
        mine = load(f"p_{step}_{i}.bin", shapes[i])
        if not torch.equal(mine, p.detach()):
            diff = (mine - p.detach()).abs().max().item()
            print(f"step {step} parameter {i}: dtbench's AdamW differs from torch.optim.AdamW "
                  f"{torch.__version__} (max |diff| {diff:.3g})")
            sys.exit(1)
print(f"ok: {steps} steps of {len(ps)} parameters bit for bit with torch.optim.AdamW {torch.__version__}")
