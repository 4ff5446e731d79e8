#!/usr/bin/env python3
"""PyTorch's side of devtype's CPU benchmarks (`cargo bench --bench cpu -- A B C E H S`), with
the same shapes, data and timing method (warm-up, calibrated iterations, median of samples) and
the same JSON lines, so the two can be run one after the other and read side by side:

- A: sgemm, n = 256, 1024, 2048;
- B: `relu(x + y)` on 16M f32 (two ops, and each alone);
- C: `Linear(10, 2)` forward on a 4x10 batch (no_grad, and recording the graph);
- E: a 1-element add;
- H: element-wise ops, casts and GEMMs on float32, float16 and bfloat16, per element (or flop),
  on the same shapes (16M elements; 1024^3 and 2048^3 products);
- S: one optimizer step of a 2048x2048 Linear (4.2M f32 parameters), plain and under a
  GradScaler (unscale_, the step it may skip, update; scale 1 so repeated unscaling keeps the
  gradients), for SGD with momentum and for Adam, in PyTorch's default (foreach) and fused
  implementations.

    python3 -m venv .venv && .venv/bin/pip install torch numpy
    BENCH_THREADS=2 .venv/bin/python scripts/torch_cpu_bench.py [A] [B] [C] [E] [H] [S]

Env: BENCH_THREADS (default 2, torch.set_num_threads), BENCH_QUICK=1 (short smoke run),
BENCH_SAMPLES (samples per measurement, default 9).
"""
import json
import os
import sys
import time

import numpy as np
import torch

PEER = "torch"
QUICK = os.environ.get("BENCH_QUICK") == "1"
THREADS = int(os.environ.get("BENCH_THREADS", "2"))
MIN_SAMPLE_S = 0.02 if QUICK else 0.15
SAMPLES = 3 if QUICK else int(os.environ.get("BENCH_SAMPLES", "9"))
GEMM_SIZES = [256, 1024, 2048]
ELEM_N = 16 * 1024 * 1024
TINY_IN, TINY_OUT, TINY_BATCH, TINY_REPS = 10, 2, 4, 100_000
N = 2048


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


UNITS = {
    "gflops": (lambda arg, s: arg / s / 1e9, "GFLOP/s"),
    "gbps": (lambda arg, s: arg / s / 1e9, "GB/s"),
    "ns": (lambda arg, s: s * 1e9, "ns"),
    "ms": (lambda arg, s: s * 1e3, "ms"),
}


def report(workload, case, kind, secs, arg=None):
    """One JSON line, as `benches/cpu.rs` prints them."""
    conv, unit = UNITS[kind]
    vals = [conv(arg, s) for s in secs]
    print(json.dumps({
        "peer": PEER, "workload": workload, "case": case,
        "value": round(median(vals), 6), "unit": unit,
        "min": round(min(vals), 6), "max": round(max(vals), 6),
        "samples": len(vals),
    }), flush=True)


def time_per_call(fn):
    """Seconds per call, one entry per sample (as `benches/common/mod.rs`'s time_per_call)."""
    t0 = time.perf_counter()
    warm = 0
    while warm < 3 or time.perf_counter() - t0 < MIN_SAMPLE_S * 0.5:
        fn()
        warm += 1
    t = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t, 1e-9)
    iters = max(1, int(np.ceil(MIN_SAMPLE_S / one)))
    if iters > 10:
        probe = max(1, iters // 10)
        t = time.perf_counter()
        for _ in range(probe):
            fn()
        per = max(time.perf_counter() - t, 1e-9) / probe
        iters = max(1, int(np.ceil(MIN_SAMPLE_S / per)))
    out = []
    for _ in range(SAMPLES):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        out.append((time.perf_counter() - t) / iters)
    return out


def time_fixed(fn, reps=TINY_REPS, warmup=2):
    """Seconds per call with a fixed count per sample (the tiny workloads)."""
    for _ in range(warmup):
        fn()
    res = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        res.append((time.perf_counter() - t) / reps)
    return res


def det_sym(n, seed, scale):
    """`benches/common/mod.rs`'s deterministic data: ((i + seed) * golden) >> 40, to [-scale, scale)."""
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed)
    u = ((i * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)).astype(np.float32) / np.float32(16777216.0)
    return (np.float32(2.0) * u - np.float32(1.0)) * np.float32(scale)


def gemm():
    for n in GEMM_SIZES:
        a, b = torch.randn(n, n), torch.randn(n, n)
        report("A", f"sgemm n={n}", "gflops", time_per_call(lambda: a @ b), 2.0 * n**3)


def elementwise():
    n, nbytes = ELEM_N, 4.0 * ELEM_N
    x, y = torch.randn(n), torch.randn(n)
    z = x + y
    with torch.no_grad():
        report("B", "add x+y (alloc out)", "gbps", time_per_call(lambda: torch.add(x, y)), 3 * nbytes)
        report("B", "relu(z) (alloc out)", "gbps", time_per_call(lambda: torch.relu(z)), 2 * nbytes)
        t = time_per_call(lambda: torch.relu(x + y))
        report("B", "relu(x+y) 2 ops", "gbps", t, 5 * nbytes)
        report("B", "relu(x+y) 2 ops time", "ms", t)


def tiny():
    x = torch.from_numpy(det_sym(TINY_BATCH * TINY_IN, 11, 1.0).reshape(TINY_BATCH, TINY_IN))
    lin = torch.nn.Linear(TINY_IN, TINY_OUT)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(det_sym(TINY_OUT * TINY_IN, 12, 0.3).reshape(TINY_OUT, TINY_IN)))
        lin.bias.copy_(torch.from_numpy(det_sym(TINY_OUT, 13, 0.3)))
    with torch.no_grad():
        report("C", "nn.Linear(10,2) fwd, no_grad", "ns", time_fixed(lambda: lin(x)))
    report("C", "nn.Linear(10,2) fwd, grad mode (records graph)", "ns", time_fixed(lambda: lin(x)))
    report("C", "  ref: python loop + lambda call (no op)", "ns", time_fixed(lambda: None))


def dispatch():
    a, b = torch.tensor([1.5]), torch.tensor([2.5])
    report("E", "a.add(b), 1-elem f32", "ns", time_fixed(lambda: a.add(b), warmup=1000))
    report("E", "  ref: python loop + lambda call (no op)", "ns", time_fixed(lambda: None))


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


def clip_workload():
    """Workload K: clip_grad_norm_ (foreach) over a 2048x2048 Linear, 4.2M parameters."""
    torch.manual_seed(0)
    model = torch.nn.Linear(N, N)
    model(torch.randn(64, N)).sum().backward()
    params = float(N * N + N)
    t = time_per_call(lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9, 2.0, foreach=True))
    report("K", "clip_grad_norm_ (foreach)", "gbps", t, params * 4.0 * 3.0)
    report("K", "clip_grad_norm_ time (foreach)", "ms", t)
    w = model.weight.detach()
    t = time_per_call(lambda: w.mul(1.0))
    report("K", "  ref: x*1.0 (read+write)", "gbps", t, params * 4.0 * 2.0)


def lines_workload():
    """Workload L: issue 29's tensor API on a 16M-element f32 tensor, ms per call."""
    x = torch.randn(4096, 4096)
    mask = x > 0.5
    with torch.no_grad():
        for case, fn in [
            ("sum()", lambda: x.sum()),
            ("mean()", lambda: x.mean()),
            ("cumsum(1)", lambda: x.cumsum(1)),
            ("cumsum(0)", lambda: x.cumsum(0)),
            ("max(1)", lambda: x.max(1)),
            ("sort(1)", lambda: x.sort(dim=1, stable=True)),
            ("topk(16, 1)", lambda: x.topk(16, 1)),
            ("masked_fill(x > 0.5, 0)", lambda: x.masked_fill(mask, 0.0)),
            ("x[:, 1:3] contiguous", lambda: x[:, 1:3].contiguous()),
        ]:
            report("L", case, "ms", time_per_call(fn))


def main():
    torch.set_num_threads(THREADS)
    want = sys.argv[1:] or ["A", "B", "C", "E", "H", "S", "L", "K"]
    if "A" in want:
        gemm()
    if "B" in want:
        elementwise()
    if "C" in want:
        tiny()
    if "E" in want:
        dispatch()
    if "H" in want:
        half_speed()
    if "S" in want:
        optimizer_steps()
    if "L" in want:
        lines_workload()
    if "K" in want:
        clip_workload()


if __name__ == "__main__":
    main()
