//! `devtype::data::DataLoader` on the CPU: order, shuffling, drop_last, workers, errors, drops.
//!
//! Every expectation is computed here from the samples' known values (sample `i` is the point
//! `[i, 10 i]` labelled `i`), not from the loader's own helpers.

use devtype::data::{spirals, DataLoader, MapDataset};
use devtype::prelude::*;
use devtype::Error;
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// One batch as plain values: (the inputs' shape, inputs, labels).
type Plain = (Vec<usize>, Vec<f32>, Vec<i64>);

fn plain((x, y): (Tensor<Cpu>, Tensor<Cpu, i64>)) -> Plain {
    (x.shape().to_vec(), x.to_vec(), y.to_vec())
}

/// The batch holding samples `rows`, as the loader must hand it over.
fn expected(rows: &[usize]) -> Plain {
    let x = rows
        .iter()
        .flat_map(|&i| [i as f32, 10.0 * i as f32])
        .collect();
    let y = rows.iter().map(|&i| i as i64).collect();
    (vec![rows.len(), 2], x, y)
}

/// Decrements its counter when the thread that holds it ends.
struct ThreadAlive(Arc<AtomicUsize>);

impl Drop for ThreadAlive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    /// The probes this thread has read from (by the address of their live-thread counter).
    static SEEN: RefCell<Vec<(usize, ThreadAlive)>> = const { RefCell::new(Vec::new()) };
}

/// Sample `i` is `([i, 10 i], i)`; it can fail, panic, or take its time at chosen indices, and
/// it counts the reads and the threads that read it that are still alive.
#[derive(Default)]
struct Probe {
    len: usize,
    fail_at: Option<usize>,
    panic_at: Option<usize>,
    /// Each read sleeps this long, times `1 + i % 3` (so workers finish out of order).
    delay: Duration,
    reads: Arc<AtomicUsize>,
    live_threads: Arc<AtomicUsize>,
}

impl Probe {
    fn new(len: usize) -> Self {
        Probe {
            len,
            ..Probe::default()
        }
    }
}

impl MapDataset for Probe {
    type Sample = (Tensor<Cpu>, Tensor<Cpu, i64>);

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> devtype::Result<Self::Sample> {
        let key = Arc::as_ptr(&self.live_threads) as usize;
        SEEN.with(|seen| {
            let mut seen = seen.borrow_mut();
            if !seen.iter().any(|(k, _)| *k == key) {
                self.live_threads.fetch_add(1, Ordering::SeqCst);
                seen.push((key, ThreadAlive(Arc::clone(&self.live_threads))));
            }
        });
        self.reads.fetch_add(1, Ordering::SeqCst);
        assert!(
            i < self.len,
            "the loader asked for sample {i} of {}",
            self.len
        );
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay * (1 + i as u32 % 3));
        }
        if self.fail_at == Some(i) {
            return Err(Error::DataFile {
                path: "probe".into(),
                message: format!("sample {i} is unreadable"),
            });
        }
        if self.panic_at == Some(i) {
            panic!("probe panicked at sample {i}");
        }
        let x = i as f32;
        Ok((
            Tensor::try_from_vec(vec![x, 10.0 * x], [2], Cpu)?,
            Tensor::try_from_vec(vec![i as i64], [], Cpu)?,
        ))
    }
}

/// Runs `body` on a thread and fails the test (instead of hanging it) past `limit`.
fn within<T: Send + 'static>(limit: Duration, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => value,
        Err(_) => panic!("the data loader hung (no result within {limit:?})"),
    }
}

fn all_ok(
    loader: impl IntoIterator<Item = devtype::Result<(Tensor<Cpu>, Tensor<Cpu, i64>)>>,
) -> Vec<Plain> {
    loader
        .into_iter()
        .map(|batch| plain(batch.expect("a batch")))
        .collect()
}

#[test]
fn without_shuffle_batches_come_in_order() {
    let loader = DataLoader::new(Probe::new(10), Cpu).batch_size(4);
    assert_eq!(loader.len(), 3);
    let batches = all_ok(&loader);
    assert_eq!(
        batches,
        [
            expected(&[0, 1, 2, 3]),
            expected(&[4, 5, 6, 7]),
            expected(&[8, 9])
        ]
    );
    // Every epoch is the same without shuffling.
    assert_eq!(all_ok(&loader), batches);
}

#[test]
fn the_default_batch_size_is_one() {
    let batches = all_ok(&DataLoader::new(Probe::new(3), Cpu));
    assert_eq!(batches, [expected(&[0]), expected(&[1]), expected(&[2])]);
}

#[test]
fn a_dataset_batches_its_rows() {
    let data = spirals(30, 2024);
    let (inputs, labels) = (data.inputs.to_vec(), data.labels.to_vec());
    let loader = DataLoader::new(data, Cpu)
        .batch_size(7)
        .shuffle(true)
        .seed(3)
        .num_workers(2);
    let mut seen = Vec::new();
    for batch in loader.iter_epoch(5) {
        let (x, y) = batch.unwrap();
        assert_eq!(x.shape()[1..], [2]);
        assert_eq!(y.shape(), &[x.shape()[0]]);
        let (x, y) = (x.to_vec(), y.to_vec());
        for (row, &label) in y.iter().enumerate() {
            // Find the sample by its inputs (the spirals' points are distinct), then check
            // that the label beside it is its own.
            let point = &x[2 * row..2 * row + 2];
            let i = (0..30)
                .find(|&i| inputs[2 * i..2 * i + 2] == *point)
                .expect("a point of the data set");
            assert_eq!(label, labels[i]);
            seen.push(i);
        }
    }
    assert_eq!(seen, loader.epoch_order(5));
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..30).collect::<Vec<_>>());
    assert_ne!(seen, sorted, "shuffled");
}

#[test]
fn shuffling_depends_on_the_seed_and_the_epoch_only() {
    let loader = |seed| {
        DataLoader::new(Probe::new(40), Cpu)
            .batch_size(8)
            .shuffle(true)
            .seed(seed)
    };
    let (a, b) = (loader(11), loader(11));
    let a0 = all_ok(a.iter()); // epoch 0
    let a1 = all_ok(a.iter()); // epoch 1
    assert_eq!(
        all_ok(b.iter_epoch(0)),
        a0,
        "same seed and epoch, same batches"
    );
    assert_eq!(all_ok(b.iter_epoch(1)), a1);
    assert_eq!(all_ok(a.iter_epoch(0)), a0, "an epoch can be replayed");
    assert_ne!(a0, a1, "another epoch, another order");
    assert_ne!(
        all_ok(loader(12).iter_epoch(0)),
        a0,
        "another seed, another order"
    );
    let in_order: Vec<Plain> = (0..5)
        .map(|b| expected(&(8 * b..8 * b + 8).collect::<Vec<_>>()))
        .collect();
    assert_ne!(a0, in_order, "shuffled");
    // iter() continues after the epoch iter_epoch ran.
    a.iter_epoch(7);
    assert_eq!(a.iter().epoch(), 8);
}

#[test]
fn every_sample_comes_exactly_once_per_epoch() {
    for workers in [0, 3] {
        let loader = DataLoader::new(Probe::new(53), Cpu)
            .batch_size(5)
            .shuffle(true)
            .seed(99)
            .num_workers(workers);
        for epoch in 0..4 {
            let batches = all_ok(loader.iter_epoch(epoch));
            assert_eq!(batches.len(), 11);
            let labels: Vec<usize> = batches
                .iter()
                .flat_map(|(_, _, y)| y.iter().map(|&v| v as usize))
                .collect();
            let unique: HashSet<usize> = labels.iter().copied().collect();
            assert_eq!((labels.len(), unique.len()), (53, 53));
            assert!(labels.iter().all(|&i| i < 53));
            // Inputs and labels stay paired, and the batches are the epoch order's chunks.
            let order = loader.epoch_order(epoch);
            for (batch, rows) in batches.iter().zip(order.chunks(5)) {
                assert_eq!(*batch, expected(rows));
            }
        }
    }
}

#[test]
fn drop_last_leaves_out_only_a_partial_last_batch() {
    let sizes = |n, drop_last| {
        let loader = DataLoader::new(Probe::new(n), Cpu)
            .batch_size(4)
            .drop_last(drop_last);
        let batches = all_ok(&loader);
        assert_eq!(loader.len(), batches.len());
        batches.iter().map(|(_, _, y)| y.len()).collect::<Vec<_>>()
    };
    assert_eq!(sizes(10, false), [4, 4, 2]);
    assert_eq!(sizes(10, true), [4, 4]);
    assert_eq!(sizes(8, false), [4, 4]);
    assert_eq!(sizes(8, true), [4, 4]);
    assert_eq!(sizes(3, true), Vec::<usize>::new());
    assert_eq!(sizes(0, false), Vec::<usize>::new());
    // Shuffled, drop_last leaves out the samples at the end of the epoch's order.
    let loader = DataLoader::new(Probe::new(10), Cpu)
        .batch_size(4)
        .shuffle(true)
        .drop_last(true)
        .num_workers(2);
    let batches = all_ok(loader.iter_epoch(0));
    let order = loader.epoch_order(0);
    assert_eq!(batches, [expected(&order[0..4]), expected(&order[4..8])]);
}

#[test]
fn any_number_of_workers_gives_the_same_batches() {
    let run = |workers: usize, prefetch: Option<usize>| {
        let probe = Probe {
            len: 47,
            delay: Duration::from_micros(200),
            ..Probe::default()
        };
        let mut loader = DataLoader::new(probe, Cpu)
            .batch_size(3)
            .shuffle(true)
            .seed(5)
            .num_workers(workers);
        if let Some(depth) = prefetch {
            loader = loader.prefetch(depth);
        }
        (0..2)
            .map(|e| all_ok(loader.iter_epoch(e)))
            .collect::<Vec<_>>()
    };
    let inline = run(0, None);
    assert_eq!(inline[0].len(), 16);
    for epoch in &inline {
        let order: Vec<usize> = epoch
            .iter()
            .flat_map(|(_, _, y)| y.iter().map(|&v| v as usize))
            .collect();
        for (batch, rows) in epoch.iter().zip(order.chunks(3)) {
            assert_eq!(*batch, expected(rows));
        }
    }
    for (workers, prefetch) in [
        (1, None),
        (3, None),
        (3, Some(1)),
        (3, Some(0)),
        (3, Some(50)),
    ] {
        assert_eq!(
            run(workers, prefetch),
            inline,
            "{workers} workers, prefetch {prefetch:?}"
        );
    }
}

#[test]
fn prefetch_bounds_how_far_workers_read_ahead() {
    let probe = Probe::new(100);
    let reads = Arc::clone(&probe.reads);
    let loader = DataLoader::new(probe, Cpu)
        .batch_size(2)
        .num_workers(2)
        .prefetch(3);
    let mut batches = loader.iter();
    batches.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // Batch 0 was taken; batches 1..=3 are prepared meanwhile, no more: 4 batches, 8 reads.
    assert_eq!(reads.load(Ordering::SeqCst), 8);
    batches.next().unwrap().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(reads.load(Ordering::SeqCst), 10, "batch 4 follows batch 1");
}

#[test]
fn a_dataset_error_is_the_err_of_its_batch_and_iteration_goes_on() {
    for workers in [0, 1, 3] {
        let probe = Probe {
            len: 30,
            fail_at: Some(13), // in batch 3 (samples 12..16)
            ..Probe::default()
        };
        let loader = DataLoader::new(probe, Cpu)
            .batch_size(4)
            .num_workers(workers);
        let items: Vec<_> = within(Duration::from_secs(60), move || loader.iter().collect());
        assert_eq!(items.len(), 8, "{workers} workers");
        for (b, item) in items.into_iter().enumerate() {
            if b == 3 {
                let error = item.expect_err("batch 3 fails");
                assert_eq!(
                    error.to_string(),
                    "data file probe: sample 13 is unreadable",
                    "{workers} workers"
                );
            } else {
                let rows: Vec<usize> = (4 * b..(4 * b + 4).min(30)).collect();
                assert_eq!(plain(item.unwrap()), expected(&rows), "{workers} workers");
            }
        }
    }
}

#[test]
fn a_panicking_dataset_is_an_err_not_a_hang() {
    for workers in [0, 1, 3] {
        let probe = Probe {
            len: 20,
            panic_at: Some(6), // in batch 1 (samples 5..10)
            ..Probe::default()
        };
        let loader = DataLoader::new(probe, Cpu)
            .batch_size(5)
            .num_workers(workers);
        let items: Vec<_> = within(Duration::from_secs(60), move || loader.iter().collect());
        assert_eq!(items.len(), 4, "{workers} workers");
        for (b, item) in items.into_iter().enumerate() {
            if b == 1 {
                match item {
                    Err(Error::DataLoaderPanicked { batch, message }) => {
                        assert_eq!((batch, message.as_str()), (1, "probe panicked at sample 6"));
                    }
                    other => panic!("expected the caught panic, got {:?}", other.map(plain)),
                }
            } else {
                let rows: Vec<usize> = (5 * b..5 * b + 5).collect();
                assert_eq!(plain(item.unwrap()), expected(&rows), "{workers} workers");
            }
        }
    }
}

#[test]
fn a_failing_or_panicking_collate_is_the_err_of_its_batch() {
    for workers in [0, 2] {
        let loader = DataLoader::new(Probe::new(9), Cpu)
            .batch_size(3)
            .num_workers(workers)
            .collate(|samples: Vec<(Tensor<Cpu>, Tensor<Cpu, i64>)>| {
                let first = samples[0].1.item();
                if first == 3 {
                    return Err(Error::Shape(format!("cannot collate from sample {first}")));
                }
                if first == 6 {
                    panic!("collate gave up at sample {first}");
                }
                Ok(samples.len())
            });
        let items: Vec<_> = within(Duration::from_secs(60), move || loader.iter().collect());
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], Ok(3));
        assert_eq!(
            items[1],
            Err(Error::Shape("cannot collate from sample 3".into()))
        );
        assert_eq!(
            items[2],
            Err(Error::DataLoaderPanicked {
                batch: 2,
                message: "collate gave up at sample 6".into()
            })
        );
    }
}

#[test]
fn dropping_the_batches_mid_epoch_stops_and_joins_the_workers() {
    let probe = Probe {
        len: 400,
        delay: Duration::from_millis(5),
        ..Probe::default()
    };
    let (reads, live) = (Arc::clone(&probe.reads), Arc::clone(&probe.live_threads));
    let loader = DataLoader::new(probe, Cpu)
        .batch_size(8)
        .num_workers(3)
        .prefetch(6);
    let mut batches = loader.iter();
    assert_eq!(
        plain(batches.next().unwrap().unwrap()),
        expected(&(0..8).collect::<Vec<_>>())
    );
    assert!(live.load(Ordering::SeqCst) > 0, "the workers are running");
    let start = Instant::now();
    drop(batches);
    let took = start.elapsed();
    // Each worker finishes at most the sample it is reading (at most 15 ms here).
    assert!(took < Duration::from_secs(1), "dropping took {took:?}");
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "every worker thread has ended"
    );
    let after = reads.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        reads.load(Ordering::SeqCst),
        after,
        "no read after the drop"
    );
    assert!(
        after < 400,
        "the epoch was not read to its end ({after} reads)"
    );
    // The loader itself is still usable.
    assert_eq!(loader.iter().len(), 50);
}

#[test]
fn the_workers_end_with_the_epoch() {
    let probe = Probe::new(12);
    let live = Arc::clone(&probe.live_threads);
    let loader = DataLoader::new(probe, Cpu).batch_size(4).num_workers(3);
    let mut batches = loader.iter();
    assert_eq!(batches.len(), 3);
    for _ in 0..3 {
        batches.next().unwrap().unwrap();
    }
    assert!(batches.next().is_none());
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "no thread waits past the epoch"
    );
    assert!(batches.next().is_none());
    // Dropping the loader with a fresh epoch not yet read stops its workers too.
    let epoch = loader.iter();
    drop(loader);
    drop(epoch);
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

#[test]
fn default_collate_stacks_tensors_numbers_and_tuples() {
    struct Mixed;
    impl MapDataset for Mixed {
        type Sample = (Tensor<Cpu>, usize, f64, bool);
        fn len(&self) -> usize {
            5
        }
        fn get(&self, i: usize) -> devtype::Result<Self::Sample> {
            let t = Tensor::try_from_vec(vec![i as f32; 6], [2, 3], Cpu)?;
            Ok((t, 2 * i, i as f64 / 2.0, i.is_multiple_of(2)))
        }
    }
    let loader = DataLoader::new(Mixed, Cpu).batch_size(3);
    let mut batches = loader.iter();
    // The types are part of the test: the batch is typed on the loader's device.
    type Batch = (
        Tensor<Cpu>,
        Tensor<Cpu, i64>,
        Tensor<Cpu, f64>,
        Tensor<Cpu, bool>,
    );
    let (x, index, half, even): Batch = batches.next().unwrap().unwrap();
    assert_eq!(x.shape(), &[3, 2, 3]);
    assert_eq!(x.to_vec(), [[0.0f32; 6], [1.0; 6], [2.0; 6]].concat());
    assert_eq!(index.to_vec(), [0, 2, 4]);
    assert_eq!(half.to_vec(), [0.0, 0.5, 1.0]);
    assert_eq!(even.to_vec(), [true, false, true]);
    let (x, index, ..) = batches.next().unwrap().unwrap();
    assert_eq!((x.shape(), index.to_vec()), (&[2, 2, 3][..], vec![6, 8]));
    assert!(batches.next().is_none());
}

#[test]
fn a_custom_collate_can_return_any_batch_that_moves() {
    // Inputs only, as a Vec of per-sample tensors plus the batch's size.
    let loader = DataLoader::new(Probe::new(5), Cpu).batch_size(2).collate(
        |samples: Vec<(Tensor<Cpu>, Tensor<Cpu, i64>)>| {
            let n = Tensor::try_from_vec(vec![samples.len() as i64], [1], Cpu)?;
            Ok((samples.into_iter().map(|(x, _)| x).collect::<Vec<_>>(), n))
        },
    );
    type Batch = (Vec<Tensor<Cpu>>, Tensor<Cpu, i64>);
    let batches: Vec<Batch> = loader.iter().collect::<devtype::Result<_>>().unwrap();
    let sizes: Vec<i64> = batches.iter().map(|(_, n)| n.item()).collect();
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(batches[2].0[0].to_vec(), [4.0, 40.0]);
}

#[test]
fn a_shared_dataset_can_be_loaded_twice() {
    let data = Arc::new(Probe::new(6));
    let a = DataLoader::new(Arc::clone(&data), Cpu).batch_size(6);
    let b = DataLoader::new(data, Cpu).batch_size(3).num_workers(1);
    assert_eq!(all_ok(&a), [expected(&[0, 1, 2, 3, 4, 5])]);
    assert_eq!(all_ok(&b), [expected(&[0, 1, 2]), expected(&[3, 4, 5])]);
}

#[test]
#[should_panic(expected = "batch_size should be a positive integer value, but got batch_size=0")]
fn a_batch_size_of_zero_is_refused() {
    let _ = DataLoader::new(Probe::new(3), Cpu).batch_size(0);
}
