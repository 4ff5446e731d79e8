//! The run-time device value, parsed and printed exactly as `torch.device`.

use crate::core::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Device types PyTorch accepts at the start of a device string.
const KNOWN_TYPES: &[&str] = &[
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Host,
    Gpu,
}

/// A device known only at run time: `cpu`, `cuda:0`, `cuda:1`, ...
///
/// Parsing and printing follow `torch.device`: `"cuda:0".parse()` works, `"cuda:01"`,
/// `"cuda: 0"` and `"cuda:-1"` are `Invalid device string`, and `"cuda"` (no index) is a device
/// of its own that tensors resolve to `cuda:0`, as PyTorch resolves it to the current device.
///
/// ```
/// use devtype::prelude::*;
/// let dev: DynDevice = "cuda:1".parse().unwrap();
/// assert_eq!(dev.to_string(), "cuda:1");
/// let err = "cuda:x".parse::<DynDevice>().unwrap_err();
/// assert_eq!(err.to_string(), "Invalid device string: 'cuda:x'");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DynDevice {
    kind: Kind,
    /// The index written in the string; `NO_INDEX` when there is none.
    index: u32,
}

const NO_INDEX: u32 = u32::MAX;

impl DynDevice {
    /// The CPU.
    pub const fn cpu() -> Self {
        DynDevice {
            kind: Kind::Host,
            index: NO_INDEX,
        }
    }

    /// The largest CUDA device index: PyTorch's `DeviceIndex` is an int8, so no process has a
    /// device past `cuda:127`, and `"cuda:128"` does not parse.
    pub const MAX_CUDA_INDEX: usize = i8::MAX as usize;

    /// GPU `index`.
    ///
    /// # Panics
    ///
    /// When `index` is past [`MAX_CUDA_INDEX`](Self::MAX_CUDA_INDEX) (it is never wrapped or
    /// clamped to another device); [`try_cuda`](Self::try_cuda) returns an `Err` instead.
    /// Inside a `const`, such an index is a compile error.
    #[track_caller]
    pub const fn cuda(index: usize) -> Self {
        match Self::checked_cuda(index) {
            Some(d) => d,
            None => panic!(
                "DynDevice::cuda: CUDA device indices go from 0 to 127; use DynDevice::try_cuda for an Err instead of this panic"
            ),
        }
    }

    /// GPU `index`, or [`Error::DeviceIndexOutOfRange`] when it is past
    /// [`MAX_CUDA_INDEX`](Self::MAX_CUDA_INDEX).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// assert_eq!(DynDevice::try_cuda(1).unwrap().to_string(), "cuda:1");
    /// assert!(DynDevice::try_cuda(300).is_err());
    /// ```
    pub const fn try_cuda(index: usize) -> Result<Self> {
        match Self::checked_cuda(index) {
            Some(d) => Ok(d),
            None => Err(Error::DeviceIndexOutOfRange {
                index,
                max: Self::MAX_CUDA_INDEX,
            }),
        }
    }

    const fn checked_cuda(index: usize) -> Option<Self> {
        if index > Self::MAX_CUDA_INDEX {
            return None;
        }
        Some(DynDevice {
            kind: Kind::Gpu,
            index: index as u32,
        })
    }

    /// True for the CPU (`cpu` or `cpu:N`).
    pub const fn is_cpu(&self) -> bool {
        matches!(self.kind, Kind::Host)
    }

    /// True for any CUDA device.
    pub const fn is_cuda(&self) -> bool {
        matches!(self.kind, Kind::Gpu)
    }

    /// The GPU index of a CUDA device (`cuda` without an index counts as 0), `None` on the CPU.
    pub const fn cuda_index(&self) -> Option<usize> {
        match (self.kind, self.index) {
            (Kind::Gpu, NO_INDEX) => Some(0),
            (Kind::Gpu, i) => Some(i as usize),
            (Kind::Host, _) => None,
        }
    }

    /// The index written in the string, if any (`cuda` and `cpu` have none).
    pub const fn index(&self) -> Option<usize> {
        if self.index == NO_INDEX {
            None
        } else {
            Some(self.index as usize)
        }
    }

    /// The device a tensor created on `self` lives on: `cuda` becomes `cuda:0`, `cpu:0` becomes
    /// `cpu`, as tensors in PyTorch always print.
    pub const fn resolved(self) -> Self {
        match self.kind {
            Kind::Host => DynDevice::cpu(),
            // Every stored index is at most MAX_CUDA_INDEX (checked where it is made).
            Kind::Gpu => match self.index {
                NO_INDEX => DynDevice {
                    kind: Kind::Gpu,
                    index: 0,
                },
                i => DynDevice {
                    kind: Kind::Gpu,
                    index: i,
                },
            },
        }
    }
}

impl Default for DynDevice {
    fn default() -> Self {
        DynDevice::cpu()
    }
}

impl fmt::Display for DynDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Kind::Host => "cpu",
            Kind::Gpu => "cuda",
        })?;
        match self.index() {
            Some(i) => write!(f, ":{i}"),
            None => Ok(()),
        }
    }
}

impl FromStr for DynDevice {
    type Err = Error;

    /// Follows `c10::Device::Device(const std::string&)`: the string must match
    /// `([a-zA-Z_]+)(?::([1-9]\d*|0))?` exactly.
    fn from_str(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Err(Error::EmptyDeviceString);
        }
        let invalid = || Error::InvalidDeviceString(s.to_string());
        let (type_part, index_part) = match s.split_once(':') {
            Some((t, i)) => (t, Some(i)),
            None => (s, None),
        };
        if type_part.is_empty()
            || !type_part
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || b == b'_')
        {
            return Err(invalid());
        }
        let index = match index_part {
            None => NO_INDEX,
            Some(digits) => {
                let well_formed = !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && (digits == "0" || !digits.starts_with('0'));
                if !well_formed {
                    return Err(invalid());
                }
                // PyTorch parses with std::stoi into an int8 `DeviceIndex`: anything past
                // MAX_CUDA_INDEX cannot be parsed (PyTorch would wrap it; devtype refuses).
                match digits.parse::<u32>() {
                    Ok(i) if i as usize <= Self::MAX_CUDA_INDEX => i,
                    _ => {
                        return Err(Error::DeviceIndexParse {
                            index: digits.to_string(),
                            string: s.to_string(),
                        })
                    }
                }
            }
        };
        let kind = match type_part {
            "cpu" => Kind::Host,
            "cuda" => Kind::Gpu,
            other if KNOWN_TYPES.contains(&other) => {
                return Err(Error::UnsupportedDeviceType(other.to_string()))
            }
            other => return Err(Error::UnknownDeviceType(other.to_string())),
        };
        Ok(DynDevice { kind, index })
    }
}

impl TryFrom<&str> for DynDevice {
    type Error = Error;
    fn try_from(s: &str) -> Result<Self> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_torch_device() {
        for (s, shown) in [
            ("cpu", "cpu"),
            ("cuda", "cuda"),
            ("cuda:0", "cuda:0"),
            ("cuda:12", "cuda:12"),
            ("cpu:0", "cpu:0"),
        ] {
            assert_eq!(s.parse::<DynDevice>().unwrap().to_string(), shown);
        }
        for bad in [
            "cuda:x", "cuda:", "cuda:01", "cuda: 0", "cuda:-1", "cuda:0:1", "  cuda", "cuda:+1",
        ] {
            assert_eq!(
                bad.parse::<DynDevice>().unwrap_err().to_string(),
                format!("Invalid device string: '{bad}'")
            );
        }
        assert_eq!(
            "".parse::<DynDevice>().unwrap_err().to_string(),
            "Device string must not be empty"
        );
        assert_eq!(
            "gpu".parse::<DynDevice>().unwrap_err().to_string(),
            "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu"
        );
        assert!(
            matches!("CUDA:0".parse::<DynDevice>(), Err(Error::UnknownDeviceType(t)) if t == "CUDA")
        );
        assert_eq!(
            "cuda:1000000000000"
                .parse::<DynDevice>()
                .unwrap_err()
                .to_string(),
            "Could not parse device index '1000000000000' in device string 'cuda:1000000000000'"
        );
        assert!(matches!(
            "mps".parse::<DynDevice>(),
            Err(Error::UnsupportedDeviceType(_))
        ));
    }

    #[test]
    fn equality_follows_torch() {
        let cuda: DynDevice = "cuda".parse().unwrap();
        let cuda0: DynDevice = "cuda:0".parse().unwrap();
        assert_ne!(cuda, cuda0);
        assert_eq!(cuda.resolved(), cuda0);
        assert_ne!("cpu:0".parse::<DynDevice>().unwrap(), DynDevice::cpu());
    }
}
