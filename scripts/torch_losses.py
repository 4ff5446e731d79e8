"""Records PyTorch's values and gradients of the losses that `tests/losses.rs` checks:
`l1_loss`, `smooth_l1_loss` (beta), `huber_loss` (delta), `binary_cross_entropy_with_logits`
(weight, pos_weight) and `nll_loss` (weight, ignore_index), each reduction, in float64, on
inputs drawn from a fixed seed. Writes `tests/reference/losses_torch.rs`:

    /tmp/torchenv/.venv/bin/python scripts/torch_losses.py > tests/reference/losses_torch.rs
"""
import torch
import torch.nn.functional as F

torch.manual_seed(29)
dt = torch.float64


def arr(name, t):
    vals = ", ".join(repr(float(v)) for v in t.detach().flatten().tolist())
    print(f"pub const {name}: &[f64] = &[{vals}];")


x = torch.randn(4, 3, dtype=dt) * 3
t = torch.randn(4, 3, dtype=dt)
p = torch.rand(4, 3, dtype=dt)
w = torch.rand(3, dtype=dt) + 0.5
pw = torch.rand(3, dtype=dt) * 3
logp = torch.log_softmax(torch.randn(5, 4, dtype=dt), 1)
tgt = torch.tensor([1, -100, 3, 0, 3])
cw = torch.rand(4, dtype=dt) + 0.5
# The gradient of sum(v * loss) for the unreduced loss: every element weighs differently.
v = torch.randn(4, 3, dtype=dt)
v5 = torch.randn(5, dtype=dt)
print("// Recorded by scripts/torch_losses.py from PyTorch 2.15 (float64, seed 29).")
arr("X", x)
arr("T", t)
arr("P", p)
arr("W", w)
arr("PW", pw)
arr("LOGP", logp)
print(f"pub const TGT: &[i64] = &[{', '.join(str(int(i)) for i in tgt)}];")
arr("CW", cw)
arr("V", v)
arr("V5", v5)

cases = {
    "L1": lambda a, b, r: F.l1_loss(a, b, reduction=r),
    "SMOOTH": lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.7),
    "SMOOTH0": lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.0),
    "HUBER": lambda a, b, r: F.huber_loss(a, b, reduction=r, delta=1.3),
    "BCE": lambda a, b, r: F.binary_cross_entropy_with_logits(a, b, reduction=r),
    "BCEW": lambda a, b, r: F.binary_cross_entropy_with_logits(
        a, b, weight=w, pos_weight=pw, reduction=r
    ),
}
for name, f in cases.items():
    tgt_in = p if name.startswith("BCE") else t
    for red in ["none", "sum", "mean"]:
        a = x.clone().requires_grad_()
        b = tgt_in.clone().requires_grad_()
        out = f(a, b, red)
        (out * v).sum().backward() if red == "none" else out.backward()
        arr(f"{name}_{red.upper()}", out)
        arr(f"{name}_{red.upper()}_GX", a.grad)
        arr(f"{name}_{red.upper()}_GT", b.grad)
for name, weight in [("NLL", None), ("NLLW", cw)]:
    for red in ["none", "sum", "mean"]:
        a = logp.clone().requires_grad_()
        out = F.nll_loss(a, tgt, weight=weight, reduction=red)
        (out * v5).sum().backward() if red == "none" else out.backward()
        arr(f"{name}_{red.upper()}", out)
        arr(f"{name}_{red.upper()}_GX", a.grad)
