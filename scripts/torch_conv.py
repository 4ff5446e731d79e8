"""Records PyTorch's values and gradients of the convolutions and pools that `tests/conv.rs`
checks: `conv2d` (stride 2, padding, dilation 2, groups 2, no bias, unbatched), `conv1d`,
`max_pool2d`, `avg_pool2d` and `adaptive_avg_pool2d` with several option sets, in float64, on
inputs drawn from a fixed seed. Each gradient is that of `sum(v * y)` for a drawn `v`. Writes
`tests/reference/conv_torch.rs`:

    /work/tvenv/bin/python scripts/torch_conv.py > tests/reference/conv_torch.rs
"""
import torch
import torch.nn.functional as F

torch.manual_seed(30)
dt = torch.float64


def arr(t):
    return "&[" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "]"


def shape(t):
    return "&[" + ", ".join(str(d) for d in t.shape) + "]"


def pair(p):
    return f"({p[0]}, {p[1]})"


print("// Recorded by scripts/torch_conv.py from PyTorch " + torch.__version__.split("+")[0]
      + " (float64, seed 30).")
print("use super::{ConvCase, PoolCase};")
print()
print("pub const CONV: &[ConvCase] = &[")
conv_cases = [
    # name, x shape, w shape, bias, stride, padding, dilation, groups, 1-D
    ("plain", (2, 3, 5, 6), (4, 3, 3, 3), True, (1, 1), (0, 0), (1, 1), 1, False),
    ("stride 2, padding 1", (2, 3, 7, 6), (5, 3, 3, 2), True, (2, 2), (1, 1), (1, 1), 1, False),
    ("asymmetric stride and padding", (1, 2, 6, 7), (3, 2, 2, 3), True, (1, 2), (2, 0), (1, 1), 1, False),
    ("dilation 2", (2, 2, 7, 7), (3, 2, 3, 3), True, (1, 1), (1, 1), (2, 2), 1, False),
    ("groups 2", (2, 4, 5, 5), (6, 2, 3, 3), True, (1, 1), (1, 1), (1, 1), 2, False),
    ("depthwise, no bias", (1, 3, 6, 5), (3, 1, 3, 3), False, (2, 1), (1, 1), (1, 2), 3, False),
    ("unbatched", (3, 4, 4), (2, 3, 2, 2), True, (1, 1), (0, 0), (1, 1), 1, False),
    ("conv1d", (2, 4, 9), (6, 2, 3), True, (1, 2), (0, 1), (1, 2), 2, True),
]
for name, xs, ws, has_b, s, p, d, g, one_d in conv_cases:
    x = torch.randn(*xs, dtype=dt, requires_grad=True)
    w = torch.randn(*ws, dtype=dt, requires_grad=True)
    b = torch.randn(ws[0], dtype=dt, requires_grad=True) if has_b else None
    if one_d:
        y = F.conv1d(x, w, b, stride=s[1], padding=p[1], dilation=d[1], groups=g)
    else:
        y = F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g)
    v = torch.randn(*y.shape, dtype=dt)
    (y * v).sum().backward()
    print("    ConvCase {")
    print(f"        name: {name!r},".replace("'", '"'))
    print(f"        one_d: {'true' if one_d else 'false'},")
    print(f"        x_shape: {shape(x)},\n        x: {arr(x)},")
    print(f"        w_shape: {shape(w)},\n        w: {arr(w)},")
    print(f"        b: {'Some(' + arr(b) + ')' if has_b else 'None'},")
    print(f"        stride: {pair(s)},\n        padding: {pair(p)},\n        dilation: {pair(d)},\n        groups: {g},")
    print(f"        y_shape: {shape(y)},\n        y: {arr(y)},\n        v: {arr(v)},")
    print(f"        gx: {arr(x.grad)},\n        gw: {arr(w.grad)},")
    print(f"        gb: {'Some(' + arr(b.grad) + ')' if has_b else 'None'},")
    print("    },")
print("];")
print()
print("pub const POOL: &[PoolCase] = &[")
pool_cases = [
    # name, kind, x shape, kernel, stride, padding, dilation, ceil_mode, count_include_pad
    ("max 2x2", "max", (2, 3, 6, 5), (2, 2), (2, 2), (0, 0), (1, 1), False, True),
    ("max 3x3 stride 2 padding 1", "max", (1, 2, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), False, True),
    ("max dilation 2", "max", (2, 2, 7, 7), (2, 3), (1, 2), (1, 1), (2, 2), False, True),
    ("max ceil_mode", "max", (1, 3, 5, 5), (2, 2), (2, 2), (1, 0), (1, 1), True, True),
    ("max unbatched", "max", (3, 4, 5), (2, 3), (1, 1), (0, 1), (1, 1), False, True),
    ("avg 2x2", "avg", (2, 3, 6, 5), (2, 2), (2, 2), (0, 0), (1, 1), False, True),
    ("avg padding, pad counted", "avg", (1, 2, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), False, True),
    ("avg padding, pad not counted", "avg", (1, 2, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), False, False),
    ("avg ceil_mode", "avg", (2, 2, 5, 5), (3, 2), (2, 2), (1, 1), (1, 1), True, True),
    ("avg ceil_mode, pad not counted", "avg", (1, 3, 6, 5), (2, 3), (2, 2), (1, 1), (1, 1), True, False),
    ("adaptive 5x7 to 3x4", "adaptive", (2, 3, 5, 7), (3, 4), None, None, None, False, True),
    ("adaptive 6x6 to 4x4", "adaptive", (1, 2, 6, 6), (4, 4), None, None, None, False, True),
    ("adaptive to 1x1", "adaptive", (3, 4, 5), (1, 1), None, None, None, False, True),
]
for name, kind, xs, k, s, p, d, ceil, inc in pool_cases:
    x = torch.randn(*xs, dtype=dt, requires_grad=True)
    if kind == "max":
        y = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
    elif kind == "avg":
        y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=inc)
    else:
        y = F.adaptive_avg_pool2d(x, k)
    v = torch.randn(*y.shape, dtype=dt)
    (y * v).sum().backward()
    s, p, d = s or (1, 1), p or (0, 0), d or (1, 1)
    print("    PoolCase {")
    print(f"        name: {name!r},".replace("'", '"'))
    print(f"        kind: {kind!r},".replace("'", '"'))
    print(f"        x_shape: {shape(x)},\n        x: {arr(x)},")
    print(f"        kernel: {pair(k)},\n        stride: {pair(s)},\n        padding: {pair(p)},\n        dilation: {pair(d)},")
    print(f"        ceil_mode: {'true' if ceil else 'false'},\n        count_include_pad: {'true' if inc else 'false'},")
    print(f"        y_shape: {shape(y)},\n        y: {arr(y)},\n        v: {arr(v)},\n        gx: {arr(x.grad)},")
    print("    },")
print("];")
