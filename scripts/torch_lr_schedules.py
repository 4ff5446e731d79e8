"""Prints the learning rates PyTorch's schedulers give for the fixed settings that
tests/lr_schedule.rs checks (the lr after construction, then after each `step()`), as Rust
array literals. Regenerate with any PyTorch 2.x:

    python scripts/torch_lr_schedules.py
"""
import warnings

import torch
from torch.optim import SGD
from torch.optim import lr_scheduler as S

warnings.filterwarnings("ignore")
STEPS = 25


def run(name, make, steps=STEPS):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = SGD([p], lr=0.1)
    sched = make(opt)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    print(f"const {name}: [f64; {len(lrs)}] = [{', '.join(repr(float(x)) for x in lrs)}];")


print(f"// torch {torch.__version__}, SGD(lr=0.1), lr after construction then after each step()")
run("STEP", lambda o: S.StepLR(o, step_size=3, gamma=0.5))
run("MULTI_STEP", lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3))
run("EXPONENTIAL", lambda o: S.ExponentialLR(o, gamma=0.9))
run("COSINE", lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001))
run("LINEAR", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=6))
run("ONE_CYCLE", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=25, cycle_momentum=False))
run(
    "ONE_CYCLE_THREE_PHASE_LINEAR",
    lambda o: S.OneCycleLR(
        o, max_lr=0.5, total_steps=25, pct_start=0.25, anneal_strategy="linear",
        div_factor=10.0, final_div_factor=100.0, three_phase=True, cycle_momentum=False,
    ),
)
run(
    "WARMUP_THEN_COSINE",
    lambda o: S.SequentialLR(
        o,
        [S.LinearLR(o, start_factor=0.1, total_iters=4), S.CosineAnnealingLR(o, T_max=10, eta_min=0.001)],
        milestones=[5],
    ),
)
run(
    "EXPONENTIAL_THEN_STEP",
    lambda o: S.SequentialLR(
        o, [S.ExponentialLR(o, gamma=0.9), S.StepLR(o, step_size=3, gamma=0.5)], milestones=[4]
    ),
)
