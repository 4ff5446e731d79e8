// The right idiom for embedding lookups: token ids travel with the batch, as the lesson
// `index_select_ids_on_cpu` says. Written once for any device and run on the CPU (and on
// GPU 0 too where one opens).
use devtype::prelude::*;

fn lookup<D: Device>(dev: D) -> Vec<usize> {
    let table = Tensor::<Cpu>::randn([100, 16], Cpu).to(dev); // moved once, like a model
    let ids = Tensor::<Cpu, i64>::from_vec(vec![3, 14, 15, 92], [4], Cpu);
    let ids = ids.to(dev); // each batch's ids move with it: rebind
    table.index_select(0, &ids).shape().to_vec()
}

fn main() {
    assert_eq!(lookup(Cpu), vec![4, 16]);
    if let Ok(gpu) = Cuda::<0>::open() {
        assert_eq!(lookup(gpu), vec![4, 16]);
    }
}
