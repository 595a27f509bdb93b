#!/usr/bin/env python3
"""libdtbench_memory_probe.so in a Python torch process (ctypes), as
bench/peers/torch_sharded.py --memory-probe uses it: every tensor made after
install is counted by its bytes and uncounted when freed, the peak restarts at
reset, tensors made before install change nothing when freed.
  memory_probe_test.py LIB   (run with the build flavour's python3 + torch)"""
import ctypes
import sys

import torch

lib = ctypes.CDLL(sys.argv[1])
for f in ("current", "peak"):
    getattr(lib, "dtbench_memory_probe_" + f).restype = ctypes.c_longlong
current, peak = lib.dtbench_memory_probe_current, lib.dtbench_memory_probe_peak
MiB = 1 << 20


def check(what, got, want):
    if got != want:
        sys.exit(f"FAIL: {what}: {got} bytes, expected {want}")
    print(f"ok: {what}: {got}")


before = torch.ones(MiB)  # 4 MiB made before the counter
if lib.dtbench_memory_probe_install() != 1:
    sys.exit("FAIL: the counter could not wrap torch's default CPU allocator")
base = current()
a = torch.empty(MiB, dtype=torch.float32)
check("a 4 MiB float32 tensor", current() - base, 4 * MiB)
b = torch.mm(torch.ones(256, 512), torch.ones(512, 128))  # operands freed, the result kept
check("a matmul's result (its operands freed)", current() - base, 4 * MiB + 256 * 128 * 4)
del before
check("a tensor made before install, freed", current() - base, 4 * MiB + 256 * 128 * 4)
del b
lib.dtbench_memory_probe_reset_peak()
check("peak after reset", peak() - base, 4 * MiB)
c = torch.empty(2 * MiB, dtype=torch.bfloat16)
del c
check("peak after a 4 MiB bf16 tensor came and went", peak() - base, 8 * MiB)
del a
check("everything freed", current(), base)
print("PASS")
