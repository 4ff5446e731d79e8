"""Records `torch.optim.RMSprop` (single-tensor form, float32) on a fixed small problem for
`tests/rmsprop.rs`: two parameters, six steps with gradients drawn from seed 29, four
settings. Writes `tests/reference/rmsprop_torch.rs`:

    /tmp/torchenv/.venv/bin/python scripts/torch_rmsprop.py > tests/reference/rmsprop_torch.rs
"""
import torch

torch.manual_seed(29)
STEPS = 6
p0 = torch.randn(3, 4)
p1 = torch.randn(5)
grads = [(torch.randn(3, 4), torch.randn(5)) for _ in range(STEPS)]


def arr(name, t):
    vals = ", ".join(repr(float(v)) for v in t.detach().flatten().tolist())
    print(f"pub const {name}: &[f32] = &[{vals}];")


print("// Recorded by scripts/torch_rmsprop.py from PyTorch 2.15 (float32, seed 29).")
arr("P0", p0)
arr("P1", p1)
for i, (g0, g1) in enumerate(grads):
    arr(f"G0_{i}", g0)
    arr(f"G1_{i}", g1)
configs = {
    "DEFAULT": dict(lr=0.01),
    "ALL": dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.8, centered=True),
    "MOMENTUM": dict(lr=0.02, momentum=0.5),
    "CENTERED": dict(lr=0.005, alpha=0.3, centered=True),
}
for name, kw in configs.items():
    a = p0.clone().requires_grad_()
    b = p1.clone().requires_grad_()
    opt = torch.optim.RMSprop([a, b], foreach=False, **kw)
    for g0, g1 in grads:
        a.grad = g0.clone()
        b.grad = g1.clone()
        opt.step()
    arr(f"{name}_P0", a)
    arr(f"{name}_P1", b)
    st = opt.state[a]
    arr(f"{name}_SQ0", st["square_avg"])
    if "momentum_buffer" in st:
        arr(f"{name}_MB0", st["momentum_buffer"])
    if "grad_avg" in st:
        arr(f"{name}_GA0", st["grad_avg"])
