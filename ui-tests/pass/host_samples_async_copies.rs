// A `DataLoader` over host samples that moves (and pins) its batches itself, an in-place update
// whose receiver is converted first, a plain field kept by `module!` next to a tensor listed
// with the modules, and a GPU download read after `.wait()`. The lessons
// `data_loader_gpu_samples`, `add_assign_f32_into_i64`, `module_keep_tensor` and
// `download_read_without_wait` are the ways to get them wrong. Runs without a GPU.
use devtype::data::{spirals, DataLoader};
use devtype::nn::Linear;
use devtype::prelude::*;

struct Scaled<D: Device> {
    fc: Linear<D>,
    scale: Tensor<D>,
    width: usize,
}

devtype::module!(Scaled<D> { fc, scale } keep { width });

fn main() -> Result<(), devtype::Error> {
    let loader = DataLoader::new(spirals(10, 1), Cpu).batch_size(4).pin_memory(true);
    let mut batches = 0;
    for batch in &loader {
        let (x, _y) = batch?;
        assert_eq!(x.shape()[1], 2);
        batches += 1;
    }
    assert_eq!(batches, loader.len());

    let positions = Tensor::<Cpu, i64>::from_vec(vec![1, 2, 3], [3], Cpu);
    let noise = Tensor::<Cpu>::full([3], 0.5, Cpu);
    let mut positions = positions.to_dtype::<f32>(); // convert the receiver, and rebind
    positions += &noise;
    assert_eq!(positions.to_vec(), vec![1.5, 2.5, 3.5]);

    let model = Scaled {
        fc: Linear::new(2, 2, Cpu),
        scale: Tensor::ones([2], Cpu),
        width: 2,
    };
    let model = model.to(Cpu);
    assert_eq!((model.width, model.scale.shape()), (2, &[2][..]));
    let _ = &model.fc;

    if let Ok(gpu) = Cuda::<0>::open() {
        let x = Tensor::<Cpu>::randn([3], Cpu);
        let back = x.to(gpu).to_async(Cpu).wait()?;
        assert_eq!(back.to_vec(), x.to_vec());
    }
    Ok(())
}
