"""Reference values for tests/nn_layers.rs, from PyTorch in float64.

Run: /tmp/torchenv/.venv/bin/python scripts/layers_reference.py
Inputs are formulas the Rust test repeats: x[i] = 1.5 sin(0.7 i + 0.3) (flattened, then
reshaped), and each loss is sum(out * g) with g[i] = cos(0.3 i + 0.2); the script prints each
output and the gradients of the inputs, to paste into the test.
"""
import math
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def seq(n, a=0.7, b=0.3, scale=1.5):
    return torch.tensor([scale * math.sin(a * i + b) for i in range(n)])


def g(n):
    return torch.tensor([math.cos(0.3 * i + 0.2) for i in range(n)])


def show(name, t):
    vals = ", ".join(f"{v!r}" for v in t.detach().reshape(-1).tolist())
    print(f"// {name}\npub const {name.upper()}: [f64; {t.numel()}] = [{vals}];")


def run(name, shape, f, extra=()):
    x = seq(math.prod(shape)).reshape(shape).requires_grad_()
    out = f(x, *extra)
    (out * g(out.numel()).reshape(out.shape)).sum().backward()
    show(name + "_out", out)
    show(name + "_grad", x.grad)
    for i, e in enumerate(extra):
        if isinstance(e, torch.Tensor) and e.grad is not None:
            show(f"{name}_grad{i + 1}", e.grad)


s = (2, 3, 4)
run("gelu", s, lambda x: F.gelu(x))
run("gelu_tanh", s, lambda x: F.gelu(x, approximate="tanh"))
run("silu", s, F.silu)
run("leaky", s, lambda x: F.leaky_relu(x, 0.1))
run("softmax", s, lambda x: torch.softmax(x, 1))
w = seq(4, 0.5, 0.1, 1.0).add(1.0).requires_grad_()
b = seq(4, 0.9, 0.4, 0.5).requires_grad_()
run("layer_norm", s, lambda x, w, b: F.layer_norm(x, [4], w, b, 1e-5), (w, b))
w2 = seq(12, 0.5, 0.1, 1.0).add(1.0).reshape(3, 4).requires_grad_()
run("layer_norm2", s, lambda x, w: F.layer_norm(x, [3, 4], w, None, 1e-5), (w2,))
w3 = seq(4, 0.5, 0.1, 1.0).add(1.0).requires_grad_()
run("rms_norm", s, lambda x, w: F.rms_norm(x, [4], w, None), (w3,))

# Embedding: the table is the input; ids [2, 3] with the padding row 2 used twice.
ids = torch.tensor([[0, 2, 4], [2, 1, 0]])
run("embedding", (5, 4), lambda t: F.embedding(ids, t, padding_idx=2))

# Attention: q, k, v [2, 2, 3, 4] from the formula with three phases.
def sdpa_case(name, **kw):
    n = 2 * 2 * 3 * 4
    q = seq(n, 0.7, 0.3).reshape(2, 2, 3, 4).requires_grad_()
    k = seq(n, 0.4, 1.1).reshape(2, 2, 3, 4).requires_grad_()
    v = seq(n, 0.9, 2.0).reshape(2, 2, 3, 4).requires_grad_()
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    (out * g(out.numel()).reshape(out.shape)).sum().backward()
    show(name + "_out", out)
    show(name + "_gq", q.grad)
    show(name + "_gk", k.grad)
    show(name + "_gv", v.grad)


sdpa_case("sdpa_causal", is_causal=True)
sdpa_case("sdpa_bool", attn_mask=torch.tensor([[True, False, True], [True, True, False], [False, True, True]]))
sdpa_case("sdpa_float", attn_mask=seq(9, 0.6, 0.5, 0.8).reshape(3, 3))

# MultiheadAttention, E = 4, 2 heads, batch_first, self-attention on x [2, 3, 4], causal.
mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)
with torch.no_grad():
    mha.in_proj_weight.copy_(seq(48, 0.35, 0.2, 0.6).reshape(12, 4))
    mha.in_proj_bias.copy_(seq(12, 0.8, 0.9, 0.1))
    mha.out_proj.weight.copy_(seq(16, 0.45, 1.3, 0.5).reshape(4, 4))
    mha.out_proj.bias.copy_(seq(4, 1.1, 0.6, 0.2))
x = seq(24).reshape(2, 3, 4).requires_grad_()
mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)
out, weights = mha(x, x, x, attn_mask=mask)
(out * g(out.numel()).reshape(out.shape)).sum().backward()
show("mha_out", out)
show("mha_weights", weights)
show("mha_grad", x.grad)
show("mha_gw", mha.in_proj_weight.grad)
show("mha_gout", mha.out_proj.weight.grad)
