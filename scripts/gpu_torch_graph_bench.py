#!/usr/bin/env python3
"""PyTorch's CUDA graph of the small MNIST-shaped training step, beside devtype's (issue 32).

    python3 scripts/gpu_torch_graph_bench.py --devtype gpu-bin/results/devtype.json [--table t.txt]

The step (as in benches/gpu.rs, graph_step_us): batch 64, 784-128-10 MLP with ReLU,
cross-entropy, SGD (lr 0.01), zero_grad(set_to_none=False) so that the gradients are static
buffers. Timed three ways, each over many steps ending in one torch.cuda.synchronize():
eager, replayed from a torch.cuda.CUDAGraph (captured after PyTorch's recommended warm-up on a
side stream), and the host time of one graph.replay() call. Prints a table with devtype's
numbers from the JSON and the issue's goals (replay >= 1.8x eager, <= 2 us host per replay,
faster than PyTorch's graphed step).
"""
import argparse
import json
import statistics
import sys
import time

B, I, H, O = 64, 784, 128, 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devtype", help="devtype's benchmark JSON (benches/gpu.rs --json)")
    ap.add_argument("--table", help="also write the table here")
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no GPU: skipped")
        return 0
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(I, H), torch.nn.ReLU(), torch.nn.Linear(H, O)
    ).to(dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(B, I, device=dev)
    y = torch.tensor([(7 * k + 3) % O for k in range(B)], device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        opt.step()

    def per_step_us(fn, steps):
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e6 / steps

    eager_us = per_step_us(step, args.steps)

    # PyTorch's recipe: warm up on a side stream, then capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    replay_us = per_step_us(graph.replay, args.steps)
    host = []
    for _ in range(10):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(20):
            graph.replay()
        host.append((time.perf_counter() - start) * 1e6 / 20)
    torch.cuda.synchronize()
    host_us = statistics.median(host)

    ours = {}
    if args.devtype:
        try:
            with open(args.devtype) as f:
                ours = json.load(f)
        except (OSError, ValueError) as e:
            print(f"devtype's numbers unreadable: {e}", file=sys.stderr)

    def num(key):
        v = ours.get(key)
        return v if isinstance(v, (int, float)) else float("nan")

    d_eager, d_replay, d_host = (
        num("graph_eager_step_us"),
        num("graph_replay_step_us"),
        num("graph_replay_host_us"),
    )
    lines = [
        "CUDA graph of the 64x784 MLP step (us per step)   devtype    PyTorch",
        f"  eager step                                  {d_eager:9.1f} {eager_us:10.1f}",
        f"  replayed step                               {d_replay:9.1f} {replay_us:10.1f}",
        f"  replay speed-up over eager (goal >= 1.8x)   {d_eager / d_replay:9.2f} {eager_us / replay_us:10.2f}",
        f"  host time per replay() (goal <= 2 us)       {d_host:9.2f} {host_us:10.2f}",
        f"  devtype's replay vs PyTorch's (goal > 1x)   {replay_us / d_replay:9.2f}",
    ]
    text = "\n".join(lines)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
