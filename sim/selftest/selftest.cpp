// Checks the simulator's own semantics through the driver API: barriers, shuffles, atomics,
// argument unpacking, coordinates, launch limits, the red-zone check, the deadlock report,
// stream order with events, stream capture and graph replay. Built and run by sim/selftest/run.sh; exits non-zero on a failure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_types.h"
#include "kernel_registry.h"

extern "C" {
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(CUcontext*, CUdevice);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void*, size_t);
CUresult cuMemcpyDtoH_v2(void*, CUdeviceptr, size_t);
CUresult cuModuleLoadData(CUmodule*, const void*);
CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                        void**, void**);
CUresult cuCtxSynchronize();
CUresult cuStreamCreate(CUstream*, unsigned);
CUresult cuEventCreate(CUevent*, unsigned);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuLaunchHostFunc(CUstream, void (*)(void*), void*);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream);
CUresult cuMemHostAlloc(void**, size_t, unsigned);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned, size_t, CUstream);
CUresult cuMemAllocAsync(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph*);
CUresult cuStreamIsCapturing(CUstream, int*);
CUresult cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuGraphDestroy(CUgraph);
}

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

CUfunction function(CUmodule m, const char* name) {
    CUfunction f = nullptr;
    if (cuModuleGetFunction(&f, m, name) != CUDA_SUCCESS) {
        std::printf("FAIL kernel %s not found\n", name);
        std::exit(1);
    }
    return f;
}

CUresult launch(CUfunction f, unsigned gx, unsigned bx, std::vector<void*> args, unsigned gy = 1, unsigned gz = 1,
                unsigned by = 1, unsigned bz = 1, CUstream s = nullptr) {
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, 0, s, args.data(), nullptr);
}

}  // namespace

int main() {
    cuInit(0);
    CUcontext ctx;
    cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    char image[128];
    std::snprintf(image, sizeof image, "devtype-sim-module\n%s\n%016llx\n", devtype_sim::kernel_files[0].file,
                  (unsigned long long)devtype_sim::kernel_files[0].source_hash);
    CUmodule m;
    expect(cuModuleLoadData(&m, image) == CUDA_SUCCESS, "cuModuleLoadData accepts the image of a built file");
    CUmodule bad;
    expect(cuModuleLoadData(&bad, "\x7f" "ELF not ours") == CUDA_ERROR_INVALID_IMAGE, "and rejects anything else");

    const unsigned n = 4 * 256;
    std::vector<float> in(n), out(n);
    for (unsigned i = 0; i < n; ++i) in[i] = (float)i;
    CUdeviceptr din, dout;
    cuMemAlloc_v2(&din, n * 4);
    cuMemAlloc_v2(&dout, n * 4);
    cuMemcpyHtoD_v2(din, in.data(), n * 4);

    launch(function(m, "block_reverse"), 4, 256, {&dout, &din});
    cuMemcpyDtoH_v2(out.data(), dout, n * 4);
    bool ok = true;
    for (unsigned i = 0; i < n; ++i) ok &= out[i] == in[(i / 256) * 256 + 255 - i % 256];
    expect(ok, "__syncthreads: a block reverses its slice through shared memory");

    launch(function(m, "warp_sum"), 4, 256, {&dout, &din});
    cuMemcpyDtoH_v2(out.data(), dout, n * 4);
    ok = true;
    for (unsigned i = 0; i < n; ++i) {
        const unsigned w = i / 32 * 32;
        ok &= out[i] == (float)(32 * w + 31 * 32 / 2);
    }
    expect(ok, "__shfl_xor_sync: every lane gets its warp's sum");

    CUdeviceptr counter;
    cuMemAlloc_v2(&counter, 8);
    unsigned long long zero = 0, count = 0;
    cuMemcpyHtoD_v2(counter, &zero, 8);
    launch(function(m, "count_threads"), 7, 96, {&counter}, 3, 2, 1, 1);
    cuMemcpyDtoH_v2(&count, counter, 8);
    expect(count == 7 * 3 * 2 * 96, "atomicAdd: one increment per thread of a 3-D grid");

    CUdeviceptr dd;
    cuMemAlloc_v2(&dd, 8);
    char a = 3;
    double b = 0.5, got = 0;
    int c = -7;
    unsigned long long d = 1000;
    float e = 0.25f;
    launch(function(m, "mixed_params"), 1, 1, {&dd, &a, &b, &c, &d, &e});
    cuMemcpyDtoH_v2(&got, dd, 8);
    expect(got == 3 + 0.5 - 7 + 1000 + 0.25, "parameters of mixed sizes and alignments arrive intact");

    const unsigned threads = 4 * 3 * 2, blocks = 2 * 3 * 2;
    CUdeviceptr coords;
    cuMemAlloc_v2(&coords, threads * blocks * 8);
    launch(function(m, "coordinates"), 2, 4, {&coords}, 3, 2, 3, 2);
    std::vector<unsigned long long> cs(threads * blocks);
    cuMemcpyDtoH_v2(cs.data(), coords, cs.size() * 8);
    ok = true;
    for (unsigned bz = 0, k = 0; bz < 2; ++bz)
        for (unsigned by = 0; by < 3; ++by)
            for (unsigned bx = 0; bx < 2; ++bx)
                for (unsigned tz = 0; tz < 2; ++tz)
                    for (unsigned ty = 0; ty < 3; ++ty)
                        for (unsigned tx = 0; tx < 4; ++tx, ++k)
                            ok &= cs[k] == ((unsigned long long)bx << 48 | (unsigned long long)by << 40 |
                                            (unsigned long long)bz << 32 | tx << 16 | ty << 8 | tz);
    expect(ok, "threadIdx/blockIdx/blockDim/gridDim in three dimensions");

    CUfunction rev = function(m, "block_reverse");
    expect(launch(rev, 1, 1025, {&dout, &din}) == CUDA_ERROR_INVALID_VALUE, "a block of 1025 threads is refused");
    expect(launch(rev, 1, 1, {&dout, &din}, 65536) == CUDA_ERROR_INVALID_VALUE, "gridDim.y = 65536 is refused");
    expect(launch(rev, 1, 1, {&dout, &din}, 1, 1, 1, 65) == CUDA_ERROR_INVALID_VALUE, "blockDim.z = 65 is refused");
    expect(cuLaunchKernel(rev, 1, 1, 1, 32, 1, 1, 64 * 1024, nullptr, std::vector<void*>{&dout, &din}.data(),
                          nullptr) == CUDA_ERROR_INVALID_VALUE,
           "64 KiB of dynamic shared memory without opting in is refused");

    // Stream order: an upload from pinned memory on one stream, a kernel on another that waits
    // for it through an event.
    CUstream copy, compute;
    cuStreamCreate(&copy, 1);
    cuStreamCreate(&compute, 1);
    float* pinned = nullptr;
    cuMemHostAlloc(reinterpret_cast<void**>(&pinned), n * 4, 0);
    for (unsigned i = 0; i < n; ++i) pinned[i] = (float)(n - i);
    cuMemcpyHtoDAsync_v2(din, pinned, n * 4, copy);
    CUevent copied;
    cuEventCreate(&copied, 0);
    cuEventRecord(copied, copy);
    cuStreamWaitEvent(compute, copied, 0);
    launch(function(m, "block_reverse"), 4, 256, {&dout, &din}, 1, 1, 1, 1, compute);
    cuStreamSynchronize(compute);
    cuMemcpyDtoH_v2(out.data(), dout, n * 4);
    ok = true;
    for (unsigned i = 0; i < n; ++i) ok &= out[i] == pinned[(i / 256) * 256 + 255 - i % 256];
    expect(ok, "cuStreamWaitEvent orders a kernel after a copy on another stream");

    // Stream capture: the work queued on a capturing stream (and on a stream that joins it
    // through an event) is recorded, not run, and runs in order at every cuGraphLaunch.
    {
        static int host_calls = 0;
        for (unsigned i = 0; i < n; ++i) pinned[i] = -1.0f;
        cuMemsetD32Async(dout, 0, n, compute);
        cuStreamSynchronize(compute);
        CUdeviceptr ones;
        cuMemAlloc_v2(&ones, n * 4);
        expect(cuStreamBeginCapture_v2(compute, 1) == CUDA_SUCCESS, "cuStreamBeginCapture_v2 on a stream");
        int status = -1;
        cuStreamIsCapturing(compute, &status);
        expect(status == 1, "cuStreamIsCapturing says ACTIVE");
        expect(cuStreamBeginCapture_v2(compute, 1) == CUDA_ERROR_ILLEGAL_STATE, "a second begin is refused");
        CUdeviceptr scratch = 0;
        expect(cuMemAllocAsync(&scratch, n * 4, compute) == CUDA_SUCCESS && scratch != 0,
               "cuMemAllocAsync in a capture gives the graph's memory");
        cuMemcpyHtoDAsync_v2(din, pinned, n * 4, compute);
        launch(function(m, "block_reverse"), 4, 256, {&scratch, &din}, 1, 1, 1, 1, compute);
        launch(function(m, "block_reverse"), 4, 256, {&dout, &scratch}, 1, 1, 1, 1, compute);
        cuLaunchHostFunc(compute, [](void*) { ++host_calls; }, nullptr);
        CUevent fork, join;
        cuEventCreate(&fork, 0);
        cuEventCreate(&join, 0);
        cuEventRecord(fork, compute);
        expect(cuStreamWaitEvent(copy, fork, 0) == CUDA_SUCCESS, "another stream joins the capture by an event wait");
        cuStreamIsCapturing(copy, &status);
        expect(status == 1, "and is capturing");
        cuMemsetD32Async(ones, 0x3f800000u, n, copy);  // 1.0f
        cuEventRecord(join, copy);
        cuStreamWaitEvent(compute, join, 0);
        expect(cuMemFreeAsync(scratch, compute) == CUDA_SUCCESS, "cuMemFreeAsync of the graph's memory in the capture");
        CUgraph graph = nullptr;
        expect(cuStreamEndCapture(compute, &graph) == CUDA_SUCCESS && graph, "cuStreamEndCapture returns the graph");
        cuStreamIsCapturing(copy, &status);
        expect(status == 0, "the joined stream leaves the capture with it");
        cuStreamSynchronize(compute);
        cuMemcpyDtoH_v2(out.data(), dout, n * 4);
        ok = host_calls == 0;
        for (unsigned i = 0; i < n; ++i) ok &= out[i] == 0.0f;
        expect(ok, "nothing captured ran during the capture");
        CUgraphExec exec = nullptr;
        expect(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS, "cuGraphInstantiateWithFlags");
        for (int replay = 1; replay <= 3; ++replay) {
            for (unsigned i = 0; i < n; ++i) pinned[i] = (float)(replay * 10000 + i);
            cuMemsetD32Async(ones, 0, n, compute);
            cuGraphLaunch(exec, compute);
            cuStreamSynchronize(compute);
            cuMemcpyDtoH_v2(out.data(), dout, n * 4);
            ok = host_calls == replay;
            for (unsigned i = 0; i < n; ++i) ok &= out[i] == pinned[i];
            cuMemcpyDtoH_v2(out.data(), ones, n * 4);
            for (unsigned i = 0; i < n; ++i) ok &= out[i] == 1.0f;
            expect(ok, "each replay runs the copy, kernels, host function and memset in order on fresh input");
        }
        expect(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS,
               "the graph and its executable are destroyed");

        // A synchronizing call in a capture fails and invalidates it; the stream stays usable.
        cuStreamBeginCapture_v2(compute, 1);
        launch(function(m, "block_reverse"), 4, 256, {&dout, &din}, 1, 1, 1, 1, compute);
        expect(cuStreamSynchronize(compute) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
               "cuStreamSynchronize on a capturing stream: operation not permitted when stream is capturing");
        cuStreamIsCapturing(compute, &status);
        expect(status == 2, "and the capture is invalidated");
        expect(launch(function(m, "block_reverse"), 4, 256, {&dout, &din}, 1, 1, 1, 1, compute) ==
                   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
               "later work on it fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
        graph = reinterpret_cast<CUgraph>(1);
        expect(cuStreamEndCapture(compute, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && !graph,
               "and cuStreamEndCapture returns no graph");
        cuStreamBeginCapture_v2(compute, 1);
        expect(cuCtxSynchronize() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuCtxSynchronize in a capture fails");
        expect(cuMemcpyDtoH_v2(out.data(), dout, 4) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
               "a synchronous copy in a capture fails");
        expect(cuMemcpyDtoHAsync_v2(out.data(), dout, 4, compute) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
               "(the capture is already invalidated)");
        cuStreamEndCapture(compute, &graph);
        cuStreamBeginCapture_v2(compute, 1);
        CUevent outside;
        cuEventCreate(&outside, 0);
        cuEventRecord(outside, copy);
        expect(cuStreamWaitEvent(compute, outside, 0) == CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
               "a capture may not wait on an event recorded outside it");
        cuStreamEndCapture(compute, &graph);
        for (unsigned i = 0; i < n; ++i) pinned[i] = (float)i;
        cuMemcpyHtoDAsync_v2(din, pinned, n * 4, compute);
        launch(function(m, "block_reverse"), 4, 256, {&dout, &din}, 1, 1, 1, 1, compute);
        expect(cuStreamSynchronize(compute) == CUDA_SUCCESS, "the stream works after a failed capture");
        cuMemcpyDtoH_v2(out.data(), dout, n * 4);
        ok = true;
        for (unsigned i = 0; i < n; ++i) ok &= out[i] == (float)((i / 256) * 256 + 255 - i % 256);
        expect(ok, "and computes right");
    }

    // Out-of-bounds write: caught at the next synchronize, and the context stays failed.
    CUdeviceptr small;
    cuMemAlloc_v2(&small, 10 * 4);
    unsigned long long ten = 10;
    launch(function(m, "write_past_end"), 1, 32, {&small, &ten});
    expect(cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS, "a write past the end fails the next synchronize");
    expect(launch(rev, 4, 256, {&dout, &din}) == CUDA_ERROR_ILLEGAL_ADDRESS, "and every later call");

    std::printf("%s\n", failures ? "selftest: FAILED" : "selftest: all passed");
    return failures ? 1 : 0;
}
