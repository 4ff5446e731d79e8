//! The seed, "Devices: moving models and data to the GPU", from start to end in devtype.
//!
//! ```text
//! cargo run --release --example tour
//! ```
//!
//! It runs on the best device that opens (GPU 0, else the CPU), with one generic function
//! `tour<D: Device>`: the typed form of `device = "cuda" if available else "cpu"`.

use devtype::device::{run_on_best_device, DeviceJob};
use devtype::nn::{DynLinear, Linear};
use devtype::prelude::*;
use std::io::IsTerminal;

/// What rustc 1.95 says about the seed's quick check (`x.to(gpu);` not rebound, then
/// `model.forward(&x)`), from the lesson's trybuild snapshot: it cannot drift from the compiler.
const QUICK_CHECK_STDERR: &str =
    include_str!("../ui-tests/fail/quick_check_2_fed_to_cuda_model.stderr");
/// The same mistake's first half: the dropped result of `x.to(gpu)`.
const DROPPED_STDERR: &str = include_str!("../ui-tests/fail/quick_check_1_result_dropped.stderr");

fn main() {
    let s = Style::detect();
    println!();
    println!(
        "{}",
        s.title("devtype: the seed \"Devices: moving models and data to the GPU\", in Rust")
    );
    println!(
        "{}",
        s.dim("Every tensor lives on exactly one device, and here the device is part of its type.")
    );

    s.section(1, "Pick the best device");
    s.code("device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")   # PyTorch");
    s.code(
        "run_on_best_device(Tour)   // runs `fn tour<D: Device>(dev: D)` on Cuda<0>, else on Cpu",
    );
    match Cuda::<0>::open() {
        Ok(gpu) => s.say(&format!(
            "Cuda::<0>::open() succeeded: GPU {} is ours.",
            gpu.ordinal()
        )),
        Err(e) => {
            s.say("Cuda::<0>::open() fails here, with PyTorch's words:");
            s.quote(&e.to_string());
            s.say("so the tour runs on the CPU. The same generic code runs on a GPU unchanged.");
        }
    }

    run_on_best_device(Tour { style: s });

    s.section(6, "When the device is only known at run time: DynTensor");
    s.say("A device from a config file or a command line is a value, parsed as torch.device parses it:");
    for text in ["cuda:0", "cpu", "cuda:x", "cuda:01"] {
        match text.parse::<DynDevice>() {
            Ok(dev) => s.result(
                &format!("\"{text}\".parse::<DynDevice>()"),
                &format!("Ok({dev})"),
            ),
            Err(e) => s.result(
                &format!("\"{text}\".parse::<DynDevice>()"),
                &format!("Err({e})"),
            ),
        }
    }
    let cuda0: DynDevice = "cuda:0".parse().expect("a valid device string");
    match DynTensor::zeros([4, 2], cuda0) {
        Ok(t) => s.result(
            "DynTensor::zeros([4, 2], cuda:0)",
            &format!("Ok, on {}", t.device()),
        ),
        Err(e) => {
            s.result(
                "DynTensor::zeros([4, 2], cuda:0)",
                "Err, CUDA is unavailable:",
            );
            s.quote(&e.to_string());
        }
    }
    s.say("Every DynTensor op checks devices first and returns PyTorch's message as an Err;");
    s.say("`x.try_into_typed::<D>()` checks once, and from then on the compiler checks for you.");

    println!();
    println!("{}", s.dim("More: cargo run --example quick_check; the lessons in ui-tests/ (and in `cargo doc`, devtype::lessons)."));
    println!();
}

/// The tour, written once for any device.
struct Tour {
    style: Style,
}

impl DeviceJob for Tour {
    type Output = ();
    fn run<D: Device + HostSync>(self, dev: D) {
        tour(dev, self.style);
    }
}

fn tour<D: Device + HostSync>(dev: D, s: Style) {
    // The GPU's name as its driver reports it (the simulated device says so in its name).
    let gpu_name = dev
        .dyn_device()
        .cuda_index()
        .and_then(|i| devtype::cuda::get_device_name(i).ok())
        .map(|name| format!(" ({name})"))
        .unwrap_or_default();
    s.say(&format!(
        "Running on: {}{gpu_name}",
        s.bold(&dev.to_string())
    ));

    s.section(2, "Move the model once; move every batch, and rebind it");
    devtype::manual_seed(0);
    let model = Linear::new(10, 2, Cpu).to(dev);
    s.code("let model = Linear::new(10, 2, Cpu).to(dev);   // the module, now typed Linear<D>");
    let x = Tensor::randn([4, 10], Cpu);
    s.code("let x = Tensor::randn([4, 10], Cpu);");
    let x = x.to(dev);
    s.code("let x = x.to(dev);                             // tensors return a copy: rebind!");
    let out = model.forward(&x);
    s.code("let out = model.forward(&x);");
    s.result("out.device()", &out.device().to_string());
    s.say("out =");
    for line in out.to_string().lines() {
        println!("      {line}");
    }

    s.section(3, "Create tensors directly on the device");
    let ones = Tensor::ones([4, 2], dev);
    s.code("let ones = Tensor::ones([4, 2], dev);          // torch.ones(4, 2, device=device)");
    let sum = &out + &ones;
    s.result(
        "(&out + &ones).shape()",
        &format!("{:?}   (PyTorch: torch.Size([4, 2]))", sum.shape()),
    );
    s.result("(&out + &ones).device()", &sum.device().to_string());

    s.section(4, "The quick check");
    s.say(
        "A model is on the GPU. You call `x.to(\"cuda\")` without assigning the result, then run",
    );
    s.say("`model(x)`. What happens?");
    for (right, answer) in QUIZ {
        s.option(right, answer);
    }
    s.say(
        "The third: `.to()` on a tensor returns a new tensor and leaves `x` where it was; nothing",
    );
    s.say("falls back to the CPU, and nothing moves the model back. In devtype terms: `x.to(gpu)`");
    s.say(
        "returns a `Tensor<Cuda<0>>` and leaves `x: Tensor<Cpu>`, while `Linear<Cuda<0>>::forward`",
    );
    s.say("takes only inputs on `Cuda<0>`; so both halves of the mistake are compile errors.");
    s.say("The dropped copy, under `#![deny(unused_must_use)]`:");
    s.diagnostic(DROPPED_STDERR);

    s.section(5, "Reading the device-mismatch error, both ways");
    s.say("At run time (PyTorch, and devtype's DynTensor), the same sentence:");
    if let Some(gpu) = dev.dyn_device().cuda_index().map(DynDevice::cuda) {
        // A real mismatch: the quick check with the device as a run-time value.
        let mut dyn_model = DynLinear::new(10, 2, DynDevice::cpu()).expect("a CPU layer");
        dyn_model.to(gpu).expect("the GPU opened above");
        let x = DynTensor::randn([4, 10], DynDevice::cpu()).expect("a CPU tensor");
        let _ = x.to(gpu); // the quick check's mistake: the copy is dropped
        match dyn_model.forward(&x) {
            Err(e) => s.quote(&e.to_string()),
            Ok(_) => s.quote("(unexpected: the mixed-device forward succeeded)"),
        }
        let ones = DynTensor::ones([4, 2], gpu).expect("a GPU tensor");
        let cpu_ones = DynTensor::ones([4, 2], DynDevice::cpu()).expect("a CPU tensor");
        if let Err(e) = ones.add(&cpu_ones) {
            s.quote(&e.to_string());
        }
    } else {
        s.say(&s.dim(
            "(no GPU here, so no real cuda:0 tensor to mix: this is the seed's text; on a GPU",
        ));
        s.say(&s.dim(" machine the tour prints the Err of a real DynTensor mismatch instead)"));
        s.quote("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu");
    }
    s.say("At compile time (Tensor<D>), the compiler's own words for the quick check, from the");
    s.say("lesson's snapshot (ui-tests/fail/quick_check_2_fed_to_cuda_model.stderr):");
    s.diagnostic(QUICK_CHECK_STDERR);
    s.say(
        "The three suspects: a batch you forgot to move, a tensor created inside `forward` without",
    );
    s.say("`x.device()`, and a loss weight left on the CPU. Each is a lesson in ui-tests/fail/.");
}

/// The seed's four answers; `true` marks the right one.
const QUIZ: [(bool, &str); 4] = [
    (false, "It works, because `.to()` moved `x` in place"),
    (false, "It works, but runs on the CPU"),
    (
        true,
        "It fails with a device mismatch, because `x` itself is still on the CPU",
    ),
    (
        false,
        "PyTorch moves the model back to the CPU automatically",
    ),
];

/// Terminal styling: ANSI colours only on a terminal, and never with `NO_COLOR` set.
#[derive(Clone, Copy)]
struct Style {
    color: bool,
}

impl Style {
    fn detect() -> Self {
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn title(&self, text: &str) -> String {
        self.paint("1;36", text)
    }
    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
    fn section(&self, n: usize, title: &str) {
        println!();
        println!("{}", self.paint("1;33", &format!("{n}. {title}")));
    }
    fn say(&self, text: &str) {
        println!("   {text}");
    }
    fn code(&self, text: &str) {
        println!("     {}", self.paint("32", text));
    }
    fn result(&self, expr: &str, value: &str) {
        println!(
            "     {} {} {}",
            self.paint("32", expr),
            self.dim("=>"),
            self.bold(value)
        );
    }
    fn quote(&self, text: &str) {
        println!("     {}", self.paint("31", text));
    }
    fn option(&self, right: bool, text: &str) {
        let mark = if right {
            self.paint("1;32", "[x]")
        } else {
            self.paint("2", "[ ]")
        };
        let text = if right {
            self.bold(text)
        } else {
            text.to_string()
        };
        println!("     {mark} {text}");
    }
    /// Prints a rustc diagnostic up to its first top-level `note:`/`help:` (which point into
    /// devtype's own source), coloured roughly as rustc does.
    fn diagnostic(&self, stderr: &str) {
        let main_part = stderr
            .lines()
            .enumerate()
            .take_while(|(i, l)| *i == 0 || !(l.starts_with("note:") || l.starts_with("help:")));
        for (_, line) in main_part.filter(|(_, l)| !l.is_empty()) {
            let styled = if line.starts_with("error") {
                self.paint("1;31", line)
            } else if line.trim_start().starts_with("= note")
                || line.trim_start().starts_with("= help")
            {
                self.paint("36", line)
            } else if line.contains('^') {
                self.paint("31", line)
            } else {
                self.dim(line)
            };
            println!("     {styled}");
        }
    }
}
