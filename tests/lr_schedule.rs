//! Learning-rate schedules against the rates PyTorch 2.15 gives for the same settings.
//!
//! The constants below were printed by `python scripts/torch_lr_schedules.py` (torch 2.15.0,
//! CPU): `SGD(lr=0.1)`, the rate after the schedule's construction and then after each of 25
//! `step()` calls. Rerun the script to regenerate them.

use devtype::optim::{AnnealStrategy, LrScheduler, Optimizer, Sgd};
use devtype::prelude::*;

const STEP: [f64; 26] = [
    0.1,
    0.1,
    0.1,
    0.05,
    0.05,
    0.05,
    0.025,
    0.025,
    0.025,
    0.0125,
    0.0125,
    0.0125,
    0.00625,
    0.00625,
    0.00625,
    0.003125,
    0.003125,
    0.003125,
    0.0015625,
    0.0015625,
    0.0015625,
    0.00078125,
    0.00078125,
    0.00078125,
    0.000390625,
    0.000390625,
];
const MULTI_STEP: [f64; 26] = [
    0.1,
    0.1,
    0.03,
    0.03,
    0.03,
    0.0026999999999999997,
    0.0026999999999999997,
    0.0026999999999999997,
    0.0026999999999999997,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
    0.0008099999999999998,
];
const EXPONENTIAL: [f64; 26] = [
    0.1,
    0.09000000000000001,
    0.08100000000000002,
    0.07290000000000002,
    0.06561000000000002,
    0.05904900000000002,
    0.05314410000000002,
    0.04782969000000002,
    0.043046721000000024,
    0.03874204890000002,
    0.03486784401000002,
    0.03138105960900001,
    0.028242953648100012,
    0.025418658283290013,
    0.022876792454961013,
    0.020589113209464913,
    0.01853020188851842,
    0.01667718169966658,
    0.015009463529699923,
    0.013508517176729932,
    0.01215766545905694,
    0.010941898913151246,
    0.009847709021836121,
    0.00886293811965251,
    0.007976644307687259,
    0.007178979876918534,
];
const COSINE: [f64; 26] = [
    0.1,
    0.09509795896116975,
    0.08136274519200731,
    0.061514786230837566,
    0.03948521376916245,
    0.019637254807992697,
    0.005902041038830259,
    0.001,
    0.005902041038830253,
    0.019637254807992683,
    0.03948521376916243,
    0.061514786230837525,
    0.08136274519200731,
    0.09509795896116978,
    0.10000000000000002,
    0.09509795896116978,
    0.08136274519200734,
    0.06151478623083755,
    0.03948521376916246,
    0.019637254807992707,
    0.005902041038830264,
    0.001,
    0.005902041038830253,
    0.019637254807992846,
    0.03948521376916277,
    0.0615147862308381,
];
const LINEAR: [f64; 26] = [
    0.025,
    0.037500000000000006,
    0.05,
    0.0625,
    0.075,
    0.08750000000000001,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
    0.1,
];
const ONE_CYCLE: [f64; 26] = [
    0.040000000000000036,
    0.09498110768645929,
    0.2473289215690453,
    0.462142393477445,
    0.6902103457804172,
    0.8792851591221286,
    0.986052072364505,
    0.9979871550490316,
    0.9819815024222053,
    0.9504846320134737,
    0.904508879153485,
    0.8455319423681344,
    0.7754493889320884,
    0.6965137297768985,
    0.6112620219362893,
    0.5224343254455969,
    0.43288563555770404,
    0.3454941208465151,
    0.26306861650082564,
    0.18825834605023697,
    0.12346777314112659,
    0.07077932009665416,
    0.03188643714987267,
    0.008039173559862363,
    4e-06,
    0.008039173559862363,
];
const ONE_CYCLE_THREE_PHASE_LINEAR: [f64; 26] = [
    0.05,
    0.13571428571428573,
    0.22142857142857142,
    0.3071428571428571,
    0.39285714285714285,
    0.47857142857142854,
    0.4357142857142857,
    0.35,
    0.26428571428571423,
    0.17857142857142855,
    0.09285714285714286,
    0.04816666666666667,
    0.044500000000000005,
    0.04083333333333333,
    0.03716666666666667,
    0.0335,
    0.029833333333333337,
    0.026166666666666668,
    0.0225,
    0.018833333333333334,
    0.015166666666666669,
    0.011500000000000003,
    0.007833333333333331,
    0.004166666666666666,
    0.0005000000000000004,
    -0.003166666666666672,
];
const WARMUP_THEN_COSINE: [f64; 26] = [
    0.010000000000000002,
    0.03250000000000001,
    0.055000000000000014,
    0.07750000000000003,
    0.10000000000000003,
    0.1,
    0.09757729755661011,
    0.0905463412215599,
    0.07959536998847742,
    0.0657963412215599,
    0.0505,
    0.03520365877844011,
    0.02140463001152259,
    0.010453658778440109,
    0.0034227024433899004,
    0.001,
    0.0034227024433899004,
    0.01045365877844014,
    0.02140463001152267,
    0.035203658778440255,
    0.05050000000000022,
    0.06579634122156018,
    0.07959536998847777,
    0.09054634122156031,
    0.09757729755661054,
    0.10000000000000045,
];
const EXPONENTIAL_THEN_STEP: [f64; 26] = [
    0.1,
    0.09000000000000001,
    0.08100000000000002,
    0.07290000000000002,
    0.1,
    0.1,
    0.1,
    0.05,
    0.05,
    0.05,
    0.025,
    0.025,
    0.025,
    0.0125,
    0.0125,
    0.0125,
    0.00625,
    0.00625,
    0.00625,
    0.003125,
    0.003125,
    0.003125,
    0.0015625,
    0.0015625,
    0.0015625,
    0.00078125,
];

/// The rates a schedule sets on a fresh `Sgd(lr = 0.1)`: after construction, then per step.
fn rates(make: impl FnOnce(&mut Sgd<Cpu>) -> LrScheduler) -> Vec<f64> {
    let mut opt = Sgd::<Cpu>::new(0.1);
    let mut s = make(&mut opt);
    let mut out = vec![opt.lr()];
    for _ in 0..25 {
        s.step(&mut opt).unwrap();
        assert_eq!(s.get_last_lr(), opt.lr());
        out.push(opt.lr());
    }
    out
}

/// Bit for bit where PyTorch's formula is evaluated in the same order; within 1 ulp-ish
/// otherwise (`powi` against Python's `**`).
fn same(got: &[f64], want: &[f64], what: &str) {
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 4.0 * f64::EPSILON * b.abs(),
            "{what}: step {i}: {a} vs PyTorch's {b}\n{got:?}"
        );
    }
}

#[test]
fn step_lr() {
    same(
        &rates(|o| LrScheduler::step_lr(o, 3, 0.5).unwrap()),
        &STEP,
        "StepLR",
    );
}

#[test]
fn multi_step_lr() {
    let got = rates(|o| LrScheduler::multi_step_lr(o, &[2, 5, 5, 9], 0.3).unwrap());
    same(&got, &MULTI_STEP, "MultiStepLR");
}

#[test]
fn exponential_lr() {
    let got = rates(|o| LrScheduler::exponential_lr(o, 0.9).unwrap());
    same(&got, &EXPONENTIAL, "ExponentialLR");
}

#[test]
fn cosine_annealing_lr_in_pytorchs_recursive_form() {
    let got = rates(|o| LrScheduler::cosine_annealing_lr(o, 7, 0.001).unwrap());
    same(&got, &COSINE, "CosineAnnealingLR");
}

#[test]
fn linear_lr_warm_up() {
    let got = rates(|o| LrScheduler::linear_lr(o, 0.25, 1.0, 6).unwrap());
    same(&got, &LINEAR, "LinearLR");
}

#[test]
fn one_cycle_lr() {
    let got = rates(|o| LrScheduler::one_cycle_lr_default(o, 1.0, 25).unwrap());
    same(&got, &ONE_CYCLE, "OneCycleLR");
    let got = rates(|o| {
        LrScheduler::one_cycle_lr(o, 0.5, 25, 0.25, AnnealStrategy::Lin, 10.0, 100.0, true).unwrap()
    });
    same(
        &got,
        &ONE_CYCLE_THREE_PHASE_LINEAR,
        "OneCycleLR three phases, linear",
    );
}

#[test]
fn one_cycle_lr_past_its_steps_is_pytorchs_error_and_changes_nothing() {
    let mut opt = Sgd::<Cpu>::new(0.1);
    let mut s = LrScheduler::one_cycle_lr_default(&mut opt, 1.0, 3).unwrap();
    for _ in 0..3 {
        s.step(&mut opt).unwrap();
    }
    let before = (s.clone(), opt.lr());
    let err = s.step(&mut opt).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Tried to step 4 times. The specified number of total steps is 3"
    );
    assert_eq!((s, opt.lr()), before);
}

#[test]
fn sequential_lr_warm_up_then_cosine() {
    let got = rates(|o| {
        let warm = LrScheduler::linear_lr(o, 0.1, 1.0, 4).unwrap();
        let cos = LrScheduler::cosine_annealing_lr(o, 10, 0.001).unwrap();
        LrScheduler::sequential_lr(o, vec![warm, cos], &[5]).unwrap()
    });
    same(
        &got,
        &WARMUP_THEN_COSINE,
        "SequentialLR(LinearLR, CosineAnnealingLR)",
    );
    let got = rates(|o| {
        let a = LrScheduler::exponential_lr(o, 0.9).unwrap();
        let b = LrScheduler::step_lr(o, 3, 0.5).unwrap();
        LrScheduler::sequential_lr(o, vec![a, b], &[4]).unwrap()
    });
    same(
        &got,
        &EXPONENTIAL_THEN_STEP,
        "SequentialLR(ExponentialLR, StepLR)",
    );
}

#[test]
fn a_schedule_resumes_from_its_state() {
    let make = |o: &mut Sgd<Cpu>| {
        let warm = LrScheduler::linear_lr(o, 0.1, 1.0, 4).unwrap();
        let cos = LrScheduler::cosine_annealing_lr(o, 10, 0.001).unwrap();
        LrScheduler::sequential_lr(o, vec![warm, cos], &[5]).unwrap()
    };
    let mut opt = Sgd::<Cpu>::new(0.1);
    let mut s = make(&mut opt);
    for _ in 0..8 {
        s.step(&mut opt).unwrap();
    }
    let (state, lr) = (s.state(), opt.lr());
    let mut opt2 = Sgd::<Cpu>::new(0.1);
    let mut s2 = make(&mut opt2);
    s2.load_state(&state).unwrap();
    opt2.set_lr(lr);
    for _ in 0..10 {
        s.step(&mut opt).unwrap();
        s2.step(&mut opt2).unwrap();
        assert_eq!(opt.lr().to_bits(), opt2.lr().to_bits());
    }
    let mut other = LrScheduler::step_lr(&mut opt2, 3, 0.5).unwrap();
    assert!(other.load_state(&state).is_err());
}
