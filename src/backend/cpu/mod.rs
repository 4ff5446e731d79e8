//! The CPU backend: host storage, a caching allocator for large buffers, and strided walks.
//! Each op's CPU kernel lives beside the op, in `ops/<family>/cpu.rs`.

pub(crate) mod parallel;
pub(crate) mod strided;
pub(crate) mod vmath;

/// Elements of `s` before its first 64-byte boundary (a cache line, and an AVX-512 vector), or
/// `None` where no element starts on one (an element type whose size does not divide 64, or
/// an offset the platform cannot compute). The boundary may lie past the end of `s`.
#[inline]
pub(crate) fn elements_to_cache_line<T>(s: &[T]) -> Option<usize> {
    let size = std::mem::size_of::<T>();
    match s.as_ptr().align_offset(64) {
        h if size > 0 && h < 64 / size => Some(h),
        _ => None,
    }
}

/// `dst.copy_from_slice(src)` (equal lengths) in fixed-size pieces, for short rows (a
/// convolution's columns, a small layer's bias): `copy_from_slice` calls `memmove` for a
/// length known only at run time, and at LeNet's rows (28 and 10 elements) or a 2-wide bias
/// the calls cost more than the copies.
#[inline(always)]
pub(crate) fn copy_short<T: Copy>(dst: &mut [T], src: &[T]) {
    debug_assert_eq!(dst.len(), src.len(), "copy_short of unequal lengths");
    let (mut d, mut s) = (dst, src);
    while d.len() >= 16 {
        d[..16].copy_from_slice(&s[..16]);
        (d, s) = (&mut d[16..], &s[16..]);
    }
    for piece in [8, 4, 2, 1] {
        if d.len() >= piece {
            d[..piece].copy_from_slice(&s[..piece]);
            (d, s) = (&mut d[piece..], &s[piece..]);
        }
    }
}
