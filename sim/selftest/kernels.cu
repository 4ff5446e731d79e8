// Kernels that exercise the simulator's own semantics (sim/selftest/selftest.cpp).
typedef unsigned long long u64;

// Each block reverses its slice through shared memory: wrong without a working __syncthreads.
extern "C" __global__ void block_reverse(float* out, const float* in) {
    __shared__ float tile[1024];
    const unsigned t = threadIdx.x;
    const u64 base = (u64)blockIdx.x * blockDim.x;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[blockDim.x - 1 - t];
}

// Butterfly sum over each warp: every lane gets its warp's total.
extern "C" __global__ void warp_sum(float* out, const float* in) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    out[i] = v;
}

// One increment per thread of the grid.
extern "C" __global__ void count_threads(u64* counter) { atomicAdd(counter, 1ULL); }

// Parameters of mixed sizes and alignments, as the trampoline unpacks them.
extern "C" __global__ void mixed_params(double* out, char a, double b, int c, u64 d, float e) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = a + b + c + (double)d + e;
}

// Every coordinate: out[linear thread of the grid] = its (x, y, z) packed.
extern "C" __global__ void coordinates(u64* out) {
    const u64 block = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const u64 thread = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const u64 threads = (u64)blockDim.x * blockDim.y * blockDim.z;
    out[block * threads + thread] = (u64)blockIdx.x << 48 | (u64)blockIdx.y << 40 | (u64)blockIdx.z << 32 |
                                    (u64)threadIdx.x << 16 | (u64)threadIdx.y << 8 | threadIdx.z;
}

// Writes one element past the end of `out` (n elements).
extern "C" __global__ void write_past_end(float* out, u64 n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[n] = 1.0f;
}
