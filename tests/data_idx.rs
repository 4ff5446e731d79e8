//! The IDX reader and the MNIST loader against small files written here: every value read back
//! equals the byte written, and every malformed file is an `Err` that names the file.

use devtype::data::{read_idx, Mnist, MnistSplit};
use devtype::Error;
use std::path::{Path, PathBuf};

mod common;

// Seeded random contents, so a reader that mixes up rows or bytes is caught.
use common::Rng;

/// A folder of its own under the system's temp dir, removed when dropped.
struct TempFolder(PathBuf);

impl TempFolder {
    fn new(test: &str) -> TempFolder {
        let path =
            std::env::temp_dir().join(format!("devtype-data-idx-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temp folder");
        TempFolder(path)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write a test file");
        path
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An IDX file of unsigned bytes: magic number, big-endian sizes, values.
fn idx(dims: &[u32], values: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0, 0, 0x08, dims.len() as u8];
    for size in dims {
        bytes.extend_from_slice(&size.to_be_bytes());
    }
    bytes.extend_from_slice(values);
    bytes
}

/// The bytes written for one split: pixels `[n * rows * cols]`, labels `[n]`.
struct SplitBytes {
    pixels: Vec<u8>,
    labels: Vec<u8>,
}

/// Writes MNIST's four files with random contents: `train` and `test` images of 28x28.
fn write_mnist(folder: &TempFolder, seed: u64, train: usize, test: usize) -> [SplitBytes; 2] {
    let mut random = Rng(seed);
    [(MnistSplit::Train, train), (MnistSplit::Test, test)].map(|(split, count)| {
        let pixels = random.bytes(count * 28 * 28, 256);
        let labels = random.bytes(count, 10);
        folder.write(split.images_file(), &idx(&[count as u32, 28, 28], &pixels));
        folder.write(split.labels_file(), &idx(&[count as u32], &labels));
        SplitBytes { pixels, labels }
    })
}

/// The error of loading the train split from `folder`, checked to be a `DataFile` naming
/// `file`; returns its message.
fn train_error(folder: &TempFolder, file: &Path) -> String {
    let error = Mnist::load_split(&folder.0, MnistSplit::Train).expect_err("a malformed file");
    assert!(matches!(error, Error::DataFile { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains(&file.display().to_string()),
        "the message does not name {}: {message}",
        file.display()
    );
    message
}

#[test]
fn every_value_read_back_equals_the_byte_written() {
    let folder = TempFolder::new("values");
    let written = write_mnist(&folder, 11, 50, 20);
    let mnist = Mnist::load(&folder.0).expect("a well-formed folder");
    for (split, bytes) in [(&mnist.train, &written[0]), (&mnist.test, &written[1])] {
        let count = bytes.labels.len();
        assert_eq!(split.inputs.shape(), &[count, 784]);
        assert_eq!(split.labels.shape(), &[count]);
        assert_eq!(
            (split.len(), split.features(), split.classes),
            (count, 784, 10)
        );
        let expected: Vec<f32> = bytes.pixels.iter().map(|&p| p as f32 / 255.0).collect();
        assert_eq!(split.inputs.to_vec(), expected);
        let expected: Vec<i64> = bytes.labels.iter().map(|&l| l as i64).collect();
        assert_eq!(split.labels.to_vec(), expected);
    }
    let pixels = mnist.train.inputs.to_vec();
    assert!(pixels.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(pixels.contains(&0.0) && pixels.contains(&1.0));
}

#[test]
fn read_idx_returns_the_header_dims_and_the_bytes() {
    let folder = TempFolder::new("read-idx");
    let mut random = Rng(5);
    for dims in [vec![], vec![17], vec![3, 5, 7], vec![2, 3, 1, 4]] {
        let values = random.bytes(dims.iter().product::<u32>() as usize, 256);
        let path = folder.write("array", &idx(&dims, &values));
        let array = read_idx(&path).expect("a well-formed file");
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        assert_eq!(array.dims, dims);
        assert_eq!(array.values, values);
    }
}

#[test]
fn a_missing_file_names_the_path_and_the_io_error() {
    let folder = TempFolder::new("missing");
    write_mnist(&folder, 1, 4, 2);
    let file = folder.0.join(MnistSplit::Train.labels_file());
    std::fs::remove_file(&file).unwrap();
    let message = train_error(&folder, &file);
    let io_error = std::fs::read(&file).unwrap_err().to_string();
    assert!(
        message.contains("cannot read it") && message.contains(&io_error),
        "{message}"
    );
}

#[test]
fn a_gzipped_file_is_named_with_the_fix() {
    let folder = TempFolder::new("gzipped");
    write_mnist(&folder, 2, 4, 2);
    let file = folder.0.join(MnistSplit::Train.images_file());
    std::fs::rename(&file, folder.0.join("train-images-idx3-ubyte.gz")).unwrap();
    let message = train_error(&folder, &file);
    assert!(message.contains("gunzip"), "{message}");
}

#[test]
fn a_bad_magic_number_is_an_error() {
    let folder = TempFolder::new("magic");
    write_mnist(&folder, 3, 4, 2);
    let mut bytes = idx(&[4, 28, 28], &[0; 4 * 784]);
    bytes[0] = 0x1F; // a gzip header starts 0x1F 0x8B
    bytes[1] = 0x8B;
    let file = folder.write(MnistSplit::Train.images_file(), &bytes);
    let message = train_error(&folder, &file);
    assert!(message.contains("bad magic number 0x1F 0x8B"), "{message}");
}

#[test]
fn an_unsupported_type_code_is_an_error() {
    let folder = TempFolder::new("type-code");
    write_mnist(&folder, 4, 4, 2);
    let mut bytes = idx(&[4], &[0; 16]);
    bytes[2] = 0x0D; // 32-bit float
    let file = folder.write(MnistSplit::Train.labels_file(), &bytes);
    let message = train_error(&folder, &file);
    assert!(
        message.contains("unsupported IDX type code 0x0D (32-bit float)"),
        "{message}"
    );
}

#[test]
fn truncated_data_says_how_many_bytes_were_expected_and_found() {
    let folder = TempFolder::new("truncated");
    write_mnist(&folder, 5, 4, 2);
    let file = folder.write(
        MnistSplit::Train.images_file(),
        &idx(&[4, 28, 28], &Rng(6).bytes(4 * 784 - 1, 256)),
    );
    let message = train_error(&folder, &file);
    assert!(
        message.contains("truncated data") && message.contains("need 3136 byte(s)"),
        "{message}"
    );
    assert!(message.contains("found 3135"), "{message}");
}

#[test]
fn a_truncated_header_is_an_error() {
    let folder = TempFolder::new("truncated-header");
    write_mnist(&folder, 7, 4, 2);
    let file = folder.write(
        MnistSplit::Train.images_file(),
        &[0, 0, 0x08, 3, 0, 0, 0, 4],
    );
    let message = train_error(&folder, &file);
    assert!(message.contains("truncated header"), "{message}");
}

#[test]
fn header_dims_whose_product_overflows_are_an_error() {
    let folder = TempFolder::new("overflow");
    write_mnist(&folder, 8, 4, 2);
    let file = folder.write(
        MnistSplit::Train.images_file(),
        &idx(&[u32::MAX, u32::MAX, u32::MAX], &[1, 2, 3]),
    );
    let message = train_error(&folder, &file);
    assert!(message.contains("overflow"), "{message}");
}

#[test]
fn image_and_label_counts_must_agree() {
    let folder = TempFolder::new("counts");
    write_mnist(&folder, 9, 4, 2);
    let file = folder.write(MnistSplit::Train.labels_file(), &idx(&[3], &[1, 2, 3]));
    let message = train_error(&folder, &file);
    let images = folder.0.join(MnistSplit::Train.images_file());
    assert!(
        message.contains("holds 3 label(s)") && message.contains("holds 4 image(s)"),
        "{message}"
    );
    assert!(message.contains(&images.display().to_string()), "{message}");
}

#[test]
fn a_label_outside_0_to_9_is_an_error() {
    let folder = TempFolder::new("label-range");
    write_mnist(&folder, 10, 4, 2);
    let file = folder.write(MnistSplit::Train.labels_file(), &idx(&[4], &[3, 9, 10, 0]));
    let message = train_error(&folder, &file);
    assert!(
        message.contains("label 10 at position 2 is outside 0..=9"),
        "{message}"
    );
}

#[test]
fn images_must_have_three_dimensions() {
    let folder = TempFolder::new("image-rank");
    write_mnist(&folder, 12, 4, 2);
    let file = folder.write(
        MnistSplit::Train.images_file(),
        &idx(&[4, 784], &[0; 4 * 784]),
    );
    let message = train_error(&folder, &file);
    assert!(message.contains("3 dimensions"), "{message}");
}

#[test]
fn an_empty_split_loads_as_empty_tensors() {
    let folder = TempFolder::new("empty");
    write_mnist(&folder, 13, 0, 0);
    let mnist = Mnist::load(&folder.0).expect("empty files are well formed");
    assert_eq!(mnist.train.inputs.shape(), &[0, 784]);
    assert!(mnist.test.is_empty());
}
