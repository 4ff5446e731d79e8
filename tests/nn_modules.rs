//! Modules: moving as a whole, names, Sequential, Dropout, losses against references, the
//! dynamic modules, and safetensors checkpoints.

use devtype::nn::{
    self, CrossEntropyLoss, Dropout, DynLinear, DynModule, DynSequential, Linear, MSELoss, ReLU,
    Reduction, Sequential,
};
use devtype::prelude::*;

struct Net<D: Device> {
    encoder: Sequential<(Linear<D>, ReLU)>,
    drop: Dropout,
    head: Linear<D>,
    width: usize,
}
devtype::module!(Net<D> { encoder, drop, head } keep { width });

impl<D: Device> Forward<D> for Net<D> {
    fn forward<I: ModuleInput<D> + HasDevice<Element = f32>>(&self, x: I) -> Tensor<D> {
        self.head
            .forward(self.drop.forward(self.encoder.forward(x)))
    }
}

fn net() -> Net<Cpu> {
    Net {
        encoder: Sequential::new((Linear::new(3, 5, Cpu), ReLU)),
        drop: Dropout::new(0.5),
        head: Linear::new(5, 2, Cpu),
        width: 5,
    }
}

#[test]
fn a_model_moves_with_one_call_and_names_its_parameters() {
    let model = net();
    let moved: Net<Cpu> = model.to(Cpu);
    assert_eq!(moved.width, 5);
    let names: Vec<String> = moved
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        [
            "encoder.0.weight",
            "encoder.0.bias",
            "head.weight",
            "head.bias"
        ]
    );
    assert_eq!(moved.num_parameters(), 3 * 5 + 5 + 5 * 2 + 2);
    for ((_, a), (_, b)) in model
        .named_parameters()
        .iter()
        .zip(moved.named_parameters())
    {
        assert_eq!(a.to_vec(), b.to_vec());
        assert!(b.requires_grad() && b.is_leaf());
    }
}

#[test]
fn forward_records_and_gradients_reach_every_parameter() {
    let mut model = net();
    model.eval();
    let x = Tensor::<Cpu>::randn([4, 3], Cpu);
    let loss = model.forward(&x).square().mean_all();
    loss.backward();
    for (name, p) in model.named_parameters() {
        let g = p.grad().unwrap_or_else(|| panic!("{name} has no gradient"));
        assert_eq!(g.shape(), p.shape());
    }
    model.zero_grad();
    assert!(model.parameters().iter().all(|p| p.grad().is_none()));
}

#[test]
fn linear_matches_its_formula() {
    let w = Tensor::from_vec(vec![1.0f32, -1.0, 2.0, 0.5, 0.0, 3.0], [2, 3], Cpu);
    let b = Tensor::from_vec(vec![0.25f32, -0.5], [2], Cpu);
    let layer = Linear::from_parameters(w, Some(b));
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [1, 3], Cpu);
    let y = layer.forward(&x);
    assert_eq!(
        y.to_vec(),
        vec![1.0 - 2.0 + 6.0 + 0.25, 0.5 + 0.0 + 9.0 - 0.5]
    );
    y.sum_all().backward();
    assert_eq!(
        layer.weight().grad().unwrap().to_vec(),
        vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    );
    assert_eq!(
        layer.bias().unwrap().grad().unwrap().to_vec(),
        vec![1.0, 1.0]
    );
}

#[test]
fn dropout_drops_while_training_and_is_the_identity_in_eval() {
    devtype::manual_seed(3);
    let mut drop = Dropout::new(0.25);
    let x = Tensor::parameter(Tensor::<Cpu>::ones([10_000], Cpu));
    let y: Tensor<Cpu> = drop.forward(&x);
    let v = y.to_vec();
    let kept = v.iter().filter(|&&a| a != 0.0).count() as f64 / v.len() as f64;
    assert!((kept - 0.75).abs() < 0.02, "kept {kept}");
    assert!(v.iter().all(|&a| a == 0.0 || (a - 1.0 / 0.75).abs() < 1e-6));
    y.sum_all().backward();
    assert_eq!(x.grad().unwrap().to_vec(), v); // the gradient goes through the same mask
    Module::<Cpu>::eval(&mut drop);
    assert_eq!(drop.forward(&x).to_vec(), vec![1.0; 10_000]);
}

/// Reference cross-entropy in f64.
fn reference_ce(
    logits: &[f32],
    classes: usize,
    targets: &[i64],
    weight: &[f32],
    ignore: i64,
) -> (Vec<f64>, f64) {
    let mut losses = Vec::new();
    let mut total_w = 0.0;
    for (row, &t) in logits.chunks(classes).zip(targets) {
        if t == ignore {
            losses.push(0.0);
            continue;
        }
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let lse = max
            + row
                .iter()
                .map(|&v| (v as f64 - max).exp())
                .sum::<f64>()
                .ln();
        let w = weight[t as usize] as f64;
        losses.push(w * (lse - row[t as usize] as f64));
        total_w += w;
    }
    (losses, total_w)
}

#[test]
fn cross_entropy_weights_ignore_index_and_reductions() {
    devtype::manual_seed(5);
    let logits = Tensor::<Cpu>::randn([6, 4], Cpu);
    let targets = Tensor::<Cpu, i64>::from_vec(vec![0, 3, 2, 1, 3, 2], [6], Cpu);
    let weight = vec![0.5f32, 2.0, 1.0, 3.0];
    let (losses, total_w) = reference_ce(&logits.to_vec(), 4, &targets.to_vec(), &weight, 2);
    let criterion = CrossEntropyLoss::new()
        .with_weight(Tensor::from_vec(weight, [4], Cpu))
        .with_ignore_index(2);
    let mean = criterion.forward(&logits, &targets).item() as f64;
    assert!((mean - losses.iter().sum::<f64>() / total_w).abs() < 1e-5);
    let sum = criterion
        .clone()
        .with_reduction(Reduction::Sum)
        .forward(&logits, &targets)
        .item() as f64;
    assert!((sum - losses.iter().sum::<f64>()).abs() < 1e-4);
    let each = criterion
        .with_reduction(Reduction::None)
        .forward(&logits, &targets)
        .to_vec();
    for (a, b) in each.iter().zip(&losses) {
        assert!((*a as f64 - b).abs() < 1e-5);
    }
}

#[test]
fn the_loss_weight_moves_with_the_loss() {
    let criterion =
        CrossEntropyLoss::new().with_weight(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
    let moved: CrossEntropyLoss<Cpu> = Module::<Cpu>::to(&criterion, Cpu);
    assert_eq!(moved.weight().unwrap().to_vec(), vec![1.0, 2.0]);
}

#[test]
fn mse_loss_and_its_gradient() {
    let pred = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0, -1.0, 0.5], [2, 2], Cpu));
    let target = Tensor::from_vec(vec![0.0f32, 1.0, 1.0, 0.5], [2, 2], Cpu);
    let loss = MSELoss::new().forward(&pred, &target);
    assert_eq!(loss.item(), (1.0 + 1.0 + 4.0 + 0.0) / 4.0);
    loss.backward();
    assert_eq!(pred.grad().unwrap().to_vec(), vec![0.5, 0.5, -1.0, 0.0]);
    let sum = MSELoss::new()
        .with_reduction(Reduction::Sum)
        .forward(&pred, &target);
    assert_eq!(sum.item(), 6.0);
}

#[test]
fn dynamic_modules_move_in_place() {
    let dev = DynDevice::cpu();
    let mut model = DynSequential::new()
        .append(DynLinear::new(3, 4, dev).unwrap())
        .append(ReLU)
        .append(DynLinear::new(4, 2, dev).unwrap());
    let again: &mut DynSequential = model.to(dev).unwrap();
    assert_eq!(again.len(), 3);
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    let x: DynTensor = DynTensor::randn([5, 3], dev).unwrap();
    let loss = DynModule::forward(&model, &x)
        .unwrap()
        .square()
        .unwrap()
        .mean_all()
        .unwrap();
    loss.backward().unwrap();
    assert!(model
        .named_parameters()
        .iter()
        .all(|(_, p)| p.grad().is_some()));
    let cuda0: DynDevice = "cuda:0".parse().unwrap();
    if devtype::cuda::is_available() {
        // With a GPU the whole model moves in place, and every parameter is then on it.
        if let Err(e) = model.to(cuda0) {
            panic!("moving the model to cuda:0 failed on a machine with a GPU: {e}");
        }
        for (name, p) in model.named_parameters() {
            assert_eq!(p.device(), cuda0, "{name} did not move to cuda:0");
        }
    } else {
        let err = model.to(cuda0).err();
        assert!(
            err.is_some(),
            "there is no GPU here, so moving must fail (and leave the model where it was)"
        );
        assert_eq!(model.named_parameters()[0].1.device(), dev);
    }
}

#[test]
fn checkpoints_round_trip_bit_exactly() {
    let dir = std::env::temp_dir().join(format!("devtype-nn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.safetensors");
    let model = net();
    model.save(&path).unwrap();
    let mut other = net();
    assert_ne!(other.head.weight().to_vec(), model.head.weight().to_vec());
    other.load(&path).unwrap();
    for ((na, a), (nb, b)) in model
        .named_parameters()
        .iter()
        .zip(other.named_parameters())
    {
        assert_eq!(na, &nb);
        let (va, vb): (Vec<u32>, Vec<u32>) = (
            a.to_vec().iter().map(|v| v.to_bits()).collect(),
            b.to_vec().iter().map(|v| v.to_bits()).collect(),
        );
        assert_eq!(va, vb, "{na}");
    }
    // Onto a chosen device, typed on it.
    let tensors = nn::load_tensors::<Cpu, f32>(&path, Cpu).unwrap();
    assert_eq!(tensors.len(), 4);
    assert_eq!(tensors[0].0, "encoder.0.bias");

    // A file without one of the parameters, and one with a wrong shape.
    let small = Sequential::new((Linear::<Cpu>::new(3, 5, Cpu), ReLU));
    small.save(&path).unwrap();
    let err = other.load(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict: Missing key(s) in state_dict: \"encoder.0.weight\"."
    );
    let mut wide = Sequential::new((Linear::<Cpu>::new(3, 6, Cpu), ReLU));
    let err = wide.load(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict: size mismatch for 0.weight: copying a param with shape [5, 3] from checkpoint, the shape in current model is [6, 3]."
    );
    assert!(
        matches!(err, devtype::Error::TensorShapeMismatch { ref name, .. } if name == "0.weight")
    );
    std::fs::remove_dir_all(&dir).ok();
}
