//! `DataLoader` at the limits: absurd worker counts, read-ahead depths, data set and batch
//! sizes either give the right batches or an `Err`, promptly; none may abort the process.
//! Each such case runs in a child process (this test binary run again with one case), so an
//! abort or a hang fails that case alone instead of killing the test run. Then a property test:
//! for random settings, the loader yields exactly the batches its definition says.

mod common;

use common::Rng;
use devtype::data::{DataLoader, MapDataset, MAX_WORKERS};
use devtype::prelude::*;
use devtype::Error;
use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child process to the name of the case it runs.
const CHILD_ENV: &str = "DEVTYPE_LOADER_LIMITS_CASE";
/// Printed by a child whose case finished.
const DONE: &str = "loader-limits-case-done";

/// `len` generated samples: sample `i` is the number `i` (nothing is stored).
struct Counting(usize);

impl MapDataset for Counting {
    type Sample = usize;

    fn len(&self) -> usize {
        self.0
    }

    fn get(&self, i: usize) -> devtype::Result<usize> {
        assert!(i < self.0, "the loader asked for sample {i} of {}", self.0);
        Ok(i)
    }
}

/// The first `n` batches of `loader` (of [`Counting`]) as index lists.
fn first<D: MapDataset<Sample = usize>>(
    loader: &DataLoader<Cpu, D>,
    n: usize,
) -> Vec<devtype::Result<Vec<i64>>> {
    loader
        .iter()
        .take(n)
        .map(|batch| batch.map(|b| b.to_vec()))
        .collect()
}

fn ok_batches(batches: Vec<devtype::Result<Vec<i64>>>) -> Vec<Vec<i64>> {
    batches.into_iter().map(|b| b.expect("a batch")).collect()
}

/// `0..len` in batches of `size`, the last one partial.
fn in_order(len: i64, size: i64) -> Vec<Vec<i64>> {
    (0..len)
        .step_by(size as usize)
        .map(|s| (s..(s + size).min(len)).collect())
        .collect()
}

/// A shuffled epoch too large for memory: the order's `Vec` cannot be had on any machine for
/// `usize::MAX / 4` samples (it is past `isize::MAX` bytes), and 2^40 samples (8 TiB) not
/// here, unless the kernel hands out any amount of memory (overcommit mode 1).
fn shuffled_lengths() -> Vec<usize> {
    let always_overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .map(|mode| mode.trim() == "1")
        .unwrap_or(false);
    let mut lengths = vec![usize::MAX / 4];
    if !always_overcommit && cfg!(target_pointer_width = "64") {
        lengths.push(1 << 40);
    }
    lengths
}

/// The cases, each run alone in a child process by [`every_limit_case_returns_promptly`].
fn run_case(case: &str) {
    match case {
        "huge_prefetch" => {
            for prefetch in [1 << 40, usize::MAX] {
                let loader = DataLoader::new(Counting(10), Cpu)
                    .batch_size(3)
                    .num_workers(2)
                    .prefetch(prefetch);
                assert_eq!(ok_batches(first(&loader, 10)), in_order(10, 3));
            }
        }
        "huge_num_workers" => {
            // The default read-ahead, 2 * num_workers, overflowed; the workers' list reserved
            // num_workers slots.
            for workers in [1 << 40, usize::MAX] {
                let loader = DataLoader::new(Counting(10), Cpu)
                    .batch_size(4)
                    .num_workers(workers);
                assert_eq!(ok_batches(first(&loader, 10)), in_order(10, 4));
                let loader = loader.prefetch(1);
                assert_eq!(ok_batches(first(&loader, 10)), in_order(10, 4));
            }
        }
        "huge_dataset_in_order" => {
            // 2^40 samples without shuffling: the order is counted, not stored, and the
            // workers started are bounded (MAX_WORKERS), not the requested count.
            for workers in [0, 3, 1 << 40] {
                let loader = DataLoader::new(Counting(1 << 40), Cpu)
                    .batch_size(4)
                    .num_workers(workers)
                    .prefetch(1 << 40);
                assert_eq!(loader.len(), 1 << 38);
                assert_eq!(ok_batches(first(&loader, 3)), in_order(12, 4));
            }
            let last = DataLoader::new(Counting(usize::MAX), Cpu).batch_size(1);
            assert_eq!(last.len(), usize::MAX);
            assert_eq!(ok_batches(first(&last, 2)), [vec![0], vec![1]]);
        }
        "huge_dataset_shuffled" => {
            for len in shuffled_lengths() {
                for workers in [0, 2] {
                    let loader = DataLoader::new(Counting(len), Cpu)
                        .batch_size(8)
                        .shuffle(true)
                        .num_workers(workers);
                    let mut epoch = loader.iter();
                    assert_eq!(epoch.len(), 1);
                    let item = epoch.next().expect("the epoch's error");
                    assert!(
                        matches!(item, Err(Error::CpuOutOfMemory { .. })),
                        "{len} samples shuffled: {:?}",
                        item.map(|b| b.numel())
                    );
                    assert!(epoch.next().is_none());
                    assert!(matches!(
                        loader.try_epoch_order(0),
                        Err(Error::CpuOutOfMemory { .. })
                    ));
                }
            }
        }
        "huge_batch" => {
            // One batch of 2^62 samples: its list of samples cannot be reserved.
            for workers in [0, 2] {
                let loader = DataLoader::new(Counting(1 << 62), Cpu)
                    .batch_size(1 << 62)
                    .num_workers(workers);
                let batches = first(&loader, 2);
                assert_eq!(batches.len(), 1);
                assert!(
                    matches!(batches[0], Err(Error::CpuOutOfMemory { .. })),
                    "{:?}",
                    batches[0]
                );
            }
            // Positions near usize::MAX: the second batch's end is past it.
            let loader = DataLoader::new(Counting(usize::MAX), Cpu).batch_size((1 << 63) + 1);
            assert_eq!(loader.len(), 2);
            let batches = loader.iter().collect::<Vec<_>>();
            assert_eq!(batches.len(), 2);
            for batch in batches {
                assert!(
                    matches!(batch, Err(Error::CpuOutOfMemory { .. })),
                    "{:?}",
                    batch.map(|b| b.numel())
                );
            }
        }
        other => panic!("no case {other}"),
    }
}

/// Runs [`run_case`] when this process is a child started for one case.
#[test]
fn child_case() {
    if let Ok(case) = std::env::var(CHILD_ENV) {
        run_case(&case);
        println!("{DONE}");
    }
}

#[test]
fn every_limit_case_returns_promptly() {
    let limit = Duration::from_secs(120);
    let mut failures = Vec::new();
    for case in [
        "huge_prefetch",
        "huge_num_workers",
        "huge_dataset_in_order",
        "huge_dataset_shuffled",
        "huge_batch",
    ] {
        let out_path = std::env::temp_dir().join(format!(
            "devtype-loader-limits-{}-{case}.out",
            std::process::id()
        ));
        let out = std::fs::File::create(&out_path).expect("a temporary file");
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--exact", "child_case", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, case)
            .stdout(out.try_clone().expect("the file again"))
            .stderr(out)
            .spawn()
            .expect("run this test binary again");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child's status") {
                break Some(status);
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let output = std::fs::read_to_string(&out_path).unwrap_or_default();
        let _ = std::fs::remove_file(&out_path);
        match status {
            Some(status) if status.success() && output.contains(DONE) => {}
            Some(status) => {
                failures.push(format!("{case}: the child ended with {status}:\n{output}"))
            }
            None => failures.push(format!("{case}: no result within {limit:?}:\n{output}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The shuffled order of the loader's definition: Fisher-Yates driven by SplitMix64 from
/// `mix(mix(seed) ^ epoch * 0xA0761D6478BD642F)`, each swap partner in `0..=i` by a
/// multiply-shift.
fn reference_order(len: usize, shuffle: bool, seed: u64, epoch: u64) -> Vec<usize> {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    let mut order: Vec<usize> = (0..len).collect();
    if shuffle {
        let mut state = mix(mix(seed) ^ epoch.wrapping_mul(0xA076_1D64_78BD_642F));
        for i in (1..len).rev() {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let j = ((u128::from(mix(state)) * (i as u128 + 1)) >> 64) as usize;
            order.swap(i, j);
        }
    }
    order
}

#[test]
fn random_settings_give_exactly_the_defined_batches() {
    let mut rng = Rng::new("random_settings_give_exactly_the_defined_batches");
    for round in 0..60 {
        let len = rng.pick(&[0, 1, 2, 7, 16, 33, 100]) + rng.below(3);
        let batch_size = rng.pick(&[1, 2, 3, 5, 8, 64, usize::MAX]);
        let drop_last = rng.chance(0.5);
        let shuffle = rng.chance(0.5);
        let seed = rng.next_u64();
        let workers = rng.pick(&[0, 0, 1, 2, 3, 7, MAX_WORKERS + 1, usize::MAX]);
        let prefetch = rng.pick(&[
            None,
            Some(0),
            Some(1),
            Some(3),
            Some(1 << 40),
            Some(usize::MAX),
        ]);
        let settings = format!(
            "round {round}: len {len}, batch_size {batch_size}, drop_last {drop_last}, \
             shuffle {shuffle}, seed {seed}, workers {workers}, prefetch {prefetch:?}"
        );
        let mut loader = DataLoader::new(Counting(len), Cpu)
            .batch_size(batch_size)
            .drop_last(drop_last)
            .shuffle(shuffle)
            .seed(seed)
            .num_workers(workers);
        if let Some(depth) = prefetch {
            loader = loader.prefetch(depth);
        }
        for epoch in 0..2u64 {
            let order = reference_order(len, shuffle, seed, epoch);
            let mut expected: Vec<Vec<i64>> = order
                .chunks(batch_size.min(len.max(1)))
                .map(|rows| rows.iter().map(|&i| i as i64).collect())
                .collect();
            if drop_last && !len.is_multiple_of(batch_size) {
                expected.pop();
            }
            assert_eq!(loader.len(), expected.len(), "{settings}");
            let got: Vec<Vec<i64>> = loader
                .iter_epoch(epoch)
                .map(|b| b.expect("a batch").to_vec())
                .collect();
            assert_eq!(got, expected, "{settings}, epoch {epoch}");
            assert_eq!(loader.epoch_order(epoch), order, "{settings}");
            // Every index once per epoch (all of them unless drop_last dropped a tail).
            let seen: HashSet<i64> = got.iter().flatten().copied().collect();
            let count: usize = got.iter().map(Vec::len).sum();
            assert_eq!(seen.len(), count, "{settings}: an index came twice");
            let kept = if drop_last {
                len - len % batch_size
            } else {
                len
            };
            assert_eq!(count, kept, "{settings}");
        }
    }
}

#[test]
fn generating_too_many_spirals_is_an_err() {
    // 2 * points overflowed; 2^40 points reserved 8 TiB at once (an abort, not an Err).
    for points in [usize::MAX, 1 << 62, 1 << 40] {
        assert!(
            matches!(
                devtype::data::try_spirals(points, 1),
                Err(Error::CpuOutOfMemory { .. })
            ),
            "{points}"
        );
    }
    let small = devtype::data::try_spirals(7, 3).expect("seven points");
    let same = devtype::data::spirals(7, 3);
    assert_eq!(small.inputs.to_vec(), same.inputs.to_vec());
    assert_eq!(small.labels.to_vec(), [0, 1, 2, 0, 1, 2, 0]);
}

#[test]
fn a_usize_sample_past_i64_is_an_err_not_a_clamped_label() {
    // The default collate turned usize::MAX into i64::MAX: a wrong label, silently.
    struct Big;
    impl MapDataset for Big {
        type Sample = usize;
        fn len(&self) -> usize {
            3
        }
        fn get(&self, i: usize) -> devtype::Result<usize> {
            Ok(if i == 1 { usize::MAX } else { i })
        }
    }
    let loader = DataLoader::new(Big, Cpu).batch_size(2);
    let batches: Vec<_> = loader.iter().collect();
    assert_eq!(
        batches[0].as_ref().unwrap_err().to_string(),
        "Overflow when unpacking long"
    );
    assert_eq!(batches[1].as_ref().unwrap().to_vec(), [2]);
}
