#!/usr/bin/env python3
"""PyTorch on the workloads of benches/gpu.rs, and the ratios to devtype.

    python3 scripts/gpu_torch_bench.py --devtype gpu-bin/results/devtype.json [--table table.txt]

Workloads (same shapes and timing method as the Rust side):
  relu(x + y) on 256M f32 (two eager ops), timed with CUDA events;
  a device-to-device copy of the same 1 GiB;
  matmul 8192^3 f32 (TF32 off, PyTorch's default), CUDA events;
  1000 tiny element-wise ops on 64 elements, host time including the final synchronize;
  a host-to-device copy of 256 MiB from pageable memory (and pinned, for reference);
  mixed precision (issue 13): matmul 8192^3 bf16, relu(x + y) on 256M bf16, and workload D's
  step with the forward pass in torch.autocast("cuda", dtype=torch.bfloat16).
Prints a short table with the targets of issue 3, section 8, and issue 13, section 4.
With --devtype-texts (benches/gpu.rs --texts), also PyTorch's device-mismatch texts for the same
ten mistakes between cuda:0 and the CPU, each beside devtype's.
"""
import argparse
import json
import statistics
import sys
import time

ELEMS = 256 << 20
MM = 8192
CHAIN = 1000
TINY = 64
H2D_BYTES = 256 << 20


def gpu_ms(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def measure(torch, reps):
    r = {}
    dev = torch.device("cuda:0")
    x = torch.randn(ELEMS, device=dev)
    y = torch.randn(ELEMS, device=dev)
    ms = gpu_ms(torch, lambda: torch.relu(x + y), reps)
    r["relu_add_ms"] = ms
    r["relu_add_gbs"] = 3 * ELEMS * 4 / (ms * 1e-3) / 1e9
    dst = torch.empty_like(x)
    ms = gpu_ms(torch, lambda: dst.copy_(x), reps)
    r["copy_gbs"] = 2 * ELEMS * 4 / (ms * 1e-3) / 1e9
    del x, y, dst

    # Plain fp32 sgemm, as devtype's cuBLAS call: the `fp32_precision` switch where this
    # PyTorch has it (2.9+, which deprecates `allow_tf32`), the legacy one otherwise.
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
    a = torch.randn(MM, MM, device=dev)
    b = torch.randn(MM, MM, device=dev)
    ms = gpu_ms(torch, lambda: torch.mm(a, b), min(reps, 5))
    r["matmul_ms"] = ms
    r["matmul_tflops"] = 2 * MM**3 / (ms * 1e-3) / 1e12
    a, b = a.bfloat16(), b.bfloat16()
    ms = gpu_ms(torch, lambda: torch.mm(a, b), min(reps, 5))
    r["matmul_bf16_tflops"] = 2 * MM**3 / (ms * 1e-3) / 1e12
    del a, b

    x = torch.randn(ELEMS, device=dev, dtype=torch.bfloat16)
    y = torch.randn(ELEMS, device=dev, dtype=torch.bfloat16)
    ms = gpu_ms(torch, lambda: torch.relu(x + y), reps)
    r["relu_add_bf16_ms"] = ms
    r["relu_add_bf16_gbs"] = 3 * ELEMS * 2 / (ms * 1e-3) / 1e9
    del x, y

    t = torch.ones(TINY, device=dev)

    def chain():
        v = t
        for i in range(CHAIN):
            v = v * 1.0001 if i % 2 == 0 else v + 0.5
        return v

    chain()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        chain()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1e6 / CHAIN)
    r["chain_us_per_op"] = statistics.median(samples)

    for pinned in (False, True):
        host = torch.ones(H2D_BYTES // 4, pin_memory=pinned)
        host.cuda()
        torch.cuda.synchronize()
        samples = []
        for _ in range(reps):
            start = time.perf_counter()
            host.to(dev)
            torch.cuda.synchronize()
            samples.append(H2D_BYTES / (time.perf_counter() - start) / 1e9)
        r["h2d_pinned_gbs" if pinned else "h2d_gbs"] = statistics.median(samples)
    # Workload D: one training step of a 784-512-10 MLP, batch 256, weighted CE, SGD.
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    x = torch.randn(256, 784, device=dev)
    y = torch.tensor([(7 * k + 3) % 10 for k in range(256)], device=dev)
    crit = nn.CrossEntropyLoss(weight=torch.tensor([0.5 + 0.1 * c for c in range(10)], device=dev))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()

    r["train_step_ms"] = gpu_ms(torch, step, max(reps, 20))

    def amp_step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        crit(logits.float(), y).backward()
        opt.step()

    r["train_step_amp_ms"] = gpu_ms(torch, amp_step, max(reps, 20))
    return r


def torch_mismatch_texts(torch):
    """PyTorch's texts for the mistakes of benches/gpu.rs's write_mismatch_texts (same names)."""
    import torch.nn.functional as F

    dev = torch.device("cuda:0")
    g = torch.ones(2, 3, device=dev)
    c = torch.ones(2, 3)
    cond = g > c.to(dev)
    w = torch.ones(4, 3, device=dev)
    b = torch.ones(4, device=dev)
    idx = torch.tensor([0, 1])
    targets = torch.tensor([0, 2], device=dev)
    weight = torch.ones(3)
    cases = {
        "add cuda+cpu": lambda: g + c,
        "add cpu+cuda": lambda: c + g,
        "mul cpu*cuda": lambda: c * g,
        "lt cuda<cpu": lambda: g < c,
        "where(cuda, cuda, cpu)": lambda: torch.where(cond, g, c),
        "where(cpu, cuda, cuda)": lambda: torch.where(cond.cpu(), g, g),
        "linear(cpu, cuda w, cuda b)": lambda: F.linear(c, w, b),
        "mm cuda @ cpu": lambda: g.matmul(c.t()),
        "index_select(cuda, cpu idx)": lambda: g.index_select(0, idx),
        "cross_entropy(cuda, weight cpu)": lambda: F.cross_entropy(g, targets, weight=weight),
    }
    out = {}
    for name, fn in cases.items():
        try:
            fn()
            torch.cuda.synchronize()
            out[name] = "(no error)"
        except Exception as e:  # noqa: BLE001 - the text is what is compared
            out[name] = str(e).splitlines()[0] if str(e) else type(e).__name__
    return out


def text_lines(torch, path):
    devtype = {}
    try:
        with open(path) as f:
            for line in f:
                case, _, text = line.rstrip("\n").partition("\t")
                devtype[case] = text
    except OSError as e:
        return [f"devtype's mismatch texts unavailable ({e})"]
    theirs = torch_mismatch_texts(torch)
    same = sum(devtype.get(k) == v for k, v in theirs.items())
    lines = [
        "",
        f"Device-mismatch texts, cuda:0 and cpu: {same} of {len(theirs)} identical to torch {torch.__version__}'s",
    ]
    for case, text in theirs.items():
        mine = devtype.get(case, "(not written)")
        if mine == text:
            lines.append(f"  same       {case:<32} {text}")
        else:
            lines.append(f"  DIFFERENT  {case:<32} devtype: {mine}")
            lines.append(f"             {'':<32} PyTorch: {text}")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--devtype", help="devtype's numbers (benches/gpu.rs --json)")
    parser.add_argument("--table", help="also write the table to this file")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--devtype-texts", help="devtype's mismatch texts (benches/gpu.rs --texts)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipped")
        return 0
    if not torch.cuda.is_available():
        print("no GPU for PyTorch: skipped")
        return 0
    t = measure(torch, args.reps)
    d = {}
    if args.devtype:
        try:
            with open(args.devtype) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            print(f"devtype numbers unavailable ({e})")
    nan = float("nan")

    def dv(k):
        # A number, or NaN for a workload devtype did not finish (absent, or null in the JSON).
        v = d.get(k)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else nan

    def ratio(a, b):
        return a / b if b and b == b and a == a else nan

    name = torch.cuda.get_device_name(0)
    lines = [
        f"GPU benchmarks on {name}, torch {torch.__version__} (median of {args.reps})",
        f"{'workload':<34}{'devtype':>14}{'PyTorch':>14}{'ratio':>9}  target",
        f"{'relu(x+y) 256M f32, two ops, ms':<34}{dv('relu_add_ms'):>14.3f}{t['relu_add_ms']:>14.3f}"
        f"{ratio(t['relu_add_ms'], dv('relu_add_ms')):>8.2f}x  (speed-up; both eager, two ops)",
        f"{'  fused x.add_relu(y), ms':<34}{dv('add_relu_ms'):>14.3f}{t['relu_add_ms']:>14.3f}"
        f"{ratio(t['relu_add_ms'], dv('add_relu_ms')):>8.2f}x  >= 1.3x PyTorch eager (speed-up)",
        f"{'  effective GB/s vs D2D copy':<34}{dv('relu_add_gbs'):>14.1f}{t['relu_add_gbs']:>14.1f}"
        f"{ratio(dv('relu_add_gbs'), dv('copy_gbs')):>8.0%}   >= 90% of copy ({dv('copy_gbs'):.0f} GB/s; "
        f"fused: {ratio(dv('add_relu_gbs'), dv('copy_gbs')):.0%})",
        f"{'matmul 8192^3 f32, TFLOP/s':<34}{dv('matmul_tflops'):>14.2f}{t['matmul_tflops']:>14.2f}"
        f"{ratio(dv('matmul_tflops'), t['matmul_tflops']):>8.0%}   >= 95% of torch.mm",
        f"{'  vs cuBLAS called directly':<34}{dv('matmul_tflops'):>14.2f}{dv('cublas_tflops'):>14.2f}"
        f"{ratio(dv('matmul_tflops'), dv('cublas_tflops')):>8.0%}   >= 95% of cuBLAS",
        f"{'1000 tiny ops, us/op':<34}{dv('chain_us_per_op'):>14.2f}{t['chain_us_per_op']:>14.2f}"
        f"{ratio(dv('chain_us_per_op'), t['chain_us_per_op']):>8.2f}x  < 0.5x PyTorch",
        f"{'host->device 256 MiB, GB/s':<34}{dv('h2d_gbs'):>14.1f}{t['h2d_gbs']:>14.1f}"
        f"{ratio(dv('h2d_gbs'), t['h2d_gbs']):>8.0%}   (PyTorch pinned: {t['h2d_pinned_gbs']:.1f} GB/s)",
        f"{'  pinned + to_async, GB/s':<34}{dv('h2d_pinned_gbs'):>14.1f}{t['h2d_pinned_gbs']:>14.1f}"
        f"{ratio(dv('h2d_pinned_gbs'), t['h2d_pinned_gbs']):>8.0%}   >= 80% of PyTorch pinned, "
        f">= 2x pageable ({ratio(dv('h2d_pinned_gbs'), dv('h2d_gbs')):.1f}x)",
        f"{'MLP train step (workload D), ms':<34}{dv('train_step_ms'):>14.3f}{t['train_step_ms']:>14.3f}"
        f"{ratio(t['train_step_ms'], dv('train_step_ms')):>8.2f}x  (speed-up over PyTorch)",
        f"{'matmul 8192^3 bf16, TFLOP/s':<34}{dv('matmul_bf16_tflops'):>14.2f}{t['matmul_bf16_tflops']:>14.2f}"
        f"{ratio(dv('matmul_bf16_tflops'), t['matmul_bf16_tflops']):>8.0%}   >= 100% of torch.mm bf16",
        f"{'  vs cuBLAS GemmEx called directly':<34}{dv('matmul_bf16_tflops'):>14.2f}{dv('cublas_bf16_tflops'):>14.2f}"
        f"{ratio(dv('matmul_bf16_tflops'), dv('cublas_bf16_tflops')):>8.0%}   >= 95% of cuBLAS",
        f"{'relu(x+y) 256M bf16, GB/s':<34}{dv('relu_add_bf16_gbs'):>14.1f}{t['relu_add_bf16_gbs']:>14.1f}"
        f"{ratio(dv('relu_add_bf16_gbs'), dv('copy_gbs')):>8.0%}   >= 90% of copy (fused add_relu: "
        f"{ratio(dv('add_relu_bf16_gbs'), dv('copy_gbs')):.0%})",
        f"{'AMP bf16 train step (D), ms':<34}{dv('train_step_amp_ms'):>14.3f}{t['train_step_amp_ms']:>14.3f}"
        f"{ratio(t['train_step_amp_ms'], dv('train_step_amp_ms')):>8.2f}x  (speed-up over PyTorch AMP)",
    ]
    if args.devtype_texts:
        lines += text_lines(torch, args.devtype_texts)
    table = "\n".join(lines)
    print(table)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
