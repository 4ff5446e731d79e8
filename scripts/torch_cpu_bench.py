#!/usr/bin/env python3
"""PyTorch's side of devtype's CPU benchmarks (`cargo bench --bench cpu -- A B C E G H S`), with
the same shapes, data and timing method (warm-up, calibrated iterations, median of samples) and
the same JSON lines, so the two can be run one after the other and read side by side:

- A: sgemm, n = 256, 1024, 2048;
- B: `relu(x + y)` on 16M f32 (two ops, and each alone);
- C: `Linear(10, 2)` forward on a 4x10 batch (no_grad, and recording the graph);
- E: a 1-element add, and an add and a relu of 8x8 (64 elements: a result that is not inline);
- G: bfloat16 GEMMs, n = 256, 512, 1024, 2048 (oneDNN's AMX or AVX512-BF16 kernels where the
  CPU has them);
- H: element-wise ops, casts and GEMMs on float32, float16 and bfloat16, per element (or flop),
  on the same shapes (16M elements; 1024^3 and 2048^3 products);
- S: one optimizer step of a 2048x2048 Linear (4.2M f32 parameters), plain and under a
  GradScaler (unscale_, the step it may skip, update; scale 1 so repeated unscaling keeps the
  gradients), for SGD with momentum and for Adam, in PyTorch's default (foreach) and fused
  implementations;
- L: issue 29's tensor API on a 16M-element tensor;
- K: clip_grad_norm_ over a 2048x2048 Linear;
- V: conv2d (with a bias) forward (no_grad) and forward+backward (input, weight and bias
  requiring gradients, backward with a fixed output gradient, gradients set to None first) at
  LeNet's shapes (batch 64: 1x28x28 -> 6 k5 pad 2; 6x14x14 -> 16 k5) and a ResNet block's
  (batch 32, 64x56x56 -> 64 k3 pad 1), GFLOP/s (2*N*Cout*Hout*Wout*Cin*k*k forward, three
  times that forward+backward) and ms;
- T: training steps, ms per step: LeNet-5 (examples/cnn.rs) on a batch of 64, SGD; the decoder
  of examples/transformer.rs (2 layers, d_model 64, 4 heads, 16 tokens) on its batch of 64,
  Adam. The parameters and data are benches/cpu.rs's deterministic ones, so the losses printed
  on stderr match devtype's.

    python3 -m venv .venv && .venv/bin/pip install torch numpy
    BENCH_THREADS=2 .venv/bin/python scripts/torch_cpu_bench.py [A] [B] [C] [E] [G] [H] [S] [L] [K] [V] [T]

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
BF16_GEMM_SIZES = [256, 512, 1024, 2048]
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


def det_uniform(n, seed):
    """`benches/common/mod.rs`'s det_uniform: ((i + seed) * golden) >> 40, to [0, 1)."""
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed)
    return ((i * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)).astype(np.float32) / np.float32(16777216.0)


def det_sym(n, seed, scale):
    """`benches/common/mod.rs`'s deterministic data: ((i + seed) * golden) >> 40, to [-scale, scale)."""
    i = np.arange(n, dtype=np.uint64) + np.uint64(seed)
    u = ((i * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)).astype(np.float32) / np.float32(16777216.0)
    return (np.float32(2.0) * u - np.float32(1.0)) * np.float32(scale)


def gemm():
    for n in GEMM_SIZES:
        a, b = torch.randn(n, n), torch.randn(n, n)
        report("A", f"sgemm n={n}", "gflops", time_per_call(lambda: a @ b), 2.0 * n**3)


def bf16_gemm():
    for n in BF16_GEMM_SIZES:
        a, b = torch.randn(n, n).to(torch.bfloat16), torch.randn(n, n).to(torch.bfloat16)
        report("G", f"bf16 gemm n={n}", "gflops", time_per_call(lambda: a @ b), 2.0 * n**3)


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
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    report("E", "x.add(&y), 8x8 f32", "ns", time_fixed(lambda: x.add(y), warmup=1000))
    report("E", "x.relu(), 8x8 f32", "ns", time_fixed(lambda: x.relu(), warmup=1000))
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


CONVS = [
    ("lenet conv1 64x1x28x28 -> 6 k5 p2", 64, 1, 28, 6, 5, 2),
    ("lenet conv2 64x6x14x14 -> 16 k5", 64, 6, 14, 16, 5, 0),
    ("resnet 32x64x56x56 -> 64 k3 p1", 32, 64, 56, 64, 3, 1),
]


def t(values, *shape):
    return torch.from_numpy(np.ascontiguousarray(values).reshape(shape))


def conv_workload():
    """Workload V: conv2d at LeNet's and a ResNet block's shapes (benches/cpu.rs's conv_workload)."""
    import torch.nn.functional as F
    for name, n, cin, side, cout, k, p in CONVS:
        out = side + 2 * p - k + 1
        flops = 2.0 * n * cout * out * out * cin * k * k
        scale = 1.0 / np.sqrt(cin * k * k)
        x = t(det_sym(n * cin * side * side, 1, 1.0), n, cin, side, side)
        w = t(det_sym(cout * cin * k * k, 2, scale), cout, cin, k, k)
        b = t(det_sym(cout, 3, scale), cout)
        g = t(det_sym(n * cout * out * out, 4, 1.0), n, cout, out, out)
        with torch.no_grad():
            secs = time_per_call(lambda: F.conv2d(x, w, b, 1, p))
        report("V", f"{name} fwd", "gflops", secs, flops)
        report("V", f"{name} fwd time", "ms", secs)
        x, w, b = (v.clone().requires_grad_() for v in (x, w, b))

        def step():
            x.grad = w.grad = b.grad = None
            F.conv2d(x, w, b, 1, p).backward(g)

        secs = time_per_call(step)
        report("V", f"{name} fwd+bwd", "gflops", secs, 3.0 * flops)
        report("V", f"{name} fwd+bwd time", "ms", secs)


def det_parameters(model):
    """benches/cpu.rs's det_parameters: parameter i (named_parameters order) of shape [a, b..] is
    det_sym(numel, 100 + i, 1/sqrt(b..)); a vector det_sym(numel, 100 + i, 0.1), plus 1 for a
    norm's weight."""
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            numel = p.numel()
            if p.dim() >= 2:
                v = det_sym(numel, 100 + i, 1.0 / np.sqrt(numel // p.shape[0]))
            elif name.endswith("weight"):
                v = det_sym(numel, 100 + i, 0.1) + np.float32(1.0)
            else:
                v = det_sym(numel, 100 + i, 0.1)
            p.copy_(t(v, *p.shape))


class LeNet(torch.nn.Module):
    """examples/cnn.rs's LeNet-5."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.act = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(self.act(self.conv1(x)))
        x = self.pool(self.act(self.conv2(x)))
        x = self.act(self.fc1(self.flatten(x)))
        x = self.act(self.fc2(x))
        return self.fc3(x)


T_VOCAB, T_LEN, T_D, T_HEADS, T_LAYERS, T_BATCH = 11, 8, 64, 4, 2, 64


class Block(torch.nn.Module):
    """examples/transformer.rs's pre-norm decoder block."""

    def __init__(self, d):
        super().__init__()
        nn = torch.nn
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, T_HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False, is_causal=True)[0]
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class Decoder(torch.nn.Module):
    """examples/transformer.rs's decoder."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.tok = nn.Embedding(T_VOCAB, T_D)
        self.pos = nn.Embedding(2 * T_LEN, T_D)
        self.blocks = nn.ModuleList([Block(T_D) for _ in range(T_LAYERS)])
        self.ln_f = nn.LayerNorm(T_D)
        self.head = nn.Linear(T_D, T_VOCAB)

    def answer_logits(self, ids):
        n = ids.shape[1]
        mask = torch.nn.Transformer.generate_square_subsequent_mask(n)
        x = self.tok(ids) + self.pos(torch.arange(n))
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))[:, T_LEN:].reshape(-1, T_VOCAB)


def train_steps():
    """Workload T: LeNet and the transformer's training steps (benches/cpu.rs's train_steps)."""
    F = torch.nn.functional
    x = t(det_uniform(64 * 28 * 28, 1), 64, 1, 28, 28)
    y = torch.tensor([(7 * k + 3) % 10 for k in range(64)])
    lenet = LeNet()
    det_parameters(lenet)
    sgd = torch.optim.SGD(lenet.parameters(), lr=0.05)

    def lenet_step():
        sgd.zero_grad()
        loss = F.cross_entropy(lenet(x), y)
        loss.backward()
        sgd.step()
        return loss

    with torch.no_grad():
        loss0 = F.cross_entropy(lenet(x), y).item()
    for _ in range(20):
        lenet_step()
    with torch.no_grad():
        loss20 = F.cross_entropy(lenet(x), y).item()
    print(f"T lenet: loss before training {loss0:.6f}, after 20 steps {loss20:.6f}", file=sys.stderr)
    report("T", "lenet train step (b=64, SGD)", "ms", time_per_call(lenet_step))

    digits = np.minimum((det_uniform(T_BATCH * T_LEN, 2) * np.float32(10.0)).astype(np.int64), 9)
    inputs, targets = [], []
    for a in digits.reshape(T_BATCH, T_LEN).tolist():
        rev = a[::-1]
        inputs.append(a + [T_VOCAB - 1] + rev[:-1])
        targets.extend(rev)
    ids, targets = torch.tensor(inputs), torch.tensor(targets)
    model = Decoder()
    det_parameters(model)
    adam = torch.optim.Adam(model.parameters(), lr=2e-3)

    def step():
        adam.zero_grad()
        loss = F.cross_entropy(model.answer_logits(ids), targets)
        loss.backward()
        adam.step()
        return loss

    with torch.no_grad():
        loss0 = F.cross_entropy(model.answer_logits(ids), targets).item()
    for _ in range(20):
        step()
    with torch.no_grad():
        loss20 = F.cross_entropy(model.answer_logits(ids), targets).item()
    print(f"T transformer: loss before training {loss0:.6f}, after 20 steps {loss20:.6f}", file=sys.stderr)
    report("T", "transformer train step (2x64, 4 heads, 16 tokens, b=64, Adam)", "ms", time_per_call(step))


def main():
    torch.set_num_threads(THREADS)
    want = sys.argv[1:] or ["A", "B", "C", "E", "G", "H", "S", "L", "K", "V", "T"]
    if "A" in want:
        gemm()
    if "B" in want:
        elementwise()
    if "C" in want:
        tiny()
    if "E" in want:
        dispatch()
    if "G" in want:
        bf16_gemm()
    if "H" in want:
        half_speed()
    if "S" in want:
        optimizer_steps()
    if "L" in want:
        lines_workload()
    if "K" in want:
        clip_workload()
    if "V" in want:
        conv_workload()
    if "T" in want:
        train_steps()


if __name__ == "__main__":
    main()
