#!/usr/bin/env python3
"""PyTorch's side of devtype's CPU workload S (`cargo bench --bench cpu -- S`): one optimizer
step of a 2048x2048 Linear (4.2M f32 parameters), plain and under a GradScaler (unscale_, the
step it may skip, update; scale 1 so repeated unscaling keeps the gradients), for SGD with
momentum and for Adam, in PyTorch's default (foreach) and fused implementations.

Uses the peers' timing method and JSON lines (../shared/bench/peers/bench_torch.py):

    BENCH_THREADS=2 <peers venv>/bin/python scripts/torch_cpu_bench.py
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "shared", "bench", "peers"))

import torch  # noqa: E402
from bench_torch import THREADS, report, time_per_call  # noqa: E402

N = 2048


def main():
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    model = torch.nn.Linear(N, N)
    model(torch.randn(64, N)).sum().backward()
    params = float(N * N + N)
    for fused in (False, True):
        impl = "fused" if fused else "foreach"
        sgd = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9, fused=fused)
        adam = torch.optim.Adam(model.parameters(), lr=1e-6, fused=fused)
        for name, opt, plain_buffers in (("sgd momentum", sgd, 5.0), ("adam", adam, 7.0)):
            scaler = torch.amp.GradScaler("cpu", init_scale=1.0)
            scaler.scale(torch.ones(()))  # makes the scale (PyTorch does it at the first scale())

            def scaled(opt=opt, scaler=scaler):
                scaler.step(opt)
                scaler.update()

            t = time_per_call(opt.step)
            report("S", f"{name} step ({impl})", "gbps", t, params * 4.0 * plain_buffers)
            report("S", f"{name} step time ({impl})", "ms", t)
            t = time_per_call(scaled)
            report("S", f"{name} scaled step ({impl})", "gbps", t, params * 4.0 * (plain_buffers + 2.0))
            report("S", f"{name} scaled step time ({impl})", "ms", t)


if __name__ == "__main__":
    main()
