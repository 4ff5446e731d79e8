"""Records PyTorch's values and gradients of the normalisations that `tests/norm_batch.rs`
checks: `nn.BatchNorm1d` on (N, C) and (N, C, L), `nn.BatchNorm2d` (momentum 0.1, 0.3 and
None, without affine, without running statistics) and `nn.GroupNorm` (affine or not), in
float64, on inputs drawn from a fixed seed. Each case runs three training steps (each its own
batch; the gradients are those of `sum(v * y)` for a drawn `v`, with the weight and bias drawn
too), then records the running statistics and the evaluation-mode output of a fourth batch.
Writes `tests/reference/batchnorm_torch.rs`, with `STATE_DICT`, the bytes of a safetensors file
of the `state_dict` of the `BatchNorm2d` case after its steps in float32 (as
`safetensors.torch.save_file` writes it: `num_batches_tracked` a 0-dim int64; written here by
hand, as the venv has no `safetensors`), and `BAD_STATE_DICT`, the same with a `running_var` of
one value too many:

    /work/tvenv/bin/python scripts/torch_batchnorm.py > tests/reference/batchnorm_torch.rs
"""
import json
import struct
import torch
import torch.nn as nn

torch.manual_seed(30)
dt = torch.float64


def arr(t):
    return "&[" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "]"


def opt_arr(t):
    return "None" if t is None else "Some(" + arr(t) + ")"


def shape(s):
    return "&[" + ", ".join(str(d) for d in s) + "]"


def safetensors_bytes(tensors):
    """The safetensors layout: an 8-byte header length, the JSON header, the data."""
    header, data = {}, b""
    for name, t in sorted(tensors.items()):
        t = t.detach().contiguous()
        if t.dtype == torch.int64:
            raw, dtype = struct.pack("<%dq" % t.numel(), *t.flatten().tolist()), "I64"
        else:
            raw, dtype = struct.pack("<%df" % t.numel(), *t.float().flatten().tolist()), "F32"
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


cases = [
    # name, kind, x shape, num_features or (groups, channels), momentum, affine, track
    ("BatchNorm1d (N, C)", "1d", (6, 3), 3, 0.1, True, True),
    ("BatchNorm1d (N, C, L)", "1d", (4, 3, 5), 3, 0.1, True, True),
    ("BatchNorm2d", "2d", (2, 3, 4, 5), 3, 0.1, True, True),
    ("BatchNorm2d momentum 0.3", "2d", (3, 2, 3, 2), 2, 0.3, True, True),
    ("BatchNorm2d momentum None", "2d", (3, 2, 3, 3), 2, None, True, True),
    ("BatchNorm2d without affine", "2d", (2, 4, 3, 3), 4, 0.1, False, True),
    ("BatchNorm1d without running stats", "1d", (5, 4), 4, 0.1, True, False),
    ("BatchNorm2d without running stats or affine", "2d", (2, 3, 2, 3), 3, 0.1, False, False),
    ("GroupNorm 2 groups of 6 channels", "group", (3, 6, 4), (2, 6), None, True, False),
    ("GroupNorm 3 groups, no affine", "group", (2, 6, 2, 3), (3, 6), None, False, False),
    ("GroupNorm 1 group, (N, C)", "group", (5, 4), (1, 4), None, True, False),
]

print("// Recorded by scripts/torch_batchnorm.py from PyTorch " + torch.__version__.split("+")[0]
      + " (float64, seed 30).")
print("use super::NormCase;")
print()
print("pub const CASES: &[NormCase] = &[")
state = None
for name, kind, xs, feat, momentum, affine, track in cases:
    if kind == "1d":
        m = nn.BatchNorm1d(feat, momentum=momentum, affine=affine, track_running_stats=track)
    elif kind == "2d":
        m = nn.BatchNorm2d(feat, momentum=momentum, affine=affine, track_running_stats=track)
    else:
        m = nn.GroupNorm(feat[0], feat[1], affine=affine)
    m = m.to(dt)
    c = xs[1]
    if affine:
        with torch.no_grad():
            m.weight.copy_(torch.randn(c, dtype=dt))
            m.bias.copy_(torch.randn(c, dtype=dt))
    w0 = m.weight.detach().clone() if affine else None
    b0 = m.bias.detach().clone() if affine else None
    m.train()
    steps = []
    for _ in range(3):
        x = (torch.randn(*xs, dtype=dt) * 2 + 0.5).requires_grad_(True)
        m.zero_grad()
        y = m(x)
        v = torch.randn(*y.shape, dtype=dt)
        (y * v).sum().backward()
        steps.append((x, v, y, x.grad, m.weight.grad if affine else None,
                      m.bias.grad if affine else None))
    m.eval()
    xe = torch.randn(*xs, dtype=dt) * 2 + 0.5
    ye = m(xe)
    if name == "BatchNorm2d":
        state = {k: (v if v.dtype == torch.int64 else v.float()) for k, v in m.state_dict().items()}
    print("    NormCase {")
    print(f"        name: {json.dumps(name)},")
    print(f"        kind: {json.dumps(kind)},")
    print(f"        x_shape: {shape(xs)},")
    if kind == "group":
        print(f"        num_features: {feat[1]},\n        groups: {feat[0]},")
    else:
        print(f"        num_features: {feat},\n        groups: 0,")
    print(f"        momentum: {'None' if momentum is None else 'Some(' + repr(momentum) + ')'},")
    print(f"        affine: {'true' if affine else 'false'},\n        track: {'true' if track else 'false'},")
    print(f"        weight: {opt_arr(w0)},\n        bias: {opt_arr(b0)},")
    for field, i in [("xs", 0), ("vs", 1), ("ys", 2), ("gxs", 3)]:
        print(f"        {field}: &[" + ", ".join(arr(s[i]) for s in steps) + "],")
    for field, i in [("gws", 4), ("gbs", 5)]:
        if affine:
            print(f"        {field}: Some(&[" + ", ".join(arr(s[i]) for s in steps) + "]),")
        else:
            print(f"        {field}: None,")
    if track:
        print(f"        running_mean: Some({arr(m.running_mean)}),")
        print(f"        running_var: Some({arr(m.running_var)}),")
        print(f"        num_batches_tracked: Some({int(m.num_batches_tracked)}),")
    else:
        print("        running_mean: None,\n        running_var: None,\n        num_batches_tracked: None,")
    print(f"        eval_x: {arr(xe)},\n        eval_y: {arr(ye)},")
    print("    },")
print("];")

print()
print("/// `safetensors` bytes of the `BatchNorm2d` case's `state_dict` after its steps, in float32.")
print("pub const STATE_DICT: &[u8] = &[" + ", ".join(str(b) for b in safetensors_bytes(state)) + "];")
bad = dict(state)
bad["running_var"] = torch.cat([state["running_var"], torch.ones(1)])
print()
print("/// The same with a `running_var` of 4 values (the layer has 3 channels).")
print("pub const BAD_STATE_DICT: &[u8] = &[" + ", ".join(str(b) for b in safetensors_bytes(bad)) + "];")
