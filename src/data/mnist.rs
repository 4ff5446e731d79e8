//! MNIST, the handwritten digits, from the four IDX files of a folder the user names.
//!
//! The folder holds `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
//! `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, unpacked (the files are distributed
//! gzipped). devtype downloads nothing.

use super::idx::{data_file_error, read_idx};
use super::Dataset;
use crate::core::error::Result;
use crate::device::Cpu;
use crate::tensor::Tensor;
use std::path::{Path, PathBuf};

/// One of MNIST's two splits, which name its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MnistSplit {
    /// The 60,000 training images: `train-*` files.
    Train,
    /// The 10,000 test images: `t10k-*` files.
    Test,
}

impl MnistSplit {
    /// The file name of the split's images: `train-images-idx3-ubyte` or `t10k-images-idx3-ubyte`.
    pub fn images_file(self) -> &'static str {
        match self {
            MnistSplit::Train => "train-images-idx3-ubyte",
            MnistSplit::Test => "t10k-images-idx3-ubyte",
        }
    }

    /// The file name of the split's labels: `train-labels-idx1-ubyte` or `t10k-labels-idx1-ubyte`.
    pub fn labels_file(self) -> &'static str {
        match self {
            MnistSplit::Train => "train-labels-idx1-ubyte",
            MnistSplit::Test => "t10k-labels-idx1-ubyte",
        }
    }
}

/// MNIST's training and test splits on the host.
#[derive(Debug, Clone)]
pub struct Mnist {
    /// The training split (`train-*` files).
    pub train: Dataset,
    /// The test split (`t10k-*` files).
    pub test: Dataset,
}

impl Mnist {
    /// The number of classes: the digits `0..=9`.
    pub const CLASSES: usize = 10;

    /// Loads both splits from the folder `dir` (see [`load_split`](Self::load_split)).
    pub fn load(dir: impl AsRef<Path>) -> Result<Mnist> {
        let dir = dir.as_ref();
        Ok(Mnist {
            train: Self::load_split(dir, MnistSplit::Train)?,
            test: Self::load_split(dir, MnistSplit::Test)?,
        })
    }

    /// Loads one split from the folder `dir`: `inputs` of shape `[n, rows * cols]` (`[n, 784]`
    /// for MNIST) with each pixel scaled from `0..=255` to `[0, 1]`, `labels` of shape `[n]`,
    /// ten classes.
    ///
    /// Every problem is an [`Error::DataFile`](crate::Error::DataFile) naming the file: a
    /// missing file, a malformed IDX file (see [`read_idx`](super::read_idx)), images that are
    /// not `[n, rows, cols]` or labels that are not `[n]`, a number of images other than the
    /// number of labels, or a label outside `0..=9`.
    pub fn load_split(dir: impl AsRef<Path>, split: MnistSplit) -> Result<Dataset> {
        let dir = dir.as_ref();
        let images_path = dir.join(split.images_file());
        let labels_path = dir.join(split.labels_file());
        check_unpacked(&images_path)?;
        check_unpacked(&labels_path)?;
        let images = read_idx(&images_path)?;
        let labels = read_idx(&labels_path)?;

        let &[count, rows, cols] = images.dims.as_slice() else {
            return Err(data_file_error(
                &images_path,
                format!(
                    "MNIST images must have 3 dimensions [n, rows, cols], found {:?}",
                    images.dims
                ),
            ));
        };
        let &[label_count] = labels.dims.as_slice() else {
            return Err(data_file_error(
                &labels_path,
                format!(
                    "MNIST labels must have 1 dimension [n], found {:?}",
                    labels.dims
                ),
            ));
        };
        if label_count != count {
            return Err(data_file_error(
                &labels_path,
                format!(
                    "holds {label_count} label(s), but {} holds {count} image(s)",
                    images_path.display()
                ),
            ));
        }
        if let Some(position) = labels.values.iter().position(|&label| label > 9) {
            return Err(data_file_error(
                &labels_path,
                format!(
                    "label {} at position {position} is outside 0..=9",
                    labels.values[position]
                ),
            ));
        }

        let pixels_per_image = rows.checked_mul(cols).ok_or_else(|| {
            data_file_error(
                &images_path,
                format!("images of {rows}x{cols} pixels overflow usize"),
            )
        })?;
        let pixels = images
            .values
            .iter()
            .map(|&pixel| f32::from(pixel) / 255.0)
            .collect();
        let labels = labels
            .values
            .iter()
            .map(|&label| i64::from(label))
            .collect();
        Ok(Dataset {
            inputs: Tensor::try_from_vec(pixels, [count, pixels_per_image], Cpu)?,
            labels: Tensor::try_from_vec(labels, [count], Cpu)?,
            classes: Self::CLASSES,
        })
    }
}

/// When `path` is missing but its gzipped form is there, an error that says to unpack it. Any
/// other problem is left to [`read_idx`], whose error carries the I/O error.
fn check_unpacked(path: &Path) -> Result<()> {
    let mut gzipped = path.as_os_str().to_owned();
    gzipped.push(".gz");
    let gzipped = PathBuf::from(gzipped);
    if !path.exists() && gzipped.exists() {
        return Err(data_file_error(
            path,
            format!(
                "missing, but {} is there: unpack it first with `gunzip`",
                gzipped.display()
            ),
        ));
    }
    Ok(())
}
