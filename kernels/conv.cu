// Convolutions and pooling over contiguous [planes, h, w] images (src/ops/conv).
//
// im2col_<T>(col, x, Window A, n)             one thread per element of col [n, c*kh*kw, oh*ow]
// col2im_<T>(x, col, Window A, n)             one thread per element of x [n, c, h, w] (a gather)
// pool2d_<T>(out, idx, x, Window A, n)        one thread per output [planes, oh, ow]; `idx` (the
//                                             maximum's flat index in its plane) for mode 0 only
// pool2d_backward_<T>(gx, gy, idx, Window A, n) one thread per input element (a gather)
//
// Modes: 0 max (NaN wins, the last NaN of the window), 1 average (`include_pad`: divide by the
// padded window's size), 2 adaptive average. Every kernel is a gather, so no atomics; sums run
// in `Acc<T>` (f32 for the 16-bit floats), rounded once, in the CPU kernel's order.
#include "common.cuh"

// `Window` of src/ops/conv/cuda.rs.
struct Window {
    u64 c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, mode, include_pad;
};

__device__ __forceinline__ i64 coord(u64 i, u64 s, u64 p, u64 k, u64 d) {
    return (i64)(i * s) - (i64)p + (i64)(k * d);
}

// The output along one axis whose window position `k` is input `x`, or -1.
__device__ __forceinline__ i64 source(u64 x, u64 s, u64 p, u64 k, u64 d, u64 n_out) {
    i64 t = (i64)(x + p) - (i64)(k * d);
    if (t < 0 || t % (i64)s != 0) return -1;
    t /= (i64)s;
    return t < (i64)n_out ? t : -1;
}

template <typename T>
__device__ __forceinline__ void im2col_impl(T* col, const T* x, const Window& A, u64 n) {
    const u64 L = A.oh * A.ow, K = A.c * A.kh * A.kw;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 l = i % L, t = i / L, k = t % K, b = t / K;
        const u64 ox = l % A.ow, oy = l / A.ow;
        const u64 kj = k % A.kw, ki = (k / A.kw) % A.kh, c = k / (A.kh * A.kw);
        const i64 y = coord(oy, A.sh, A.ph, ki, A.dh), xx = coord(ox, A.sw, A.pw, kj, A.dw);
        T v = down<T>((typename Acc<T>::type)0);
        if (y >= 0 && y < (i64)A.h && xx >= 0 && xx < (i64)A.w) v = x[((b * A.c + c) * A.h + (u64)y) * A.w + (u64)xx];
        col[i] = v;
    }
}

template <typename T>
__device__ __forceinline__ void col2im_impl(T* x, const T* col, const Window& A, u64 n) {
    typedef typename Acc<T>::type Ac;
    const u64 L = A.oh * A.ow, K = A.c * A.kh * A.kw;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 xx = i % A.w, y = (i / A.w) % A.h, c = (i / (A.h * A.w)) % A.c, b = i / (A.c * A.h * A.w);
        Ac acc = (Ac)0;
        for (u64 ki = 0; ki < A.kh; ++ki) {
            const i64 oy = source(y, A.sh, A.ph, ki, A.dh, A.oh);
            if (oy < 0) continue;
            for (u64 kj = 0; kj < A.kw; ++kj) {
                const i64 ox = source(xx, A.sw, A.pw, kj, A.dw, A.ow);
                if (ox < 0) continue;
                const u64 r = (c * A.kh + ki) * A.kw + kj;
                acc += up(col[(b * K + r) * L + (u64)oy * A.ow + (u64)ox]);
            }
        }
        x[i] = down<T>(acc);
    }
}

// The clamped window of output `i` of an average pool along one axis, and its padded size.
__device__ __forceinline__ void avg_range(u64 i, u64 s, u64 p, u64 k, u64 n, i64& start, i64& end, i64& size) {
    start = (i64)(i * s) - (i64)p;
    end = start + (i64)k;
    if (end > (i64)(n + p)) end = (i64)(n + p);
    size = end - start;
    if (start < 0) start = 0;
    if (end > (i64)n) end = (i64)n;
    if (end < start) end = start;
}

// The clamped window of output (oy, ox) of a mean pool and its divisor.
__device__ __forceinline__ void mean_window(const Window& A, u64 oy, u64 ox, i64& y0, i64& y1, i64& x0, i64& x1,
                                            i64& div) {
    if (A.mode == 1) {
        i64 sy, sx;
        avg_range(oy, A.sh, A.ph, A.kh, A.h, y0, y1, sy);
        avg_range(ox, A.sw, A.pw, A.kw, A.w, x0, x1, sx);
        div = A.include_pad ? sy * sx : (y1 - y0) * (x1 - x0);
    } else {
        y0 = (i64)((oy * A.h) / A.oh);
        y1 = (i64)(((oy + 1) * A.h + A.oh - 1) / A.oh);
        x0 = (i64)((ox * A.w) / A.ow);
        x1 = (i64)(((ox + 1) * A.w + A.ow - 1) / A.ow);
        div = (y1 - y0) * (x1 - x0);
    }
}

template <typename T>
__device__ __forceinline__ void pool2d_impl(T* out, i64* idx, const T* x, const Window& A, u64 n) {
    typedef typename Acc<T>::type Ac;
    const u64 P = A.oh * A.ow;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 p = i / P, o = i % P, oy = o / A.ow, ox = o % A.ow;
        const T* plane = x + p * A.h * A.w;
        if (A.mode == 0) {
            Ac best = Num<Ac>::lowest();
            i64 at = -1;
            for (u64 ki = 0; ki < A.kh; ++ki) {
                const i64 y = coord(oy, A.sh, A.ph, ki, A.dh);
                if (y < 0 || y >= (i64)A.h) continue;
                for (u64 kj = 0; kj < A.kw; ++kj) {
                    const i64 xx = coord(ox, A.sw, A.pw, kj, A.dw);
                    if (xx < 0 || xx >= (i64)A.w) continue;
                    const i64 j = y * (i64)A.w + xx;
                    const Ac v = up(plane[j]);
                    if (at < 0) at = j;
                    if (v > best || v != v) {
                        best = v;
                        at = j;
                    }
                }
            }
            out[i] = down<T>(best);
            idx[i] = at < 0 ? 0 : at;
        } else {
            i64 y0, y1, x0, x1, div;
            mean_window(A, oy, ox, y0, y1, x0, x1, div);
            Ac acc = (Ac)0;
            for (i64 y = y0; y < y1; ++y)
                for (i64 xx = x0; xx < x1; ++xx) acc += up(plane[y * (i64)A.w + xx]);
            out[i] = down<T>((y0 >= y1 || x0 >= x1) ? (Ac)0 : acc / (Ac)div);
        }
    }
}

// The outputs along one axis whose window may hold input `x`: [lo, hi).
__device__ __forceinline__ void candidates(const Window& A, u64 x, bool vertical, u64& lo, u64& hi) {
    const u64 s = vertical ? A.sh : A.sw, p = vertical ? A.ph : A.pw, k = vertical ? A.kh : A.kw;
    const u64 d = vertical ? A.dh : A.dw, o = vertical ? A.oh : A.ow, n = vertical ? A.h : A.w;
    if (A.mode == 2) {
        lo = (x * o) / n;
        hi = ((x + 1) * o + n - 1) / n;
    } else {
        hi = (x + p) / s + 1;
        const u64 reach = (k - 1) * d;
        lo = x + p >= reach ? (x + p - reach + s - 1) / s : 0;
    }
    if (hi > o) hi = o;
    if (lo > hi) lo = hi;
}

template <typename T>
__device__ __forceinline__ void pool2d_backward_impl(T* gx, const T* gy, const i64* idx, const Window& A, u64 n) {
    typedef typename Acc<T>::type Ac;
    const u64 P = A.oh * A.ow, HW = A.h * A.w;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 p = i / HW, j = i % HW, y = j / A.w, xx = j % A.w;
        u64 ylo, yhi, xlo, xhi;
        candidates(A, y, true, ylo, yhi);
        candidates(A, xx, false, xlo, xhi);
        Ac acc = (Ac)0;
        for (u64 oy = ylo; oy < yhi; ++oy) {
            for (u64 ox = xlo; ox < xhi; ++ox) {
                const u64 o = p * P + oy * A.ow + ox;
                if (A.mode == 0) {
                    if (idx[o] == (i64)j) acc += up(gy[o]);
                } else {
                    i64 y0, y1, x0, x1, div;
                    mean_window(A, oy, ox, y0, y1, x0, x1, div);
                    if ((i64)y >= y0 && (i64)y < y1 && (i64)xx >= x0 && (i64)xx < x1) acc += up(gy[o]) / (Ac)div;
                }
            }
        }
        gx[i] = down<T>(acc);
    }
}

#define CONV(T, SUFFIX)                                                                                        \
    extern "C" __global__ void im2col_##SUFFIX(T* col, const T* x, Window A, u64 n) { im2col_impl(col, x, A, n); } \
    extern "C" __global__ void col2im_##SUFFIX(T* x, const T* col, Window A, u64 n) { col2im_impl(x, col, A, n); } \
    extern "C" __global__ void pool2d_##SUFFIX(T* out, i64* idx, const T* x, Window A, u64 n) {                \
        pool2d_impl(out, idx, x, A, n);                                                                        \
    }                                                                                                          \
    extern "C" __global__ void pool2d_backward_##SUFFIX(T* gx, const T* gy, const i64* idx, Window A, u64 n) { \
        pool2d_backward_impl(gx, gy, idx, A, n);                                                               \
    }

CONV(float, f32)
CONV(double, f64)
CONV(f16_t, f16)
CONV(bf16_t, bf16)
