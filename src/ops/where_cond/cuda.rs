//! CUDA side of `where` (`kernels/where_cond.cu`): the three operands are broadcast through
//! their strides, the output is a new contiguous tensor.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::ops::kernels::{typed, ALL_TYPES};

/// `kernels/where_cond.cu`: `where_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "where_cond.cu",
    source: include_str!("../../../kernels/where_cond.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "where", &ALL_TYPES);
        n
    },
};

pub(crate) fn where_cond(
    gpu: &'static GpuContext,
    cond: &RawTensor,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    if n > 0 {
        let lc = cond.layout.broadcast_to(&shape)?;
        let la = a.layout.broadcast_to(&shape)?;
        let lb = b.layout.broadcast_to(&shape)?;
        let name = format!("where_{}", suffix(a.dtype));
        // where_<T>(T* out, const bool* cond, const T* a, const T* b, Strided<3> L, u64 n), one
        // element per thread; cond is bool (checked by the caller).
        launch::strided(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(where)"),
            out.device_ptr(),
            [memory::ptr(cond)?, memory::ptr(a)?, memory::ptr(b)?],
            &launch::strided_layout::<3>(&shape, [&lc.strides, &la.strides, &lb.strides]),
            n,
            (),
            1,
        )?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

impl super::WhereKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn where_cond(
        self,
        c: &RawTensor,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor> {
        where_cond(self.0, c, a, b, shape)
    }
}
