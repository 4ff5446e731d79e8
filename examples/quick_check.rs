//! The seed's quick check, walked through: `cargo run --example quick_check`.
//!
//! > A model is on the GPU. You call `x.to("cuda")` without assigning the result, then run
//! > `model(x)`. What happens?
//!
//! First with `DynTensor` (devices as run-time values, PyTorch's semantics and messages) on
//! whatever device exists, then with typed tensors, where the same code does not compile.

use devtype::nn::DynLinear;
use devtype::prelude::*;

/// rustc 1.95 on the typed version, from the lessons' trybuild snapshots.
const DROPPED_STDERR: &str = include_str!("../ui-tests/fail/quick_check_1_result_dropped.stderr");
const MISMATCH_STDERR: &str =
    include_str!("../ui-tests/fail/quick_check_2_fed_to_cuda_model.stderr");

/// The four answers, and why each is right or wrong.
const ANSWERS: [(bool, &str, &str); 4] = [
    (
        false,
        "It works, because `.to()` moved `x` in place",
        "only a module's `.to()` moves in place; a tensor's returns a new tensor",
    ),
    (
        false,
        "It works, but runs on the CPU",
        "nothing falls back silently: an op whose inputs sit on two devices fails",
    ),
    (
        true,
        "It fails with a device mismatch, because `x` itself is still on the CPU",
        "the copy on the GPU was dropped; `x` never moved",
    ),
    (
        false,
        "PyTorch moves the model back to the CPU automatically",
        "parameters move only when you call `.to()` on the module",
    ),
];

fn main() -> Result<(), devtype::Error> {
    println!("Quick check: A model is on the GPU. You call `x.to(\"cuda\")` without assigning the");
    println!("result, then run `model(x)`. What happens?\n");
    for (i, (right, answer, why)) in ANSWERS.iter().enumerate() {
        let letter = (b'A' + i as u8) as char;
        let mark = if *right { "right" } else { "wrong" };
        println!("  {letter}. {answer}");
        println!("     {mark}: {why}");
    }

    // The device as PyTorch picks it: cuda if available else cpu.
    let device: DynDevice = match Cuda::<0>::open() {
        Ok(_) => "cuda:0".parse()?,
        Err(e) => {
            println!("\n(No GPU here: {e})");
            DynDevice::cpu()
        }
    };

    println!("\n1. At run time, with DynTensor on {device} (PyTorch's semantics):\n");
    let mut model = DynLinear::new(10, 2, DynDevice::cpu())?;
    model.to(device)?; // a module moves in place, as `model.to(device)`
    println!(
        "   model.to({device})?;           model is on {}",
        model.device()
    );
    let x = DynTensor::randn([4, 10], DynDevice::cpu())?;
    let _ = x.to(device)?; // the mistake: the new tensor is dropped
    println!(
        "   let _ = x.to({device})?;       x is still on {}",
        x.device()
    );
    match model.forward(&x) {
        Err(e) => println!("   model.forward(&x)        Err: {e}"),
        Ok(out) => {
            println!("   model.forward(&x)        Ok, on {}", out.device());
            println!("   (everything is on the CPU here, so the bug stays hidden until the script");
            println!("    meets a GPU: that is the 3 a.m. crash on the cluster)");
        }
    }
    let x = x.to(device)?; // the fix: rebind
    let out = model.forward(&x)?;
    println!(
        "   let x = x.to({device})?;       fixed: model.forward(&x) is on {}",
        out.device()
    );

    println!("\n2. At compile time, with Tensor<D>: the same program does not build.\n");
    println!("   x.to(gpu);   // under #![deny(unused_must_use)]\n");
    print_indented(DROPPED_STDERR);
    println!("\n   let out = model.forward(&x);   // model: Linear<Cuda<0>>, x: Tensor<Cpu>\n");
    print_indented(MISMATCH_STDERR);
    println!("\n   The fix in both worlds: `let x = x.to(dev);`");
    Ok(())
}

fn print_indented(text: &str) {
    for line in text.lines() {
        println!("   {line}");
    }
}
