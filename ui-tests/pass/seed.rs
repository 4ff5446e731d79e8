// The seed's example end to end, written once for any device `D` and run on the CPU (and on
// GPU 0 too where one opens). This is the typed form of
//
//     device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
//     model = nn.Linear(10, 2).to(device)
//     x = torch.randn(4, 10)
//     x = x.to(device)
//     out = model(x)
//     ones = torch.ones(4, 2, device=device)
//     print((out + ones).shape)                 # torch.Size([4, 2])
use devtype::nn::Linear;
use devtype::prelude::*;

fn seed<D: Device>(device: D) -> Vec<usize> {
    let model = Linear::new(10, 2, Cpu).to(device); // the module moves; rebind it
    let x = Tensor::<Cpu>::randn([4, 10], Cpu);
    let x = x.to(device); // tensors return a copy: rebind!
    let out = model.forward(&x);
    assert_eq!(out.device(), device);
    let ones = Tensor::ones([4, 2], device); // created directly on the device
    (out + ones).shape().to_vec()
}

fn main() {
    assert_eq!(seed(Cpu), vec![4, 2]);
    if let Ok(gpu) = Cuda::<0>::open() {
        assert_eq!(seed(gpu), vec![4, 2]);
    }
}
