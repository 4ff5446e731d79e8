#!/usr/bin/env python3
"""PyTorch's side of devtype's CPU workloads H and S (`cargo bench --bench cpu -- H S`), with
the peers' timing method and JSON lines (../shared/bench/peers/bench_torch.py):

- H: element-wise ops, casts and GEMMs on float32, float16 and bfloat16, per element (or flop),
  on the same shapes (16M elements; 1024^3 and 2048^3 products);
- S: one optimizer step of a 2048x2048 Linear (4.2M f32 parameters), plain and under a
  GradScaler (unscale_, the step it may skip, update; scale 1 so repeated unscaling keeps the
  gradients), for SGD with momentum and for Adam, in PyTorch's default (foreach) and fused
  implementations.

    BENCH_THREADS=2 <peers venv>/bin/python scripts/torch_cpu_bench.py [H] [S]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "shared", "bench", "peers"))

import json  # noqa: E402

import torch  # noqa: E402
from bench_torch import ELEM_N, PEER, THREADS, median, report, time_per_call  # noqa: E402

N = 2048


def report_gelem(case, secs, n):
    """One JSON line in elements per second (devtype's unit for workload H)."""
    vals = [n / s / 1e9 for s in secs]
    print(json.dumps({
        "peer": PEER, "workload": "H", "case": case, "value": round(median(vals), 6),
        "unit": "Gelem/s", "min": round(min(vals), 6), "max": round(max(vals), 6),
        "samples": len(vals),
    }), flush=True)


def half_speed():
    n = float(ELEM_N)
    x32, y32 = torch.randn(ELEM_N), torch.randn(ELEM_N)
    for name, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
        x, y = x32.to(dtype), y32.to(dtype)
        for case, fn in (
            ("x+y", lambda: x + y),
            ("add_relu", lambda: torch.relu(x + y)),
            ("relu", lambda: torch.relu(x)),
            ("x*2.5", lambda: x * 2.5),
            ("exp", lambda: torch.exp(x)),
            ("log", lambda: torch.log(x)),
            ("tanh", lambda: torch.tanh(x)),
            ("sigmoid", lambda: torch.sigmoid(x)),
        ):
            report_gelem(f"{name} {case}", time_per_call(fn), n)
    for case, fn in (
        ("cast f32->f16", lambda: x32.to(torch.float16)),
        ("cast f32->bf16", lambda: x32.to(torch.bfloat16)),
    ):
        report_gelem(case, time_per_call(fn), n)
    h, b = x32.to(torch.float16), x32.to(torch.bfloat16)
    report_gelem("cast f16->f32", time_per_call(lambda: h.to(torch.float32)), n)
    report_gelem("cast bf16->f32", time_per_call(lambda: b.to(torch.float32)), n)
    slow = set()
    for size in (1024, 2048):
        a, c = torch.randn(size, size), torch.randn(size, size)
        flops = 2.0 * size**3
        for name, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16)):
            if name in slow:
                # Without AVX512-BF16/FP16 or AMX, oneDNN is not used and PyTorch's fallback
                # ran at ~1 GFLOP/s (Zen 3): one 2048 product would take ~20 s.
                print(f"gemm {name} n={size}: skipped, n=1024 ran under 10 GFLOP/s", file=sys.stderr)
                continue
            ad, cd = a.to(dtype), c.to(dtype)
            secs = time_per_call(lambda: ad @ cd)
            report("H", f"gemm {name} n={size}", "gflops", secs, flops)
            if flops / median(secs) < 10e9:
                slow.add(name)


def optimizer_steps():
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


def main():
    torch.set_num_threads(THREADS)
    want = sys.argv[1:] or ["H", "S"]
    if "H" in want:
        half_speed()
    if "S" in want:
        optimizer_steps()


if __name__ == "__main__":
    main()
