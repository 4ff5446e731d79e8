//! What devtype's CPU kernels run on, on this machine: chosen once at run time from the CPU
//! (and, for AMX, the operating system's grant), never from the build. PyTorch reports the
//! same with `torch.backends.cpu.get_cpu_capability()`.

use std::fmt;

use crate::backend::cpu::vmath::{self, Width};
use crate::ops::matmul;

/// The vector instructions devtype's element-wise, reduction and small-product kernels are
/// compiled for on this CPU, named as PyTorch names its CPU capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VectorIsa {
    /// 512-bit AVX-512 (`"AVX512"`).
    Avx512,
    /// 256-bit AVX2 (`"AVX2"`).
    Avx2,
    /// The build's baseline, e.g. SSE2 on x86-64, or another architecture (`"DEFAULT"`).
    Default,
}

impl VectorIsa {
    /// PyTorch's name for it: `"AVX512"`, `"AVX2"` or `"DEFAULT"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            VectorIsa::Avx512 => "AVX512",
            VectorIsa::Avx2 => "AVX2",
            VectorIsa::Default => "DEFAULT",
        }
    }
}

/// How a `bf16` matrix product (`matmul`, `linear`, `bmm`, the convolutions, products under a
/// `bf16` autocast) runs on this CPU. Every way sums in `f32` and rounds each result once, so
/// the values are the same up to the order of the `f32` sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Bf16Matmul {
    /// On AMX's tile registers (`tdpbf16ps`): the CPU has AMX-BF16 and the OS granted this
    /// process the tile state (Intel Xeon, Sapphire Rapids and later).
    AmxTiles,
    /// With AVX512-BF16's `vdpbf16ps` (AMD's cores that have it, where it runs at twice the
    /// `f32` FMA rate).
    Vdpbf16ps,
    /// Widened to `f32` in blocks, through the `f32` product (every other CPU, and Intel's
    /// cores without AMX, whose `vdpbf16ps` is slower than their `f32` FMAs).
    WidenedToF32,
}

/// What devtype's CPU kernels run on here: see [`capability`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CpuCapability {
    /// The element-wise and reduction kernels' instructions.
    pub vector: VectorIsa,
    /// How `bf16` products run.
    pub bf16_matmul: Bf16Matmul,
}

impl fmt::Display for CpuCapability {
    /// `AVX512, bf16 matmul on AMX tiles`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bf16 = match self.bf16_matmul {
            Bf16Matmul::AmxTiles => "on AMX tiles",
            Bf16Matmul::Vdpbf16ps => "with vdpbf16ps",
            Bf16Matmul::WidenedToF32 => "widened to f32",
        };
        write!(f, "{}, bf16 matmul {bf16}", self.vector.as_str())
    }
}

/// What devtype's CPU kernels run on, on this machine, as they choose it: the same answer for
/// the whole process. Where `bf16_matmul` is [`Bf16Matmul::AmxTiles`], devtype has asked the
/// OS for the tile state and been granted it (Linux 5.16 and later), so the process may run
/// AMX instructions.
///
/// ```
/// use devtype::cpu::{capability, VectorIsa};
///
/// let cpu = capability();
/// println!("{cpu}"); // e.g. "AVX512, bf16 matmul on AMX tiles"
/// if cpu.vector == VectorIsa::Default {
///     println!("no AVX2 here: element-wise kernels run on the baseline instructions");
/// }
/// ```
pub fn capability() -> CpuCapability {
    let vector = match vmath::width() {
        Width::Avx512 => VectorIsa::Avx512,
        Width::Avx2 => VectorIsa::Avx2,
        Width::Baseline => VectorIsa::Default,
    };
    let bf16_matmul = match matmul::bf16_kernel() {
        Some(matmul::Bf16Kernel::Tiles) => Bf16Matmul::AmxTiles,
        Some(matmul::Bf16Kernel::Dot) => Bf16Matmul::Vdpbf16ps,
        None => Bf16Matmul::WidenedToF32,
    };
    CpuCapability {
        vector,
        bf16_matmul,
    }
}

/// PyTorch's `torch.backends.cpu.get_cpu_capability()`: [`capability`]'s vector
/// instructions as PyTorch names them, `"AVX512"`, `"AVX2"` or `"DEFAULT"`.
///
/// ```
/// let isa = devtype::cpu::get_cpu_capability();
/// assert!(["AVX512", "AVX2", "DEFAULT"].contains(&isa));
/// ```
pub fn get_cpu_capability() -> &'static str {
    capability().vector.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report against the CPU's own answers, asked here independently of the kernels'
    /// code: the vector instructions from the standard library's detection, AMX from CPUID
    /// leaf 7 (EDX bits 22 and 24), AVX512-BF16 and the vendor from the standard library and
    /// CPUID leaf 0.
    #[test]
    fn the_report_matches_the_cpu() {
        let cpu = capability();
        assert_eq!(cpu, capability(), "one answer for the process");
        assert_eq!(get_cpu_capability(), cpu.vector.as_str());
        if cfg!(miri) || !cfg!(target_arch = "x86_64") {
            // No detection there: the portable kernels.
            let portable = (VectorIsa::Default, Bf16Matmul::WidenedToF32);
            assert_eq!((cpu.vector, cpu.bf16_matmul), portable);
            return;
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            use std::arch::is_x86_feature_detected as has;
            let vector = if has!("avx512f") {
                VectorIsa::Avx512
            } else if has!("avx2") {
                VectorIsa::Avx2
            } else {
                VectorIsa::Default
            };
            assert_eq!(cpu.vector, vector);
            let bf16 = has!("avx512f") && has!("avx512bw") && has!("avx512bf16");
            let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
            let amx = leaf7.edx & (1 << 22) != 0 && leaf7.edx & (1 << 24) != 0;
            let leaf0 = std::arch::x86_64::__cpuid(0);
            let amd = (leaf0.ebx, leaf0.edx, leaf0.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
            match cpu.bf16_matmul {
                // The grant is the OS's; the CPU must have the instructions.
                Bf16Matmul::AmxTiles => assert!(bf16 && amx && cfg!(target_os = "linux")),
                Bf16Matmul::Vdpbf16ps => assert!(bf16 && amd),
                // Not chosen although the CPU has AMX: only where the OS refused the grant.
                Bf16Matmul::WidenedToF32 => assert!(!(bf16 && amd)),
            }
            println!("this CPU: {cpu}");
        }
    }

    #[test]
    fn the_display_names_both_choices() {
        let cpu = CpuCapability {
            vector: VectorIsa::Avx2,
            bf16_matmul: Bf16Matmul::Vdpbf16ps,
        };
        assert_eq!(cpu.to_string(), "AVX2, bf16 matmul with vdpbf16ps");
    }
}
