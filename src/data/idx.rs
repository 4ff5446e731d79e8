//! The IDX format, in which MNIST is distributed.
//!
//! An IDX file is a four-byte magic number (`0x00 0x00`, a type code, the number of
//! dimensions), the size of each dimension as a big-endian `u32`, then the values in row-major
//! order. devtype reads type code `0x08` (unsigned byte), the only one MNIST uses; every other
//! code, and every header that does not match the length of the file, is an
//! [`Error::DataFile`] naming the file.

use crate::core::error::{Error, Result};
use std::path::Path;

/// IDX's type code for unsigned bytes, the element type of MNIST's images and labels.
pub const IDX_UNSIGNED_BYTE: u8 = 0x08;

/// The contents of an IDX file of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// The size of each dimension, from the header: `[60000, 28, 28]` for MNIST's training
    /// images, `[60000]` for its labels.
    pub dims: Vec<usize>,
    /// The values in row-major order, as many as the product of `dims`.
    pub values: Vec<u8>,
}

/// Reads the IDX file at `path`.
///
/// A missing or unreadable file, a bad magic number, a type code other than `0x08`, header
/// sizes whose product overflows, and data shorter or longer than the header says are all
/// [`Error::DataFile`], whose message names the file.
pub fn read_idx(path: impl AsRef<Path>) -> Result<IdxArray> {
    let path = path.as_ref();
    let bytes = std::fs::read(path)
        .map_err(|error| data_file_error(path, format!("cannot read it: {error}")))?;
    parse_idx(&bytes, path)
}

/// Parses the bytes of an IDX file; `path` only names the file in errors.
///
/// ```
/// use devtype::data::parse_idx;
/// use std::path::Path;
/// // Magic number (unsigned bytes, 2 dimensions), the sizes 2 and 3, then 6 values.
/// let bytes = [0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 10, 11, 12, 20, 21, 22];
/// let array = parse_idx(&bytes, Path::new("in-memory"))?;
/// assert_eq!(array.dims, [2, 3]);
/// assert_eq!(array.values, [10, 11, 12, 20, 21, 22]);
/// assert!(parse_idx(&bytes[..17], Path::new("in-memory")).is_err()); // one byte short
/// # Ok::<(), devtype::Error>(())
/// ```
pub fn parse_idx(bytes: &[u8], path: &Path) -> Result<IdxArray> {
    let error = |message: String| data_file_error(path, message);
    let Some(&[zero_high, zero_low, type_code, rank]) = bytes.first_chunk::<4>() else {
        return Err(error(format!(
            "truncated header: an IDX file starts with a 4-byte magic number, found {} byte(s)",
            bytes.len()
        )));
    };
    if zero_high != 0 || zero_low != 0 {
        return Err(error(format!(
            "bad magic number 0x{zero_high:02X} 0x{zero_low:02X} 0x{type_code:02X} 0x{rank:02X}: \
             an IDX file starts with 0x00 0x00, then the type code and the number of dimensions \
             (is it still compressed? unpack it with `gunzip`)"
        )));
    }
    if type_code != IDX_UNSIGNED_BYTE {
        return Err(error(format!(
            "unsupported IDX type code 0x{type_code:02X} ({}): devtype reads only 0x08 (unsigned byte)",
            type_name(type_code)
        )));
    }
    let rank = usize::from(rank);
    let header_len = 4 + 4 * rank;
    let Some(size_bytes) = bytes.get(4..header_len) else {
        return Err(error(format!(
            "truncated header: {rank} dimension(s) need a {header_len}-byte header, found {} byte(s)",
            bytes.len()
        )));
    };
    let mut dims = Vec::with_capacity(rank);
    for size in size_bytes.chunks_exact(4) {
        let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]);
        let size = usize::try_from(size).map_err(|_| {
            error(format!(
                "header size {size} does not fit in this machine's usize"
            ))
        })?;
        dims.push(size);
    }
    let expected = dims
        .iter()
        .try_fold(1usize, |product, &size| product.checked_mul(size))
        .ok_or_else(|| {
            error(format!(
                "header dims {dims:?} overflow: their product does not fit in usize"
            ))
        })?;
    let data = &bytes[header_len..];
    if data.len() < expected {
        return Err(error(format!(
            "truncated data: header dims {dims:?} need {expected} byte(s) after the {header_len}-byte header, found {}",
            data.len()
        )));
    }
    if data.len() > expected {
        return Err(error(format!(
            "unexpected trailing data: header dims {dims:?} need {expected} byte(s) after the {header_len}-byte header, found {}",
            data.len()
        )));
    }
    Ok(IdxArray {
        dims,
        values: data.to_vec(),
    })
}

/// An [`Error::DataFile`] for `path`.
pub(super) fn data_file_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::DataFile {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// The element type the IDX format gives each type code.
fn type_name(type_code: u8) -> &'static str {
    match type_code {
        0x08 => "unsigned byte",
        0x09 => "signed byte",
        0x0B => "16-bit integer",
        0x0C => "32-bit integer",
        0x0D => "32-bit float",
        0x0E => "64-bit float",
        _ => "not an IDX type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<IdxArray> {
        parse_idx(bytes, Path::new("memory"))
    }

    #[test]
    fn reads_the_header_and_the_values() {
        let array = parse(&[0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9]).unwrap();
        assert_eq!(array.dims, [3]);
        assert_eq!(array.values, [7, 8, 9]);
        let scalar = parse(&[0, 0, 8, 0, 42]).unwrap();
        assert_eq!((scalar.dims.len(), scalar.values), (0, vec![42]));
    }

    #[test]
    fn every_malformed_header_is_an_error_naming_the_file() {
        let cases: [(&[u8], &str); 7] = [
            (&[0, 0], "truncated header"),
            (&[1, 0, 8, 1, 0, 0, 0, 1, 5], "bad magic number"),
            (
                &[0, 0, 0x0D, 1, 0, 0, 0, 1, 5],
                "unsupported IDX type code 0x0D",
            ),
            (&[0, 0, 8, 2, 0, 0, 0, 1], "truncated header"),
            (
                &[
                    0, 0, 8, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
                ],
                "overflow",
            ),
            (&[0, 0, 8, 1, 0, 0, 0, 3, 1, 2], "truncated data"),
            (&[0, 0, 8, 1, 0, 0, 0, 1, 1, 2], "trailing data"),
        ];
        for (bytes, expected) in cases {
            let message = parse(bytes).unwrap_err().to_string();
            assert!(message.starts_with("data file memory: "), "{message}");
            assert!(message.contains(expected), "{message}");
        }
    }
}
