//! `DataLoader`: batches picked from a data set in host memory (by worker threads when asked),
//! collated, and handed to the training loop already on the device, typed on it.

use super::Dataset;
use crate::core::error::{Error, Result};
use crate::device::{Cpu, Device};
use crate::tensor::{Element, Tensor};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most worker threads one epoch starts: a larger
/// [`num_workers`](DataLoader::num_workers) starts this many (and never more threads than the
/// epoch has batches). The batches are the same with any number of workers.
pub const MAX_WORKERS: usize = 1024;

/// The most batches the workers prepare ahead of the loop: a larger
/// [`prefetch`](DataLoader::prefetch) (or a default `2 * num_workers` above it) reads this far
/// ahead. Only the memory held and the timing depend on it, never the batches.
pub const MAX_PREFETCH: usize = 1 << 16;

/// A data set the loader reads one sample at a time, by index (PyTorch's map-style dataset:
/// `__len__` and `__getitem__`).
///
/// The loader shares it between its worker threads, hence `Send + Sync + 'static` (own the data,
/// or hold it in an `Arc`). [`Dataset`] implements it; so can any type of yours:
///
/// ```
/// use devtype::data::MapDataset;
/// use devtype::prelude::*;
///
/// /// Sample `i` is the point `[i, i²]`, labelled by the parity of `i`.
/// struct Squares(usize);
///
/// impl MapDataset for Squares {
///     type Sample = (Tensor<Cpu>, i64);
///     fn len(&self) -> usize {
///         self.0
///     }
///     fn get(&self, i: usize) -> devtype::Result<(Tensor<Cpu>, i64)> {
///         let x = i as f32;
///         Ok((Tensor::try_from_vec(vec![x, x * x], [2], Cpu)?, (i % 2) as i64))
///     }
/// }
/// # assert_eq!(Squares(3).get(2).unwrap().0.to_vec(), [2.0, 4.0]);
/// ```
pub trait MapDataset: Send + Sync + 'static {
    /// One example as [`get`](Self::get) returns it, in host memory.
    type Sample: Send + 'static;

    /// The number of samples; the loader asks for indices in `0..len()` only.
    fn len(&self) -> usize;

    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sample at `index`. An `Err` (or a panic) reaches the training loop as the `Err` of
    /// the batch that holds this sample.
    fn get(&self, index: usize) -> Result<Self::Sample>;
}

/// Row `index` of the inputs (shape `[features]`, a view: nothing is copied) and its label (a
/// 0-dim tensor), as PyTorch's `TensorDataset` gives them; the default collate stacks them into
/// `[batch, features]` and `[batch]`.
impl MapDataset for Dataset {
    type Sample = (Tensor<Cpu, f32>, Tensor<Cpu, i64>);

    fn len(&self) -> usize {
        Dataset::len(self)
    }

    fn get(&self, index: usize) -> Result<Self::Sample> {
        let size = Dataset::len(self);
        if index >= size {
            return Err(Error::IndexOutOfBounds {
                index: i64::try_from(index).unwrap_or(i64::MAX),
                dim: 0,
                size,
            });
        }
        Ok((
            self.inputs.try_narrow(0, index, 1)?.try_squeeze(0)?,
            self.labels.try_narrow(0, index, 1)?.try_squeeze(0)?,
        ))
    }
}

impl<T: MapDataset> MapDataset for Arc<T> {
    type Sample = T::Sample;

    fn len(&self) -> usize {
        (**self).len()
    }

    fn get(&self, index: usize) -> Result<Self::Sample> {
        (**self).get(index)
    }
}

/// Turns the samples of one batch into the batch the loop receives, in host memory (PyTorch's
/// `collate_fn`).
///
/// [`DefaultCollate`] stacks them; any `Fn(Vec<Sample>) -> Result<Batch>` closure that is
/// `Send + Sync + 'static` is a collate function too, with any batch type that implements
/// [`ToDevice`]:
///
/// ```
/// use devtype::data::{spirals, DataLoader};
/// use devtype::prelude::*;
///
/// // Inputs stacked, labels kept as host numbers: the tensor moves to the device, the
/// // numbers stay as they are.
/// let loader = DataLoader::new(spirals(10, 1), Cpu)
///     .batch_size(4)
///     .collate(|samples: Vec<(Tensor<Cpu>, Tensor<Cpu, i64>)>| {
///         let labels = samples.iter().map(|(_, y)| y.try_item()).collect::<devtype::Result<Vec<i64>>>()?;
///         let rows: Vec<Tensor<Cpu>> = samples.into_iter().map(|(x, _)| x).collect();
///         Ok((Tensor::try_stack(&rows[..], 0)?, labels))
///     });
/// let (x, labels): (Tensor<Cpu>, Vec<i64>) = loader.iter().next().unwrap()?;
/// assert_eq!((x.shape(), labels), (&[4, 2][..], vec![0, 1, 2, 0]));
/// assert_eq!(loader.len(), 3); // the last batch holds 2
/// # Ok::<(), devtype::Error>(())
/// ```
pub trait Collate<S>: Send + Sync + 'static {
    /// The batch in host memory.
    type Batch: Send + 'static;

    /// The batch made of `samples` (never empty), in the epoch's order.
    fn collate(&self, samples: Vec<S>) -> Result<Self::Batch>;
}

impl<S, B, F> Collate<S> for F
where
    F: Fn(Vec<S>) -> Result<B> + Send + Sync + 'static,
    B: Send + 'static,
{
    type Batch = B;

    fn collate(&self, samples: Vec<S>) -> Result<B> {
        self(samples)
    }
}

/// The default collate function (PyTorch's `default_collate`): tensors are stacked along a new
/// first dimension, numbers become a 1-D tensor, tuples are collated field by field. See
/// [`Stack`] for the sample types it takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultCollate;

impl<S: Stack> Collate<S> for DefaultCollate {
    type Batch = S::Stacked;

    fn collate(&self, samples: Vec<S>) -> Result<S::Stacked> {
        S::stack(samples)
    }
}

/// A sample type [`DefaultCollate`] knows how to batch.
///
/// | sample | batch of `n` |
/// |---|---|
/// | `Tensor<Cpu, E>` of shape `s` | `Tensor<Cpu, E>` of shape `[n, ..s]` |
/// | `f32`, `f64`, `i64`, `bool` | a `Tensor<Cpu, _>` of shape `[n]` |
/// | `usize` (an index or class) | a `Tensor<Cpu, i64>` of shape `[n]` |
/// | a tuple of up to four of these | the tuple of their batches |
///
/// A sample already on a GPU is not one: the loader collates (and pins) in host memory and
/// moves each batch to its device itself.
#[diagnostic::on_unimplemented(
    message = "cannot pin `{Self}` only dense CPU tensors can be pinned: a `DataLoader` collates its samples in host memory",
    label = "the data set's samples are `{Self}`, not host values",
    note = "return samples on the CPU from `get` (`Tensor<Cpu, E>`, numbers, or tuples of them): `DataLoader::new(data, dev)` moves every batch to `dev` itself (asynchronously with `.pin_memory(true)`)"
)]
pub trait Stack: Sized + Send + 'static {
    /// The batch, in host memory.
    type Stacked: Send + 'static;

    /// Stacks `samples` (never empty) in order.
    fn stack(samples: Vec<Self>) -> Result<Self::Stacked>;
}

impl<E: Element> Stack for Tensor<Cpu, E> {
    type Stacked = Tensor<Cpu, E>;

    fn stack(samples: Vec<Self>) -> Result<Self::Stacked> {
        Tensor::try_stack(&samples[..], 0)
    }
}

macro_rules! stack_numbers {
    ($($t:ty),*) => {$(
        impl Stack for $t {
            type Stacked = Tensor<Cpu, $t>;

            fn stack(samples: Vec<Self>) -> Result<Self::Stacked> {
                let n = samples.len();
                Tensor::try_from_vec(samples, [n], Cpu)
            }
        }
    )*};
}
stack_numbers!(f32, f64, i64, bool);

impl Stack for usize {
    type Stacked = Tensor<Cpu, i64>;

    /// A value past `i64::MAX` is PyTorch's `Overflow when unpacking long` (it was clamped to
    /// `i64::MAX` before: a wrong label, silently).
    fn stack(samples: Vec<Self>) -> Result<Self::Stacked> {
        let n = samples.len();
        let values = samples
            .into_iter()
            .map(|v| {
                i64::try_from(v)
                    .map_err(|_| Error::UnsupportedOperation("Overflow when unpacking long"))
            })
            .collect::<Result<Vec<i64>>>()?;
        Tensor::try_from_vec(values, [n], Cpu)
    }
}

macro_rules! stack_tuples {
    ($(($($name:ident $var:ident $idx:tt),+)),*) => {$(
        impl<$($name: Stack),+> Stack for ($($name,)+) {
            type Stacked = ($($name::Stacked,)+);

            fn stack(samples: Vec<Self>) -> Result<Self::Stacked> {
                $(let mut $var = Vec::with_capacity(samples.len());)+
                for sample in samples {
                    $($var.push(sample.$idx);)+
                }
                Ok(($($name::stack($var)?,)+))
            }
        }
    )*};
}
stack_tuples!(
    (A a 0),
    (A a 0, B b 1),
    (A a 0, B b 1, C c 2),
    (A a 0, B b 1, C c 2, E e 3)
);

/// A batch in host memory that the loader can hand over on device `D`: tensors, and tuples
/// and `Vec`s of them (numbers and strings in it stay as they are). The moved batch is typed on `D`, so using it with a model on another
/// device does not compile.
pub trait ToDevice<D: Device>: Send + 'static {
    /// The same batch on `D`.
    type Output;

    /// Moves every tensor of the batch to `dev`.
    fn to_device(self, dev: D) -> Result<Self::Output>;

    /// The same batch with its tensors copied into pinned host memory, so that
    /// [`to_device`](Self::to_device) can upload them asynchronously (the loader's workers call
    /// it when [`DataLoader::pin_memory`] is on). The default leaves the batch as it is.
    fn pin_memory(self) -> Result<Self>
    where
        Self: Sized,
    {
        Ok(self)
    }
}

impl<D: Device, E: Element> ToDevice<D> for Tensor<Cpu, E> {
    type Output = Tensor<D, E>;

    fn to_device(self, dev: D) -> Result<Tensor<D, E>> {
        move_to_device(&self, dev)
    }

    fn pin_memory(self) -> Result<Self> {
        Ok(self.try_pin_memory()?.into_cpu())
    }
}

impl<D: Device, T: ToDevice<D>> ToDevice<D> for Vec<T> {
    type Output = Vec<T::Output>;

    fn to_device(self, dev: D) -> Result<Self::Output> {
        self.into_iter().map(|part| part.to_device(dev)).collect()
    }

    fn pin_memory(self) -> Result<Self> {
        self.into_iter().map(|part| part.pin_memory()).collect()
    }
}

/// Numbers and strings in a batch (sample ids, sizes, names) stay on the host as they are.
macro_rules! to_device_as_is {
    ($($t:ty),*) => {$(
        impl<D: Device> ToDevice<D> for $t {
            type Output = $t;

            fn to_device(self, _dev: D) -> Result<$t> {
                Ok(self)
            }
        }
    )*};
}
to_device_as_is!(usize, u64, u32, i64, i32, f32, f64, bool, String);

macro_rules! to_device_tuples {
    ($(($($name:ident),+)),*) => {$(
        #[allow(non_snake_case)]
        impl<Dev: Device, $($name: ToDevice<Dev>),+> ToDevice<Dev> for ($($name,)+) {
            type Output = ($($name::Output,)+);

            fn to_device(self, dev: Dev) -> Result<Self::Output> {
                let ($($name,)+) = self;
                Ok(($($name.to_device(dev)?,)+))
            }

            fn pin_memory(self) -> Result<Self> {
                let ($($name,)+) = self;
                Ok(($($name.pin_memory()?,)+))
            }
        }
    )*};
}
to_device_tuples!((A), (A, B), (A, B, C), (A, B, C, D));

/// The one place where the loader copies host data to the device. A batch the workers put in
/// pinned memory ([`DataLoader::pin_memory`]) goes to a GPU with
/// [`to_async`](crate::PinnedTensor::to_async): queued on the device's copy stream, with the
/// compute stream waiting for that copy's event, so the host never waits for it and the copy
/// overlaps the work already queued (the path of a batch: host memory, pinned buffer, copy stream,
/// kernels on the compute stream). Anything else (pageable memory, or the CPU
/// as the target) is a plain [`Tensor::try_to`], as before.
fn move_to_device<D: Device, E: Element>(host: &Tensor<Cpu, E>, dev: D) -> Result<Tensor<D, E>> {
    if !dev.dyn_device().is_cpu() {
        if let Some(pinned) = crate::PinnedTensor::from_pinned_storage(host) {
            return Ok(pinned.try_to_async(dev)?.into_tensor());
        }
    }
    host.try_to(dev)
}

/// Batches of a [`MapDataset`], collated on the host and handed over on device `D` (PyTorch's
/// `torch.utils.data.DataLoader`).
///
/// Built with [`DataLoader::new`] and the settings below, iterated once per epoch with
/// [`iter`](Self::iter) (or `for batch in &loader`). Each item is a `Result` of the batch
/// already on `dev`, typed on it: with the default collate and a [`Dataset`], a
/// `(Tensor<D>, Tensor<D, i64>)`. The model moves once, before the loop; the batches need no
/// `.to(dev)`, and a batch on another device than the model's stays a compile error.
///
/// ```
/// use devtype::data::{spirals, DataLoader};
/// use devtype::nn::{CrossEntropyLoss, Linear};
/// use devtype::optim::Sgd;
/// use devtype::prelude::*;
///
/// # fn main() -> devtype::Result<()> {
/// let dev = Cpu;                                    // or Cuda::<0>::open()?
/// let data = spirals(120, 2024);                    // on the host: Tensor<Cpu>
/// let mut model = Linear::new(data.features(), data.classes, Cpu).to(dev); // moves once
/// let (criterion, mut optimizer) = (CrossEntropyLoss::new(), Sgd::new(0.1));
/// let loader = DataLoader::new(data, dev)
///     .batch_size(32)
///     .shuffle(true)
///     .seed(7)                                      // the same batches on every run
///     .num_workers(2);                              // prepared on two threads meanwhile
/// for epoch in 0..3 {
///     for batch in loader.iter() {                  // a new order every epoch
///         let (x, y) = batch?;                      // (Tensor<D>, Tensor<D, i64>): on `dev`
///         model.zero_grad();
///         let loss = criterion.forward(&model.forward(&x), &y);
///         loss.backward();
///         optimizer.step(&mut model);
///     }
/// }
/// # Ok(())
/// # }
/// ```
///
/// A loader built for one device and a model on another do not compile: the batch's type says
/// where it is.
///
/// ```compile_fail,E0277
/// use devtype::data::{spirals, DataLoader};
/// use devtype::nn::Linear;
/// use devtype::prelude::*;
///
/// # fn main() -> devtype::Result<()> {
/// let gpu = Cuda::<0>::open()?;
/// let model = Linear::new(2, 3, Cpu).to(gpu);
/// let loader = DataLoader::new(spirals(30, 1), Cpu).batch_size(10); // built for the CPU
/// for batch in &loader {
///     let (x, _y) = batch?;
///     let _ = model.forward(&x); // error[E0277]: Expected all tensors to be on the same
/// }                              // device, but found at least two devices, `devtype::Cuda<0>`
/// # Ok(())                       // and `devtype::Cpu`
/// # }
/// ```
///
/// The fix is the loader's device: `DataLoader::new(data, gpu)`.
///
/// # Order, shuffling and epochs
///
/// Without shuffling, batch `i` holds samples `i*batch_size ..` in order. With
/// [`shuffle(true)`](Self::shuffle), every epoch draws a permutation of all indices from
/// the [`seed`](Self::seed) and the epoch number alone: the same seed and epoch give the same
/// batches on every run and machine, whatever the number of workers; each epoch (and each seed)
/// gives another order. [`iter`](Self::iter) runs epoch 0, then 1, 2, ... on successive calls;
/// [`iter_epoch`](Self::iter_epoch) runs a given one (to resume a run);
/// [`epoch_order`](Self::epoch_order) tells the order itself. Every sample comes exactly once
/// per epoch, except that [`drop_last(true)`](Self::drop_last) leaves out a final batch smaller
/// than the batch size.
///
/// # Workers
///
/// With [`num_workers(n)`](Self::num_workers), `n > 0`, each epoch starts `n` threads (at most
/// [`MAX_WORKERS`], and no more than it has batches) that
/// read and collate batches in host memory (batch `i` on worker `i % n`, as PyTorch assigns
/// them), at most [`prefetch`](Self::prefetch) batches ahead of the loop. The loop still
/// receives batch `i` as the `i`-th item, whatever the threads' timing. With `0` workers (the
/// default) each batch is prepared in the calling thread when asked for. The copy to the device
/// happens in the calling thread, in `next()`.
///
/// # Errors
///
/// An `Err` from [`MapDataset::get`] or from the collate function, and a panic in either (as
/// [`Error::DataLoaderPanicked`]), is the item of the batch it happened in, at that batch's
/// place, with any number of workers; a failed copy to the device is that batch's `Err` too.
/// Iteration then goes on with the next batch (as PyTorch's loader does after a worker's
/// exception): stop at the first error with `batch?`, or skip the batch and continue.
///
/// The workers end with the epoch's last batch. Dropping the iterator before that stops them:
/// each finishes at most the sample (or the collate) it is working on, and the drop joins them,
/// so no thread outlives the iterator.
pub struct DataLoader<D: Device, S: MapDataset, C = DefaultCollate> {
    dataset: Arc<S>,
    collate: Arc<C>,
    device: D,
    batch_size: usize,
    shuffle: bool,
    seed: u64,
    drop_last: bool,
    num_workers: usize,
    prefetch: Option<usize>,
    pin_memory: bool,
    next_epoch: AtomicU64,
}

impl<D: Device, S: MapDataset> DataLoader<D, S> {
    /// A loader of `dataset` that hands batches over on `dev`: batches of one sample, in order,
    /// collated by [`DefaultCollate`], prepared in the calling thread. Change any of that with
    /// the methods below.
    ///
    /// The samples are collated in host memory, so they must be host values ([`Stack`]): a
    /// data set whose samples are already on a GPU is a compile error that says so.
    pub fn new(dataset: S, dev: D) -> Self
    where
        S::Sample: Stack,
    {
        DataLoader {
            dataset: Arc::new(dataset),
            collate: Arc::new(DefaultCollate),
            device: dev,
            batch_size: 1,
            shuffle: false,
            seed: 0,
            drop_last: false,
            num_workers: 0,
            prefetch: None,
            pin_memory: false,
            next_epoch: AtomicU64::new(0),
        }
    }
}

impl<D: Device, S: MapDataset, C> DataLoader<D, S, C> {
    /// Samples per batch (default 1).
    ///
    /// # Panics
    ///
    /// With PyTorch's text when `batch_size` is 0.
    #[track_caller]
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        assert!(
            batch_size > 0,
            "batch_size should be a positive integer value, but got batch_size={batch_size}"
        );
        self.batch_size = batch_size;
        self
    }

    /// Draws a new order of the samples every epoch (default `false`: in order).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// The seed of the shuffled orders (default 0): the order of an epoch depends on the seed
    /// and the epoch number only.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Leaves out the last batch of an epoch when it has fewer than `batch_size` samples
    /// (default `false`: it comes, smaller).
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Threads that prepare batches in host memory while the loop runs (default 0: each batch
    /// is prepared in the calling thread when asked for). An epoch starts at most
    /// [`MAX_WORKERS`] threads, and no more than it has batches; when the system refuses a
    /// thread, the ones started take its share.
    pub fn num_workers(mut self, num_workers: usize) -> Self {
        self.num_workers = num_workers;
        self
    }

    /// How many batches, beyond the one the loop asked for last, the workers may prepare
    /// ahead: batches being prepared and prepared ones waiting in the loader's bounded channel
    /// together (default `2 * num_workers`, PyTorch's `prefetch_factor=2` per worker). It bounds
    /// the host memory the loader holds to `prefetch + 1` batches. With `0` the workers prepare
    /// only the batch asked for; without workers it has no effect. Values above
    /// [`MAX_PREFETCH`] read that far ahead; nothing is reserved for batches that are not
    /// being prepared.
    pub fn prefetch(mut self, batches: usize) -> Self {
        self.prefetch = Some(batches);
        self
    }

    /// Prepares batches in pinned (page-locked) host memory and uploads them asynchronously
    /// (PyTorch's `pin_memory=True`, default `false`): each worker copies its collated batch
    /// into a pinned buffer, and `next()` queues the upload on the GPU's copy stream with
    /// [`to_async`](crate::PinnedTensor::to_async), so it overlaps the work already queued on
    /// the compute stream, which waits for exactly that copy. The loop never waits on the host
    /// for it. Only tensors are pinned; a loader for the CPU ignores the setting.
    pub fn pin_memory(mut self, pin_memory: bool) -> Self {
        self.pin_memory = pin_memory;
        self
    }

    /// The same loader with another collate function (a `Fn(Vec<Sample>) -> Result<Batch>`
    /// closure or a [`Collate`] type).
    pub fn collate<C2: Collate<S::Sample>>(self, collate: C2) -> DataLoader<D, S, C2>
    where
        C2::Batch: ToDevice<D>,
    {
        DataLoader {
            dataset: self.dataset,
            collate: Arc::new(collate),
            device: self.device,
            batch_size: self.batch_size,
            shuffle: self.shuffle,
            seed: self.seed,
            drop_last: self.drop_last,
            num_workers: self.num_workers,
            prefetch: self.prefetch,
            pin_memory: self.pin_memory,
            next_epoch: self.next_epoch,
        }
    }

    /// The data set.
    pub fn dataset(&self) -> &S {
        &self.dataset
    }

    /// The device batches are handed over on.
    pub fn device(&self) -> D {
        self.device
    }

    /// The number of batches per epoch (PyTorch's `len(loader)`).
    pub fn len(&self) -> usize {
        batch_count(self.dataset.len(), self.batch_size, self.drop_last)
    }

    /// True when an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The order in which epoch `epoch` visits the samples (its batches are consecutive
    /// `batch_size` chunks of it): `0..len` without shuffling, else a permutation drawn from
    /// the seed and `epoch`. Fails with [`Error::CpuOutOfMemory`] when the host has no room
    /// for the list (nothing is left allocated).
    pub fn try_epoch_order(&self, epoch: u64) -> Result<Vec<usize>> {
        let len = self.dataset.len();
        let mut order = Vec::new();
        order
            .try_reserve_exact(len)
            .map_err(|_| order_out_of_memory(len))?;
        order.extend(0..len);
        if self.shuffle {
            shuffle(&mut order, self.seed, epoch);
        }
        Ok(order)
    }

    /// The order in which epoch `epoch` visits the samples, as
    /// [`try_epoch_order`](Self::try_epoch_order) gives it.
    ///
    /// Panics with the error's text where [`try_epoch_order`](Self::try_epoch_order) returns
    /// it.
    #[track_caller]
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        match self.try_epoch_order(epoch) {
            Ok(order) => order,
            Err(error) => panic!("{error}"),
        }
    }

    /// The order an epoch's batches read: counted on the fly without shuffling (nothing is
    /// stored, whatever the data set's length), else the permutation, allocated fallibly.
    fn order(&self, epoch: u64) -> Result<Order> {
        if self.shuffle {
            self.try_epoch_order(epoch).map(Order::Shuffled)
        } else {
            Ok(Order::InOrder(self.dataset.len()))
        }
    }
}

/// The error of an order of `len` indices that the host cannot hold.
fn order_out_of_memory(len: usize) -> Error {
    Error::CpuOutOfMemory {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<usize>() as u64),
    }
}

/// The sample indices of an epoch, in its order.
enum Order {
    /// `0..len`, counted on the fly.
    InOrder(usize),
    /// A permutation of `0..len`.
    Shuffled(Vec<usize>),
}

impl Order {
    fn len(&self) -> usize {
        match self {
            Order::InOrder(len) => *len,
            Order::Shuffled(order) => order.len(),
        }
    }

    /// The sample at position `position` (below [`len`](Self::len)).
    fn at(&self, position: usize) -> usize {
        match self {
            Order::InOrder(_) => position,
            Order::Shuffled(order) => order[position],
        }
    }
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> DataLoader<D, S, C>
where
    C::Batch: ToDevice<D>,
{
    /// The batches of the next epoch: epoch 0 on the first call, then 1, 2, ...
    ///
    /// Returns at once, whatever the data set's length: without shuffling the order is counted
    /// on the fly; a shuffled order that the host cannot hold makes the epoch a single
    /// [`Error::CpuOutOfMemory`] item.
    pub fn iter(&self) -> Batches<D, S, C> {
        let epoch = self.next_epoch.fetch_add(1, Ordering::Relaxed);
        self.iter_epoch(epoch)
    }

    /// The batches of epoch `epoch` (in the order [`epoch_order`](Self::epoch_order) gives),
    /// and the next [`iter`](Self::iter) runs the epoch after it.
    pub fn iter_epoch(&self, epoch: u64) -> Batches<D, S, C> {
        self.next_epoch
            .store(epoch.wrapping_add(1), Ordering::Relaxed);
        let (order, batches, failure) = match self.order(epoch) {
            Ok(order) => (order, self.len(), None),
            Err(error) => (Order::InOrder(0), 0, Some(error)),
        };
        let plan = Arc::new(Plan {
            dataset: Arc::clone(&self.dataset),
            collate: Arc::clone(&self.collate),
            order,
            batch_size: self.batch_size,
            batches,
            pin: (self.pin_memory && !self.device.dyn_device().is_cpu())
                .then_some(<C::Batch as ToDevice<D>>::pin_memory as fn(_) -> _),
        });
        let engine = if self.num_workers == 0 || plan.batches == 0 {
            Engine::Inline
        } else {
            // Never more threads than batches, nor a read-ahead beyond the epoch: nothing is
            // reserved for work that cannot exist.
            let workers = self.num_workers.min(MAX_WORKERS).min(plan.batches);
            let prefetch = self
                .prefetch
                .unwrap_or(self.num_workers.saturating_mul(2))
                .min(MAX_PREFETCH)
                .min(plan.batches);
            Engine::Workers(Pool::start(&plan, workers, prefetch))
        };
        Batches {
            plan,
            device: self.device,
            next: 0,
            engine,
            epoch,
            failure,
        }
    }
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> IntoIterator for &DataLoader<D, S, C>
where
    C::Batch: ToDevice<D>,
{
    type Item = Result<<C::Batch as ToDevice<D>>::Output>;
    type IntoIter = Batches<D, S, C>;

    /// The batches of the next epoch, as [`DataLoader::iter`].
    fn into_iter(self) -> Batches<D, S, C> {
        self.iter()
    }
}

impl<D: Device, S: MapDataset, C> std::fmt::Debug for DataLoader<D, S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataLoader")
            .field("device", &self.device.dyn_device())
            .field("samples", &self.dataset.len())
            .field("batch_size", &self.batch_size)
            .field("shuffle", &self.shuffle)
            .field("seed", &self.seed)
            .field("drop_last", &self.drop_last)
            .field("num_workers", &self.num_workers)
            .field("prefetch", &self.prefetch)
            .field("pin_memory", &self.pin_memory)
            .finish()
    }
}

/// The number of batches of `len` samples.
fn batch_count(len: usize, batch_size: usize, drop_last: bool) -> usize {
    if drop_last {
        len / batch_size
    } else {
        len.div_ceil(batch_size)
    }
}

/// Fisher-Yates with SplitMix64 seeded from `seed` and `epoch`.
fn shuffle(order: &mut [usize], seed: u64, epoch: u64) {
    let mut state =
        crate::random::mix(crate::random::mix(seed) ^ epoch.wrapping_mul(0xA076_1D64_78BD_642F));
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::random::mix(state)
    };
    for i in (1..order.len()).rev() {
        // A multiply-shift bound in 0..=i (its bias, below i / 2^64, is far below anything
        // an order of samples could show).
        let j = ((u128::from(next()) * (i as u128 + 1)) >> 64) as usize;
        order.swap(i, j);
    }
}

/// Copies a batch into pinned host memory ([`ToDevice::pin_memory`]).
type PinFn<B> = fn(B) -> Result<B>;

/// What an epoch's batches are made of, shared with the workers.
struct Plan<S: MapDataset, C: Collate<S::Sample>> {
    dataset: Arc<S>,
    collate: Arc<C>,
    order: Order,
    batch_size: usize,
    batches: usize,
    /// Copies a collated batch into pinned host memory ([`DataLoader::pin_memory`]).
    pin: Option<PinFn<C::Batch>>,
}

impl<S: MapDataset, C: Collate<S::Sample>> Plan<S, C> {
    /// The positions in the order of batch `batch`'s samples.
    fn rows(&self, batch: usize) -> std::ops::Range<usize> {
        let start = batch.saturating_mul(self.batch_size).min(self.order.len());
        let end = start.saturating_add(self.batch_size).min(self.order.len());
        start..end
    }

    /// Reads and collates batch `batch` in host memory, a panic turned into its `Err`. `None`
    /// when `stop` was raised meanwhile (the batch is no longer wanted).
    fn prepare(&self, batch: usize, stop: &AtomicBool) -> Option<Result<C::Batch>> {
        let work = || -> Option<Result<C::Batch>> {
            let rows = self.rows(batch);
            let mut samples = Vec::new();
            if samples.try_reserve_exact(rows.len()).is_err() {
                return Some(Err(Error::CpuOutOfMemory {
                    bytes: (rows.len() as u64)
                        .saturating_mul(std::mem::size_of::<S::Sample>() as u64),
                }));
            }
            for position in rows {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                match self.dataset.get(self.order.at(position)) {
                    Ok(sample) => samples.push(sample),
                    Err(error) => return Some(Err(error)),
                }
            }
            let batch = self.collate.collate(samples);
            Some(match self.pin {
                Some(pin) => batch.and_then(pin),
                None => batch,
            })
        };
        catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|payload| {
            let message = if let Some(text) = payload.downcast_ref::<&str>() {
                (*text).to_string()
            } else if let Some(text) = payload.downcast_ref::<String>() {
                text.clone()
            } else {
                "a panic without a message".to_string()
            };
            Some(Err(Error::DataLoaderPanicked { batch, message }))
        })
    }
}

/// How an epoch's batches are prepared.
enum Engine<B> {
    /// In the calling thread, in `next()`.
    Inline,
    /// By worker threads.
    Workers(Pool<B>),
}

/// Worker threads and their channels for one epoch.
struct Pool<B> {
    /// One task queue per worker (batch `i` goes to worker `i % n`).
    tasks: Vec<Sender<usize>>,
    /// Prepared batches, tagged with their position, in whatever order they are ready.
    results: Option<Receiver<(usize, Result<B>)>>,
    /// Batches received ahead of their turn.
    ready: BTreeMap<usize, Result<B>>,
    /// Batches handed to workers so far (they are `0..sent`).
    sent: usize,
    /// The most batches handed out beyond the one the loop waits for.
    prefetch: usize,
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

impl<B: Send + 'static> Pool<B> {
    /// Starts `workers` threads for `plan`, at most `prefetch` batches ahead of the loop.
    fn start<S, C>(plan: &Arc<Plan<S, C>>, workers: usize, prefetch: usize) -> Self
    where
        S: MapDataset,
        C: Collate<S::Sample, Batch = B>,
    {
        let stop = Arc::new(AtomicBool::new(false));
        // The caller bounds `prefetch` by the epoch's batches and MAX_PREFETCH, so this
        // channel's slots (allocated up front) are what can be in flight at most.
        let (done, results) = mpsc::sync_channel::<(usize, Result<B>)>(prefetch.saturating_add(1));
        let mut tasks = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        for worker in 0..workers {
            let (task, queue) = mpsc::channel::<usize>();
            let (plan, stop, done) = (Arc::clone(plan), Arc::clone(&stop), done.clone());
            let handle = std::thread::Builder::new()
                .name(format!("devtype-loader-{worker}"))
                .spawn(move || work(&plan, &queue, &done, &stop));
            match handle {
                Ok(handle) => {
                    tasks.push(task);
                    handles.push(handle);
                }
                // No thread to be had: the workers that started take this one's share.
                Err(_) => break,
            }
        }
        Pool {
            tasks,
            results: Some(results),
            ready: BTreeMap::new(),
            sent: 0,
            prefetch,
            stop,
            handles,
        }
    }

    /// Batch `batch`, handing out further batches up to the prefetch depth first.
    fn take(&mut self, batch: usize, batches: usize) -> Result<B> {
        if self.handles.is_empty() {
            return Err(Error::Internal {
                context: "DataLoader",
                message: "no worker thread could be started".into(),
            });
        }
        while self.sent < batches && self.sent <= batch.saturating_add(self.prefetch) {
            let worker = self.sent % self.tasks.len();
            // A worker that is gone is noticed below, when its batch does not come.
            let _ = self.tasks[worker].send(self.sent);
            self.sent += 1;
        }
        let Some(results) = &self.results else {
            return Err(Error::Internal {
                context: "DataLoader",
                message: "the workers were already stopped".into(),
            });
        };
        loop {
            if let Some(result) = self.ready.remove(&batch) {
                return result;
            }
            match results.recv_timeout(Duration::from_millis(50)) {
                Ok((index, result)) => {
                    self.ready.insert(index, result);
                }
                Err(RecvTimeoutError::Timeout) => {
                    let worker = batch % self.tasks.len();
                    if self.handles[worker].is_finished() {
                        // It may have delivered just before it ended.
                        while let Ok((index, result)) = results.try_recv() {
                            self.ready.insert(index, result);
                        }
                        if let Some(result) = self.ready.remove(&batch) {
                            return result;
                        }
                        return Err(lost(worker, batch));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(lost(batch % self.tasks.len(), batch))
                }
            }
        }
    }
}

impl<B> Pool<B> {
    /// Stops the workers and waits for them: each finishes at most the sample (or the collate)
    /// it is working on.
    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.tasks.clear(); // idle workers wake up to a closed queue
        self.results = None; // workers waiting to deliver find no receiver
        self.ready.clear();
        for handle in self.handles.drain(..) {
            // A worker's own panic is caught around the user's code; one here would be a bug
            // in this file, and the batch it owed was already reported as lost.
            let _ = handle.join();
        }
    }
}

impl<B> Drop for Pool<B> {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn lost(worker: usize, batch: usize) -> Error {
    Error::Internal {
        context: "DataLoader",
        message: format!("worker thread {worker} ended without delivering batch {batch}"),
    }
}

/// A worker's loop: prepare each batch it is handed until its queue closes or the loop is gone.
fn work<S: MapDataset, C: Collate<S::Sample>>(
    plan: &Plan<S, C>,
    queue: &Receiver<usize>,
    done: &SyncSender<(usize, Result<C::Batch>)>,
    stop: &AtomicBool,
) {
    while let Ok(batch) = queue.recv() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Some(result) = plan.prepare(batch, stop) else {
            return;
        };
        if done.send((batch, result)).is_err() {
            return;
        }
    }
}

/// The batches of one epoch of a [`DataLoader`], each a `Result` of the batch on device `D`.
///
/// Dropping it mid-epoch stops and joins its worker threads.
pub struct Batches<D: Device, S: MapDataset, C: Collate<S::Sample>> {
    plan: Arc<Plan<S, C>>,
    device: D,
    next: usize,
    engine: Engine<C::Batch>,
    epoch: u64,
    /// Why the epoch could not start (its shuffled order did not fit in memory): its one item.
    failure: Option<Error>,
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> Batches<D, S, C> {
    /// The epoch these batches belong to.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> Iterator for Batches<D, S, C>
where
    C::Batch: ToDevice<D>,
{
    type Item = Result<<C::Batch as ToDevice<D>>::Output>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(error) = self.failure.take() {
            return Some(Err(error));
        }
        let batch = self.next;
        if batch >= self.plan.batches {
            if let Engine::Workers(pool) = &mut self.engine {
                pool.shut_down(); // the epoch is over: no thread waits for the next one
            }
            return None;
        }
        self.next += 1;
        let host = match &mut self.engine {
            Engine::Inline => self
                .plan
                .prepare(batch, &AtomicBool::new(false))
                .unwrap_or_else(|| Err(lost(0, batch))),
            Engine::Workers(pool) => pool.take(batch, self.plan.batches),
        };
        Some(host.and_then(|host| host.to_device(self.device)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self
            .plan
            .batches
            .saturating_sub(self.next)
            .saturating_add(usize::from(self.failure.is_some()));
        (left, Some(left))
    }
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> ExactSizeIterator for Batches<D, S, C> where
    C::Batch: ToDevice<D>
{
}

impl<D: Device, S: MapDataset, C: Collate<S::Sample>> std::fmt::Debug for Batches<D, S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batches")
            .field("epoch", &self.epoch)
            .field("next", &self.next)
            .field("batches", &self.plan.batches)
            .finish()
    }
}
