//! A labelled data set held on the host, from which training batches are picked.

use crate::core::error::Result;
use crate::device::Cpu;
use crate::tensor::Tensor;

/// Inputs and their class labels on the host, one row of `inputs` per label.
///
/// The data set stays on the CPU; pick a batch with [`batch`](Self::batch) and move it to the
/// device inside the training loop (`let x = x.to(dev);`).
#[derive(Clone)]
pub struct Dataset {
    /// `[n, features]`: one example per row.
    pub inputs: Tensor<Cpu, f32>,
    /// `[n]`: the class of each row, in `0..classes`.
    pub labels: Tensor<Cpu, i64>,
    /// The number of classes (the width of a classifier's output).
    pub classes: usize,
}

impl Dataset {
    /// The number of examples.
    pub fn len(&self) -> usize {
        self.labels.numel()
    }

    /// True when there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of values in one example (the width of `inputs`).
    pub fn features(&self) -> usize {
        self.inputs.shape().get(1).copied().unwrap_or(0)
    }

    /// The examples at `rows` (in that order) and their labels, as new host tensors of shape
    /// `[rows.len(), features]` and `[rows.len()]`. A row outside `0..len()` is an error.
    pub fn try_batch(&self, rows: &[usize]) -> Result<(Tensor<Cpu, f32>, Tensor<Cpu, i64>)> {
        let index: Vec<i64> = rows
            .iter()
            .map(|&row| i64::try_from(row).unwrap_or(i64::MAX))
            .collect();
        let index = Tensor::try_from_vec(index, [rows.len()], Cpu)?;
        Ok((
            self.inputs.try_index_select(0, &index)?,
            self.labels.try_index_select(0, &index)?,
        ))
    }

    /// The examples at `rows` (in that order) and their labels, as new host tensors of shape
    /// `[rows.len(), features]` and `[rows.len()]`.
    ///
    /// Panics with the error's text where [`try_batch`](Self::try_batch) returns it.
    #[track_caller]
    pub fn batch(&self, rows: &[usize]) -> (Tensor<Cpu, f32>, Tensor<Cpu, i64>) {
        match self.try_batch(rows) {
            Ok(batch) => batch,
            Err(error) => panic!("{error}"),
        }
    }

    /// The first `n` examples and the rest (views, nothing is copied), for a held-out split.
    /// `n` greater than [`len`](Self::len) is an error.
    pub fn try_split_at(&self, n: usize) -> Result<(Dataset, Dataset)> {
        let rest = self.len().saturating_sub(n);
        let part = |start: usize, len: usize| -> Result<Dataset> {
            Ok(Dataset {
                inputs: self.inputs.try_narrow(0, start, len)?,
                labels: self.labels.try_narrow(0, start, len)?,
                classes: self.classes,
            })
        };
        Ok((part(0, n)?, part(n, rest)?))
    }

    /// The first `n` examples and the rest (views, nothing is copied), for a held-out split.
    ///
    /// Panics with the error's text where [`try_split_at`](Self::try_split_at) returns it.
    #[track_caller]
    pub fn split_at(&self, n: usize) -> (Dataset, Dataset) {
        match self.try_split_at(n) {
            Ok(parts) => parts,
            Err(error) => panic!("{error}"),
        }
    }
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("len", &self.len())
            .field("features", &self.features())
            .field("classes", &self.classes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four_rows() -> Dataset {
        Dataset {
            inputs: Tensor::from_vec((0..8).map(|v| v as f32).collect(), [4, 2], Cpu),
            labels: Tensor::from_vec(vec![0, 1, 2, 0], [4], Cpu),
            classes: 3,
        }
    }

    #[test]
    fn a_batch_picks_rows_in_order() {
        let (x, y) = four_rows().batch(&[3, 0]);
        assert_eq!(x.shape(), &[2, 2]);
        assert_eq!(x.to_vec(), [6.0, 7.0, 0.0, 1.0]);
        assert_eq!(y.to_vec(), [0, 0]);
        assert!(four_rows().try_batch(&[4]).is_err());
    }

    #[test]
    fn a_split_keeps_every_row_once() {
        let (head, tail) = four_rows().split_at(3);
        assert_eq!((head.len(), tail.len(), tail.features()), (3, 1, 2));
        assert_eq!(tail.inputs.to_vec(), [6.0, 7.0]);
        assert_eq!(tail.batch(&[0]).1.to_vec(), [0]);
        assert!(four_rows().try_split_at(5).is_err());
    }
}
