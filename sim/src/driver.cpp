// libcuda.so of the simulated device: the CUDA driver API that cudarc calls, on the host.
//
// - Devices: DEVTYPE_SIM_DEVICES (default 2) devices of compute capability 9.0, each with
//   DEVTYPE_SIM_MEMORY bytes (default 5 GiB) of simulated memory; device pointers are host
//   addresses.
// - Streams: each stream runs its operations in order on its own host thread, after a seeded
//   random delay (DEVTYPE_SIM_SEED, `off` to disable) that differs per stream, so work on two
//   streams interleaves differently from run to run and a missing wait shows.
// - Memory checks: red zones around every allocation (checked at free and at every
//   synchronize), fresh memory filled with 0xff bytes (NaN in every float type), freed memory
//   poisoned the same way and held in quarantine before it is reused. A failed check prints
//   what happened and which kernel ran last, and makes the context fail as a real one does
//   after an illegal address: every later call returns CUDA_ERROR_ILLEGAL_ADDRESS.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_types.h"
#include "kernel_registry.h"

using namespace devtype_sim;

namespace {

// ---- configuration -----------------------------------------------------------------------------

uint64_t env_bytes(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    double x = std::strtod(v, &end);
    switch (end && *end ? (*end | 0x20) : 0) {
        case 'k': x *= 1024.0; break;
        case 'm': x *= 1024.0 * 1024; break;
        case 'g': x *= 1024.0 * 1024 * 1024; break;
        case 't': x *= 1024.0 * 1024 * 1024 * 1024; break;
        default: break;
    }
    return (uint64_t)x;
}

int env_int(const char* name, int fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

constexpr size_t kRedZone = 256;           // bytes before and (at least) after each allocation
constexpr unsigned char kFresh = 0xff;     // fresh and freed memory: NaN in f16/bf16/f32/f64
constexpr unsigned char kGuard = 0xfd;     // red zones
constexpr size_t kQuarantineBytes = 256u << 20;
constexpr size_t kQuarantineMaxBlock = 64u << 20;
constexpr size_t kModuleBytes = 1u << 20;  // device memory a loaded module takes
constexpr int kMaxSharedPerBlock = 48 * 1024;
constexpr int kMaxSharedOptin = 227 * 1024;

void report(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "devtype-sim: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

// ---- state -------------------------------------------------------------------------------------

// The driver's state is never destroyed: stream threads may still run queued operations while
// the process exits, after static destructors would have run.
std::mutex& mu = *new std::mutex;  // guards everything below but a stream's queue
std::condition_variable& done_cv = *new std::condition_variable;  // any operation completed
std::atomic<int> sticky{CUDA_SUCCESS};

struct Device;

struct Ctx {
    Device* device;
};

struct Pool {
    Device* device;
    uint64_t release_threshold = 0;
};

struct Stream;

struct Device {
    int ordinal = 0;
    Ctx ctx{};
    Pool pool{};
    uint64_t capacity = 0;
    uint64_t used = 0;         // live allocations (pool and not)
    uint64_t pool_used = 0;    // live pool allocations
    uint64_t pool_cached = 0;  // freed pool memory the pool keeps (until trimmed)
    uint64_t pool_used_high = 0, pool_reserved_high = 0;
    std::string last_kernel = "(none)";
    Stream* null_stream = nullptr;
    std::vector<Stream*> streams;
};

struct Alloc {
    char* block;        // start of the mapping (front red zone)
    size_t block_bytes;
    size_t size;        // the caller's bytes
    uint64_t charged;   // bytes counted against the device
    Device* device;     // null for pinned host memory
    bool pooled;
};

std::vector<std::unique_ptr<Device>>& devices = *new std::vector<std::unique_ptr<Device>>;
std::map<uintptr_t, Alloc>& live = *new std::map<uintptr_t, Alloc>;    // by user address
std::map<uintptr_t, Alloc>& pinned = *new std::map<uintptr_t, Alloc>;  // cuMemHostAlloc blocks
std::deque<std::pair<uintptr_t, Alloc>>& quarantine = *new std::deque<std::pair<uintptr_t, Alloc>>;
size_t quarantine_bytes = 0;
thread_local Ctx* current_ctx = nullptr;
bool initialised = false;

Device* device_of(int ordinal) {
    if (ordinal < 0 || (size_t)ordinal >= devices.size()) return nullptr;
    return devices[ordinal].get();
}

// ---- stream capture ----------------------------------------------------------------------------

// A stream capture in progress (cuStreamBeginCapture_v2 .. cuStreamEndCapture): the operations
// queued on its streams are recorded here, in order, instead of running. Streams that wait on
// an event recorded in the capture join it, as in CUDA's cross-stream capture; the sim records
// one sequence for all of them (a valid order of the graph's nodes). Guarded by `cap_mu`, which
// is never taken before `mu` (`mu` may be held when taking it, not the other way round).
std::mutex& cap_mu = *new std::mutex;

using Op = std::function<void()>;

// Device memory allocated by stream-ordered allocations during a capture: the graph's memory
// (CUDA's mem-alloc nodes). What the capture also freed (mem-free nodes) is released when the
// last graph or executable graph using it is destroyed; what it did not free outlives the graph,
// as in CUDA, until the program frees it with cuMemFreeAsync, but only once a graph made from
// the capture was launched: CUDA backs graph memory when the graph runs, so after a failed
// capture, or a graph destroyed unlaunched, all of it goes with the graph, and a later free of
// such an address fails with CUDA_ERROR_INVALID_VALUE (seen on an H200, driver 580), as any
// access to it does here.
struct GraphMemory {
    std::vector<CUdeviceptr> blocks;
    std::vector<CUdeviceptr> freed;  // of `blocks`, those freed in the capture
    std::atomic<bool> launched{false};
    ~GraphMemory();
};

struct Capture {
    uint64_t id;
    Device* device;
    Stream* origin;
    int mode;  // CU_STREAM_CAPTURE_MODE_GLOBAL 0, THREAD_LOCAL 1, RELAXED 2
    std::thread::id thread;
    bool invalidated = false;
    std::vector<Op> ops;
    std::vector<Stream*> members;
    std::shared_ptr<GraphMemory> memory = std::make_shared<GraphMemory>();
};
std::map<uint64_t, Capture*>& captures = *new std::map<uint64_t, Capture*>;  // active, by id
uint64_t capture_counter = 0;

struct Stream;
thread_local Stream* running_stream = nullptr;  // the stream whose worker this thread is

// ---- streams -----------------------------------------------------------------------------------

struct Stream {
    Capture* capture = nullptr;  // guarded by cap_mu
    Device* device;
    std::mutex qmu;
    std::condition_variable qcv;
    std::deque<std::function<void()>> queue;
    uint64_t enqueued = 0;
    std::atomic<uint64_t> completed{0};
    bool stopping = false;
    std::mt19937_64 rng;
    bool delays = true;
    std::thread worker;

    Stream(Device* d, uint64_t seed, bool adversarial) : device(d), rng(seed), delays(adversarial) {
        worker = std::thread([this] { run(); });
    }

    void run() {
        running_stream = this;
        for (;;) {
            std::function<void()> op;
            {
                std::unique_lock<std::mutex> lock(qmu);
                qcv.wait(lock, [&] { return stopping || !queue.empty(); });
                if (queue.empty()) return;
                op = std::move(queue.front());
                queue.pop_front();
            }
            if (delays) {
                // Mostly a few microseconds, now and then long enough for the other streams
                // to run ahead.
                const uint64_t r = rng();
                const unsigned us = (r & 7) == 0 ? (unsigned)((r >> 8) % 600) : (unsigned)((r >> 8) % 20);
                if (us) std::this_thread::sleep_for(std::chrono::microseconds(us));
            }
            op();
            {
                std::lock_guard<std::mutex> lock(mu);
                completed.fetch_add(1);
            }
            done_cv.notify_all();
        }
    }

    // Before a copy to or from page-locked memory (an asynchronous DMA transfer on a GPU): a
    // longer delay, 1 to 4 ms, so that work another stream queues after it without waiting
    // for it runs first. Called on the worker thread.
    void dma_delay() {
        if (delays) std::this_thread::sleep_for(std::chrono::microseconds(1000 + rng() % 3000));
    }

    // Queues `op`; returns its sequence number (1-based).
    // During a capture the operation is recorded instead (returns 0); an invalidated
    // capture drops it (the call that invalidated it returned the error).
    uint64_t push(std::function<void()> op) {
        {
            std::lock_guard<std::mutex> lock(cap_mu);
            if (capture) {
                if (!capture->invalidated) capture->ops.push_back(std::move(op));
                return 0;
            }
        }
        std::lock_guard<std::mutex> lock(qmu);
        queue.push_back(std::move(op));
        const uint64_t n = ++enqueued;
        qcv.notify_one();
        return n;
    }

    void wait_for(uint64_t n) {
        std::unique_lock<std::mutex> lock(mu);
        done_cv.wait(lock, [&] { return completed.load() >= n; });
    }

    void drain() {
        uint64_t n;
        {
            std::lock_guard<std::mutex> lock(qmu);
            n = enqueued;
        }
        wait_for(n);
    }

    ~Stream() {
        drain();
        {
            std::lock_guard<std::mutex> lock(qmu);
            stopping = true;
        }
        qcv.notify_one();
        worker.join();
    }
};

uint64_t stream_counter = 0;

Stream* new_stream(Device* d) {
    static const char* seed_env = std::getenv("DEVTYPE_SIM_SEED");
    const bool adversarial = !(seed_env && std::strcmp(seed_env, "off") == 0);
    uint64_t seed = adversarial && seed_env && *seed_env ? std::strtoull(seed_env, nullptr, 10) : 0x5eed;
    seed ^= (++stream_counter) * 0x9e3779b97f4a7c15ULL;
    auto* s = new Stream(d, seed, adversarial);
    d->streams.push_back(s);
    return s;
}

Stream* stream_of(CUstream h) {
    if (h) return reinterpret_cast<Stream*>(h);
    Device* d = current_ctx ? current_ctx->device : device_of(0);
    return d ? d->null_stream : nullptr;
}

// ---- memory ------------------------------------------------------------------------------------

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The first byte of the red zones of `a` that is not the guard pattern, or -1.
long long red_zone_damage(const Alloc& a, bool* front) {
    const unsigned char* p = reinterpret_cast<unsigned char*>(a.block);
    for (size_t i = 0; i < kRedZone; ++i)
        if (p[i] != kGuard) {
            *front = true;
            return (long long)(kRedZone - i - 1);
        }
    for (size_t i = kRedZone + a.size; i < a.block_bytes; ++i)
        if (p[i] != kGuard) {
            *front = false;
            return (long long)(i - kRedZone - a.size);
        }
    return -1;
}

bool check_alloc(uintptr_t user, const Alloc& a, const char* when) {
    bool front = false;
    const long long at = red_zone_damage(a, &front);
    if (at < 0) return true;
    const std::string kernel = a.device ? a.device->last_kernel : "(none)";
    if (front)
        report("out-of-bounds write at byte %lld before the start of a %zu-byte allocation at 0x%llx "
               "(found at %s; last kernel launched on device %d: %s)",
               at, a.size, (unsigned long long)user, when, a.device ? a.device->ordinal : -1, kernel.c_str());
    else
        report("out-of-bounds write at byte %lld after the end of a %zu-byte allocation at 0x%llx "
               "(found at %s; last kernel launched on device %d: %s)",
               at, a.size, (unsigned long long)user, when, a.device ? a.device->ordinal : -1, kernel.c_str());
    sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    return false;
}

// Checks every live allocation of `d` (all devices when null). Caller holds `mu`.
bool check_all(Device* d, const char* when) {
    bool ok = true;
    for (auto& [user, a] : live)
        if (!d || a.device == d) ok &= check_alloc(user, a, when);
    return ok;
}

char* map_block(size_t bytes) {
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? nullptr : static_cast<char*>(m);
}

// Actually releases a block (after quarantine).
void unmap(const Alloc& a) { munmap(a.block, a.block_bytes); }

void release_quarantined(size_t keep) {
    while (quarantine_bytes > keep && !quarantine.empty()) {
        auto [user, a] = quarantine.front();
        quarantine.pop_front();
        quarantine_bytes -= a.block_bytes;
        const unsigned char* p = reinterpret_cast<unsigned char*>(a.block) + kRedZone;
        for (size_t i = 0; i < a.size; ++i)
            if (p[i] != kFresh) {
                report("use after free: byte %zu of a freed %zu-byte allocation at 0x%llx was written "
                       "(last kernel launched on device %d: %s)",
                       i, a.size, (unsigned long long)user, a.device->ordinal, a.device->last_kernel.c_str());
                sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
                break;
            }
        unmap(a);
    }
}

// Allocates `size` bytes on `d`. Caller holds `mu`.
CUresult device_alloc(Device* d, size_t size, bool pooled, CUdeviceptr* out) {
    const uint64_t charge = round_up(size ? size : 1, 512);
    if (pooled) {
        if (d->used + charge > d->capacity) return CUDA_ERROR_OUT_OF_MEMORY;
        const uint64_t from_cache = std::min<uint64_t>(charge, d->pool_cached);
        d->pool_cached -= from_cache;
        d->pool_used += charge;
    } else if (d->used + d->pool_cached + charge > d->capacity) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    const size_t block_bytes = kRedZone + round_up(size, kRedZone) + kRedZone;
    char* block = map_block(block_bytes);
    if (!block) {
        if (pooled) d->pool_used -= charge;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    d->used += charge;
    d->pool_used_high = std::max(d->pool_used_high, d->pool_used);
    d->pool_reserved_high = std::max(d->pool_reserved_high, d->pool_used + d->pool_cached);
    std::memset(block, kGuard, kRedZone);
    std::memset(block + kRedZone, kFresh, size);
    std::memset(block + kRedZone + size, kGuard, block_bytes - kRedZone - size);
    const uintptr_t user = reinterpret_cast<uintptr_t>(block + kRedZone);
    live[user] = Alloc{block, block_bytes, size, charge, d, pooled};
    *out = user;
    return CUDA_SUCCESS;
}

// Frees a device allocation. Caller holds `mu`.
CUresult device_free(CUdeviceptr ptr, const char* when) {
    auto it = live.find(ptr);
    if (it == live.end()) {
        report("%s of 0x%llx, which is not a live allocation (double free?)", when, (unsigned long long)ptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    Alloc a = it->second;
    live.erase(it);
    const bool ok = check_alloc(ptr, a, when);
    Device* d = a.device;
    d->used -= a.charged;
    if (a.pooled) {
        d->pool_used -= a.charged;
        d->pool_cached += a.charged;
    }
    std::memset(a.block + kRedZone, kFresh, a.size);
    if (a.block_bytes <= kQuarantineMaxBlock) {
        quarantine.emplace_back(ptr, a);
        quarantine_bytes += a.block_bytes;
        release_quarantined(kQuarantineBytes);
    } else {
        unmap(a);
    }
    return ok ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}

// The live allocation holding [ptr, ptr + n), or null. Caller holds `mu`.
const Alloc* find_range(CUdeviceptr ptr, size_t n) {
    auto it = live.upper_bound(ptr);
    if (it == live.begin()) return nullptr;
    --it;
    const Alloc& a = it->second;
    if (ptr < it->first || ptr + n > it->first + a.size) return nullptr;
    return &a;
}

bool is_pinned(const void* p, size_t n) {
    const uintptr_t x = reinterpret_cast<uintptr_t>(p);
    auto it = pinned.upper_bound(x);
    if (it == pinned.begin()) return false;
    --it;
    return x >= it->first && x + n <= it->first + it->second.size;
}

CUresult check_device_range(CUdeviceptr ptr, size_t n, const char* call) {
    if (n == 0) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lock(mu);
    if (find_range(ptr, n)) return CUDA_SUCCESS;
    report("%s: [0x%llx, +%zu) is not inside a live device allocation", call, (unsigned long long)ptr, n);
    return CUDA_ERROR_INVALID_VALUE;
}

// ---- initialisation ----------------------------------------------------------------------------

void init_devices() {
    if (initialised) return;
    initialised = true;
    const int count = std::max(0, env_int("DEVTYPE_SIM_DEVICES", 2));
    const uint64_t capacity = env_bytes("DEVTYPE_SIM_MEMORY", 5ull << 30);
    for (int i = 0; i < count; ++i) {
        auto d = std::make_unique<Device>();
        d->ordinal = i;
        d->ctx.device = d.get();
        d->pool.device = d.get();
        d->capacity = capacity;
        devices.push_back(std::move(d));
    }
}

#define CHECK_STICKY()                                  \
    do {                                                \
        const int s = sticky.load();                    \
        if (s != CUDA_SUCCESS) return (CUresult)s;      \
    } while (0)

#define NEED_INIT()                                     \
    do {                                                \
        if (!initialised) return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

// After a synchronize: the checks that run at every synchronize.
CUresult after_sync(Device* d, const char* when) {
    std::lock_guard<std::mutex> lock(mu);
    check_all(d, when);
    return (CUresult)sticky.load();
}

struct Module {
    std::string file;
    Device* device;
    CUdeviceptr reserve;  // the module's device memory
};

struct Function {
    const KernelInfo* kernel;
    std::string file;
    int max_dynamic_shared = kMaxSharedPerBlock;
};

struct Event {
    uint64_t recorded = 0;   // times recorded
    uint64_t completed = 0;  // recordings that have completed
    std::chrono::steady_clock::time_point at{};
    unsigned flags = 0;
    uint64_t capture = 0;  // the capture its last record was part of (0: none); under cap_mu
};

// ---- stream capture: the checks ----

// Caller holds cap_mu.
void invalidate(Capture* c) {
    c->invalidated = true;
    c->ops.clear();
}

// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED for work queued on a stream whose capture failed.
CUresult capture_error(Stream* s) {
    std::lock_guard<std::mutex> lock(cap_mu);
    return s->capture && s->capture->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

// An operation that makes the host wait for `s` (or read host memory now): not permitted while
// `s` is capturing, and it invalidates the capture, as the driver does.
CUresult capture_forbids_sync(Stream* s) {
    std::lock_guard<std::mutex> lock(cap_mu);
    if (!s->capture) return CUDA_SUCCESS;
    invalidate(s->capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

// A potentially unsafe call on device `d` (cuCtxSynchronize, the synchronous copies, the legacy
// stream, cuMemAlloc/cuMemFree): not permitted while a capture in global mode (or thread-local
// mode, from its thread) is active on the device; it invalidates those captures.
CUresult capture_forbids_unsafe(Device* d) {
    std::lock_guard<std::mutex> lock(cap_mu);
    CUresult r = CUDA_SUCCESS;
    for (auto& entry : captures) {
        Capture* c = entry.second;
        if (c->device != d) continue;
        if (c->mode == 0 || (c->mode == 1 && c->thread == std::this_thread::get_id())) {
            invalidate(c);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return r;
}

// Waiting for (or querying) an event recorded in an active capture: not permitted; it
// invalidates the capture.
CUresult captured_event_forbids_sync(Event* ev) {
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lock(cap_mu);
    auto it = ev->capture ? captures.find(ev->capture) : captures.end();
    if (it == captures.end()) return CUDA_SUCCESS;
    invalidate(it->second);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

GraphMemory::~GraphMemory() {
    if (!launched.load()) {
        // Nothing of the graph ran, so nothing can still use its memory.
        std::lock_guard<std::mutex> lock(mu);
        for (CUdeviceptr b : blocks) device_free(b, "cuGraphDestroy (graph never launched)");
        return;
    }
    if (freed.empty()) return;
    // A launch of the graph may still be queued: let the device's streams finish first.
    Device* d = nullptr;
    std::vector<Stream*> streams;
    {
        std::lock_guard<std::mutex> lock(mu);
        auto it = live.find(freed.front());
        if (it != live.end()) d = it->second.device;
        if (d) streams = d->streams;
    }
    for (Stream* s : streams) s->drain();
    std::lock_guard<std::mutex> lock(mu);
    for (CUdeviceptr b : freed) device_free(b, "cuGraphDestroy");
}

struct Graph {
    std::shared_ptr<const std::vector<Op>> ops;
    std::shared_ptr<GraphMemory> memory;
};

}  // namespace

// ---- the driver API ----------------------------------------------------------------------------

extern "C" {

#define API __attribute__((visibility("default")))

API CUresult cuInit(unsigned) {
    std::lock_guard<std::mutex> lock(mu);
    init_devices();
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int* v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int* n) {
    NEED_INIT();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = (int)devices.size();
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    NEED_INIT();
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    if (!device_of(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
    NEED_INIT();
    if (!device_of(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    std::snprintf(name, (size_t)len, "devtype simulated GPU (CPU)");
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    NEED_INIT();
    Device* d = device_of(dev);
    if (!d) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = d->capacity;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
    NEED_INIT();
    if (!device_of(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::memset(uuid, 0, sizeof(CUuuid));
    std::memcpy(uuid->bytes, "devtype-sim", 11);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}
API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

API CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice dev) {
    NEED_INIT();
    if (!device_of(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    int v = 0;
    switch (attribute) {
        case 1: v = 1024; break;                       // MAX_THREADS_PER_BLOCK
        case 2: case 3: v = 1024; break;               // MAX_BLOCK_DIM_X/Y
        case 4: v = 64; break;                         // MAX_BLOCK_DIM_Z
        case 5: v = 2147483647; break;                 // MAX_GRID_DIM_X
        case 6: case 7: v = 65535; break;              // MAX_GRID_DIM_Y/Z
        case 8: v = kMaxSharedPerBlock; break;         // MAX_SHARED_MEMORY_PER_BLOCK
        case 9: v = 65536; break;                      // TOTAL_CONSTANT_MEMORY
        case 10: v = 32; break;                        // WARP_SIZE
        case 12: v = 65536; break;                     // MAX_REGISTERS_PER_BLOCK
        case 13: v = 1755000; break;                   // CLOCK_RATE
        case 16: v = env_int("DEVTYPE_SIM_SMS", 4); break;  // MULTIPROCESSOR_COUNT
        case 39: v = 2048; break;                      // MAX_THREADS_PER_MULTIPROCESSOR
        case 41: v = 1; break;                         // UNIFIED_ADDRESSING
        case 75: v = 9; break;                         // COMPUTE_CAPABILITY_MAJOR
        case 76: v = 0; break;                         // COMPUTE_CAPABILITY_MINOR
        case 97: v = kMaxSharedOptin; break;           // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        case 115: v = 1; break;                        // MEMORY_POOLS_SUPPORTED
        default: v = 0; break;
    }
    *value = v;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
    NEED_INIT();
    if (!device_of(dev) || !device_of(peer)) return CUDA_ERROR_INVALID_DEVICE;
    *can = dev != peer;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
    NEED_INIT();
    CHECK_STICKY();
    std::lock_guard<std::mutex> lock(mu);
    Device* d = device_of(dev);
    if (!d) return CUDA_ERROR_INVALID_DEVICE;
    if (!d->null_stream) d->null_stream = new_stream(d);
    *ctx = reinterpret_cast<CUcontext>(&d->ctx);
    return CUDA_SUCCESS;
}
API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    NEED_INIT();
    return device_of(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

API CUresult cuCtxSetCurrent(CUcontext ctx) {
    NEED_INIT();
    current_ctx = reinterpret_cast<Ctx*>(ctx);
    return CUDA_SUCCESS;
}
API CUresult cuCtxGetCurrent(CUcontext* ctx) {
    NEED_INIT();
    *ctx = reinterpret_cast<CUcontext>(current_ctx);
    return CUDA_SUCCESS;
}
API CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return cuCtxSetCurrent(ctx); }
API CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
    if (ctx) *ctx = reinterpret_cast<CUcontext>(current_ctx);
    return CUDA_SUCCESS;
}
API CUresult cuCtxGetDevice(CUdevice* dev) {
    NEED_INIT();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = current_ctx->device->ordinal;
    return CUDA_SUCCESS;
}
API CUresult cuCtxEnablePeerAccess(CUcontext, unsigned) { return CUDA_SUCCESS; }
API CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return CUDA_SUCCESS;
}
API CUresult cuCtxSetFlags(unsigned) { return CUDA_SUCCESS; }
API CUresult cuCtxGetLimit(size_t* v, int) {
    *v = 0;
    return CUDA_SUCCESS;
}
API CUresult cuCtxSetLimit(int, size_t) { return CUDA_SUCCESS; }
API CUresult cuCtxGetCacheConfig(int* c) {
    *c = 0;
    return CUDA_SUCCESS;
}
API CUresult cuCtxSetCacheConfig(int) { return CUDA_SUCCESS; }

API CUresult cuCtxSynchronize() {
    NEED_INIT();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    Device* d = current_ctx->device;
    if (CUresult r = capture_forbids_unsafe(d)) return r;
    std::vector<Stream*> streams;
    {
        std::lock_guard<std::mutex> lock(mu);
        streams = d->streams;
    }
    for (Stream* s : streams) s->drain();
    return after_sync(d, "cuCtxSynchronize");
}

// ---- streams and events ----

API CUresult cuStreamCreate(CUstream* s, unsigned) {
    NEED_INIT();
    CHECK_STICKY();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> lock(mu);
    *s = reinterpret_cast<CUstream>(new_stream(current_ctx->device));
    return CUDA_SUCCESS;
}
API CUresult cuStreamCreateWithPriority(CUstream* s, unsigned flags, int) { return cuStreamCreate(s, flags); }

API CUresult cuStreamDestroy_v2(CUstream h) {
    NEED_INIT();
    Stream* s = reinterpret_cast<Stream*>(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    {
        std::lock_guard<std::mutex> lock(mu);
        auto& v = s->device->streams;
        v.erase(std::remove(v.begin(), v.end(), s), v.end());
    }
    delete s;
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream h) {
    NEED_INIT();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_forbids_sync(s)) return r;
    if (!h) {
        if (CUresult r = capture_forbids_unsafe(s->device)) return r;
    }
    s->drain();
    return after_sync(s->device, "cuStreamSynchronize");
}

API CUresult cuStreamQuery(CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_forbids_sync(s)) return r;
    std::lock_guard<std::mutex> lock(s->qmu);
    return s->completed.load() >= s->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventCreate(CUevent* e, unsigned flags) {
    NEED_INIT();
    auto* ev = new Event;
    ev->flags = flags;
    *e = reinterpret_cast<CUevent>(ev);
    return CUDA_SUCCESS;
}

API CUresult cuEventDestroy_v2(CUevent e) {
    // A recorded event may be destroyed before it completes: its record operation still
    // refers to it, so it is kept (a few bytes per event).
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent e, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Event* ev = reinterpret_cast<Event*>(e);
    Stream* s = stream_of(h);
    if (!ev || !s) return CUDA_ERROR_INVALID_HANDLE;
    {
        // In a capture the record is a dependency of the graph, not an operation of its own.
        std::lock_guard<std::mutex> lock(cap_mu);
        if (s->capture) {
            if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            ev->capture = s->capture->id;
            return CUDA_SUCCESS;
        }
        ev->capture = 0;
    }
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(mu);
        n = ++ev->recorded;
    }
    s->push([ev, n] {
        std::lock_guard<std::mutex> lock(mu);
        ev->completed = std::max(ev->completed, n);
        ev->at = std::chrono::steady_clock::now();
    });
    return CUDA_SUCCESS;
}
API CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned) { return cuEventRecord(e, h); }

API CUresult cuEventQuery(CUevent e) {
    NEED_INIT();
    CHECK_STICKY();
    Event* ev = reinterpret_cast<Event*>(e);
    if (CUresult r = captured_event_forbids_sync(ev)) return r;
    std::lock_guard<std::mutex> lock(mu);
    return ev->completed >= ev->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventSynchronize(CUevent e) {
    NEED_INIT();
    Event* ev = reinterpret_cast<Event*>(e);
    if (CUresult r = captured_event_forbids_sync(ev)) return r;
    {
        std::unique_lock<std::mutex> lock(mu);
        const uint64_t n = ev->recorded;
        done_cv.wait(lock, [&] { return ev->completed >= n; });
        check_all(nullptr, "cuEventSynchronize");
    }
    return (CUresult)sticky.load();
}

API CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
    NEED_INIT();
    Event* x = reinterpret_cast<Event*>(a);
    Event* y = reinterpret_cast<Event*>(b);
    std::lock_guard<std::mutex> lock(mu);
    if ((x->flags | y->flags) & 2) return CUDA_ERROR_INVALID_HANDLE;  // DISABLE_TIMING
    if (!x->recorded || !y->recorded) return CUDA_ERROR_INVALID_HANDLE;
    if (x->completed < x->recorded || y->completed < y->recorded) return CUDA_ERROR_NOT_READY;
    *ms = std::chrono::duration<float, std::milli>(y->at - x->at).count();
    return CUDA_SUCCESS;
}
API CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) { return cuEventElapsedTime(ms, a, b); }

API CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned) {
    NEED_INIT();
    CHECK_STICKY();
    Event* ev = reinterpret_cast<Event*>(e);
    Stream* s = stream_of(h);
    if (!ev || !s) return CUDA_ERROR_INVALID_HANDLE;
    {
        // Cross-stream capture: a stream that waits on an event recorded in a capture joins it;
        // a capturing stream may not wait on work outside its capture.
        std::lock_guard<std::mutex> lock(cap_mu);
        auto it = ev->capture ? captures.find(ev->capture) : captures.end();
        Capture* from = it == captures.end() ? nullptr : it->second;
        if (from) {
            if (from->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            if (s->capture && s->capture != from) {
                invalidate(s->capture);
                invalidate(from);
                return CUDA_ERROR_STREAM_CAPTURE_MERGE;
            }
            if (!s->capture) {
                s->capture = from;
                from->members.push_back(s);
            }
            return CUDA_SUCCESS;
        }
        if (s->capture) {
            if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            // An event recorded outside the capture (or never recorded): only in-stream order
            // crosses the capture's boundary.
            if (ev->recorded) {
                invalidate(s->capture);
                return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
            }
            return CUDA_SUCCESS;
        }
    }
    uint64_t n;
    {
        std::lock_guard<std::mutex> lock(mu);
        n = ev->recorded;
    }
    if (n == 0) return CUDA_SUCCESS;
    s->push([ev, n] {
        std::unique_lock<std::mutex> lock(mu);
        done_cv.wait(lock, [&] { return ev->completed >= n; });
    });
    return CUDA_SUCCESS;
}

API CUresult cuLaunchHostFunc(CUstream h, void (*fn)(void*), void* data) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s || !fn) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = capture_error(s)) return r;
    s->push([fn, data] { fn(data); });
    return CUDA_SUCCESS;
}

// ---- memory ----

API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
    NEED_INIT();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard<std::mutex> lock(mu);
    Device* d = current_ctx->device;
    *total = d->capacity;
    *free = d->capacity - d->used - d->pool_cached;
    return CUDA_SUCCESS;
}

API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
    NEED_INIT();
    CHECK_STICKY();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = capture_forbids_unsafe(current_ctx->device)) return r;
    std::lock_guard<std::mutex> lock(mu);
    return device_alloc(current_ctx->device, bytes, false, p);
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
    NEED_INIT();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    if (CUresult r = capture_forbids_unsafe(current_ctx->device)) return r;
    cuCtxSynchronize();
    std::lock_guard<std::mutex> lock(mu);
    const CUresult r = device_free(p, "cuMemFree");
    return sticky.load() ? (CUresult)sticky.load() : r;
}

API CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!p || !s) return CUDA_ERROR_INVALID_VALUE;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    {
        // During a capture: CUDA's mem-alloc node. The memory is the graph's, at a fixed
        // address, for as long as the graph (or an executable graph made from it) lives.
        std::unique_lock<std::mutex> clock(cap_mu);
        if (s->capture) {
            if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            std::shared_ptr<GraphMemory> memory = s->capture->memory;
            clock.unlock();
            std::lock_guard<std::mutex> lock(mu);
            const CUresult r = device_alloc(s->device, bytes, false, p);
            if (r == CUDA_SUCCESS) memory->blocks.push_back(*p);
            return r;
        }
    }
    CUresult r;
    {
        std::lock_guard<std::mutex> lock(mu);
        r = device_alloc(s->device, bytes, true, p);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        // The pool reuses memory freed earlier on this stream: let those frees run, then retry.
        s->drain();
        std::lock_guard<std::mutex> lock(mu);
        r = device_alloc(s->device, bytes, true, p);
    }
    return r;
}
API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t bytes, CUmemoryPool, CUstream h) {
    return cuMemAllocAsync(p, bytes, h);
}

API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (!live.count(p)) {
            report("cuMemFreeAsync of 0x%llx, which is not a live allocation (double free?)", (unsigned long long)p);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    {
        // During a capture, memory the capture allocated stays the graph's (a mem-free node
        // would let later alloc nodes reuse it; keeping it is the same to the graph's work).
        // Freeing memory from outside the graph in a graph is not supported by the simulator:
        // replaying it would free the block again.
        std::lock_guard<std::mutex> lock(cap_mu);
        if (s->capture) {
            if (s->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            auto& m = *s->capture->memory;
            if (std::find(m.blocks.begin(), m.blocks.end(), p) != m.blocks.end()) {
                if (std::find(m.freed.begin(), m.freed.end(), p) == m.freed.end()) m.freed.push_back(p);
                return CUDA_SUCCESS;
            }
            report("cuMemFreeAsync of 0x%llx during a capture: the block was not allocated by it",
                   (unsigned long long)p);
            invalidate(s->capture);
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    s->push([p] {
        std::lock_guard<std::mutex> lock(mu);
        // A second free of the same block queued before the first ran: memory corruption on a
        // GPU, so the context fails.
        if (device_free(p, "cuMemFreeAsync") == CUDA_ERROR_INVALID_VALUE) sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    });
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
    NEED_INIT();
    Device* d = device_of(dev);
    if (!d) return CUDA_ERROR_INVALID_DEVICE;
    *pool = reinterpret_cast<CUmemoryPool>(&d->pool);
    return CUDA_SUCCESS;
}
API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) { return cuDeviceGetDefaultMemPool(pool, dev); }

API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void* value) {
    NEED_INIT();
    Pool* p = reinterpret_cast<Pool*>(pool);
    if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    switch (attr) {
        case 4: p->release_threshold = *static_cast<uint64_t*>(value); return CUDA_SUCCESS;
        case 6: p->device->pool_reserved_high = 0; return CUDA_SUCCESS;
        case 8: p->device->pool_used_high = 0; return CUDA_SUCCESS;
        default: return CUDA_SUCCESS;
    }
}

API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void* value) {
    NEED_INIT();
    Pool* p = reinterpret_cast<Pool*>(pool);
    if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    Device* d = p->device;
    uint64_t v = 0;
    switch (attr) {
        case 4: v = p->release_threshold; break;
        case 5: v = d->pool_used + d->pool_cached; break;
        case 6: v = d->pool_reserved_high; break;
        case 7: v = d->pool_used; break;
        case 8: v = d->pool_used_high; break;
        default: *static_cast<int*>(value) = 1; return CUDA_SUCCESS;
    }
    *static_cast<uint64_t*>(value) = v;
    return CUDA_SUCCESS;
}

API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
    NEED_INIT();
    Pool* p = reinterpret_cast<Pool*>(pool);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(mu);
    p->device->pool_cached = std::min<uint64_t>(p->device->pool_cached, keep);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned) {
    NEED_INIT();
    CHECK_STICKY();
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    const size_t block_bytes = round_up(bytes ? bytes : 1, 4096);
    char* block = map_block(block_bytes);
    if (!block) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(block, kFresh, bytes);
    std::lock_guard<std::mutex> lock(mu);
    pinned[reinterpret_cast<uintptr_t>(block)] = Alloc{block, block_bytes, bytes, 0, nullptr, false};
    *pp = block;
    return CUDA_SUCCESS;
}
API CUresult cuMemAllocHost_v2(void** pp, size_t bytes) { return cuMemHostAlloc(pp, bytes, 0); }

API CUresult cuMemFreeHost(void* p) {
    NEED_INIT();
    std::lock_guard<std::mutex> lock(mu);
    auto it = pinned.find(reinterpret_cast<uintptr_t>(p));
    if (it == pinned.end()) return CUDA_ERROR_INVALID_VALUE;
    munmap(it->second.block, it->second.block_bytes);
    pinned.erase(it);
    return CUDA_SUCCESS;
}

// ---- copies ----

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    if (CUresult r = check_device_range(dst, n, "cuMemcpyHtoDAsync")) return r;
    if (n == 0) return CUDA_SUCCESS;
    bool from_pinned;
    {
        std::lock_guard<std::mutex> lock(mu);
        from_pinned = is_pinned(src, n);
    }
    if (from_pinned) {
        // Page-locked memory is read when the copy runs, as a GPU's DMA engine reads it.
        s->push([dst, src, n] {
            running_stream->dma_delay();
            std::memcpy(reinterpret_cast<void*>(dst), src, n);
        });
    } else {
        if (CUresult r = capture_forbids_sync(s)) return r;
        // Pageable memory is staged before the call returns.
        auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + n);
        s->push([dst, staged] { std::memcpy(reinterpret_cast<void*>(dst), staged->data(), staged->size()); });
    }
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    if (CUresult r = check_device_range(src, n, "cuMemcpyDtoHAsync")) return r;
    if (n == 0) return CUDA_SUCCESS;
    bool to_pinned;
    {
        std::lock_guard<std::mutex> lock(mu);
        to_pinned = is_pinned(dst, n);
    }
    if (!to_pinned) {
        if (CUresult r = capture_forbids_sync(s)) return r;
    }
    const uint64_t seq = s->push([dst, src, n, to_pinned] {
        if (to_pinned) running_stream->dma_delay();
        std::memcpy(dst, reinterpret_cast<const void*>(src), n);
    });
    // A copy to pageable memory returns when it is done.
    if (!to_pinned) s->wait_for(seq);
    return (CUresult)sticky.load();
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    if (CUresult r = check_device_range(src, n, "cuMemcpyDtoDAsync")) return r;
    if (CUresult r = check_device_range(dst, n, "cuMemcpyDtoDAsync")) return r;
    if (n) s->push([dst, src, n] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); });
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n, CUstream h) {
    return cuMemcpyDtoDAsync_v2(dst, src, n, h);
}

API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    if (CUresult r = check_device_range(dst, n, "cuMemsetD8Async")) return r;
    if (n) s->push([dst, value, n] { std::memset(reinterpret_cast<void*>(dst), value, n); });
    return CUDA_SUCCESS;
}

API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t n, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    if (CUresult r = check_device_range(dst, n * 4, "cuMemsetD32Async")) return r;
    if (n)
        s->push([dst, value, n] {
            unsigned* p = reinterpret_cast<unsigned*>(dst);
            for (size_t i = 0; i < n; ++i) p[i] = value;
        });
    return CUDA_SUCCESS;
}

// The synchronous forms run on the context's null stream and wait (not permitted during a
// capture: they synchronize).
static CUresult sync_copy_allowed() {
    Device* d = current_ctx ? current_ctx->device : device_of(0);
    return d ? capture_forbids_unsafe(d) : CUDA_SUCCESS;
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    if (CUresult r = sync_copy_allowed()) return r;
    CUresult r = cuMemcpyHtoDAsync_v2(dst, src, n, nullptr);
    return r ? r : cuStreamSynchronize(nullptr);
}
API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    if (CUresult r = sync_copy_allowed()) return r;
    CUresult r = cuMemcpyDtoHAsync_v2(dst, src, n, nullptr);
    return r ? r : cuStreamSynchronize(nullptr);
}
API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    if (CUresult r = sync_copy_allowed()) return r;
    CUresult r = cuMemcpyDtoDAsync_v2(dst, src, n, nullptr);
    return r ? r : cuStreamSynchronize(nullptr);
}
API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
    if (CUresult r = sync_copy_allowed()) return r;
    CUresult r = cuMemsetD8Async(dst, v, n, nullptr);
    return r ? r : cuStreamSynchronize(nullptr);
}

// ---- modules and launches ----

API CUresult cuModuleLoadData(CUmodule* m, const void* image) {
    NEED_INIT();
    CHECK_STICKY();
    if (!current_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    // The image the NVRTC stand-in returns: "devtype-sim-module\n<file>\n<hash hex>\n".
    const char* text = static_cast<const char*>(image);
    static const char magic[] = "devtype-sim-module\n";
    if (std::strncmp(text, magic, sizeof(magic) - 1) != 0) return CUDA_ERROR_INVALID_IMAGE;
    std::string rest(text + sizeof(magic) - 1);
    const size_t nl = rest.find('\n');
    if (nl == std::string::npos) return CUDA_ERROR_INVALID_IMAGE;
    const std::string file = rest.substr(0, nl);
    const uint64_t hash = std::strtoull(rest.c_str() + nl + 1, nullptr, 16);
    bool known = false;
    for (unsigned i = 0; i < kernel_file_count; ++i)
        known |= file == kernel_files[i].file && hash == kernel_files[i].source_hash;
    if (!known) return CUDA_ERROR_INVALID_IMAGE;
    CUdeviceptr reserve = 0;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (CUresult r = device_alloc(current_ctx->device, kModuleBytes, false, &reserve)) return r;
    }
    *m = reinterpret_cast<CUmodule>(new Module{file, current_ctx->device, reserve});
    return CUDA_SUCCESS;
}

API CUresult cuModuleUnload(CUmodule m) {
    NEED_INIT();
    Module* mod = reinterpret_cast<Module*>(m);
    if (!mod) return CUDA_ERROR_INVALID_HANDLE;
    {
        std::lock_guard<std::mutex> lock(mu);
        device_free(mod->reserve, "cuModuleUnload");
    }
    delete mod;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
    NEED_INIT();
    Module* mod = reinterpret_cast<Module*>(m);
    if (!mod || !f || !name) return CUDA_ERROR_INVALID_VALUE;
    const KernelInfo* k = find_kernel(mod->file, name);
    if (!k) return CUDA_ERROR_NOT_FOUND;
    *f = reinterpret_cast<CUfunction>(new Function{k, mod->file});
    return CUDA_SUCCESS;
}

API CUresult cuFuncGetAttribute(int* v, int attr, CUfunction f) {
    Function* fn = reinterpret_cast<Function*>(f);
    if (!fn || !v) return CUDA_ERROR_INVALID_VALUE;
    *v = attr == 0 ? 1024 : attr == 8 ? fn->max_dynamic_shared : 0;
    return CUDA_SUCCESS;
}

API CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
    Function* fn = reinterpret_cast<Function*>(f);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    if (attr == 8) {
        if (value < 0 || value > kMaxSharedOptin) return CUDA_ERROR_INVALID_VALUE;
        fn->max_dynamic_shared = value;
    }
    return CUDA_SUCCESS;
}
API CUresult cuFuncSetCacheConfig(CUfunction, int) { return CUDA_SUCCESS; }

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream h, void** params, void** extra) {
    NEED_INIT();
    CHECK_STICKY();
    Function* fn = reinterpret_cast<Function*>(f);
    Stream* s = stream_of(h);
    if (!fn || !s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    // The limits of compute capability 9.0, checked as the driver checks them.
    const uint64_t threads = (uint64_t)bx * by * bz;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || threads > 1024 || bx > 1024 ||
        by > 1024 || bz > 64 || gx > 2147483647u || gy > 65535 || gz > 65535 ||
        (int)shared > fn->max_dynamic_shared) {
        report("cuLaunchKernel(%s): grid (%u, %u, %u), block (%u, %u, %u), %u bytes of shared memory are past "
               "the device's limits",
               fn->kernel->name, gx, gy, gz, bx, by, bz, shared);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    const KernelInfo* k = fn->kernel;
    if (k->param_count && !params) return CUDA_ERROR_INVALID_VALUE;
    // Copy the arguments now, as the driver does: the caller may reuse them once this returns.
    size_t total = 0;
    std::vector<size_t> offsets(k->param_count);
    for (unsigned i = 0; i < k->param_count; ++i) {
        total = round_up(total, k->params[i].align);
        offsets[i] = total;
        total += k->params[i].size;
    }
    auto blob = std::make_shared<std::vector<char>>(total + 16);
    char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(blob->data()), 16));
    auto ptrs = std::make_shared<std::vector<void*>>(k->param_count);
    for (unsigned i = 0; i < k->param_count; ++i) {
        std::memcpy(base + offsets[i], params[i], k->params[i].size);
        (*ptrs)[i] = base + offsets[i];
    }
    Device* d = s->device;
    s->push([k, d, blob, ptrs, gx, gy, gz, bx, by, bz] {
        {
            std::lock_guard<std::mutex> lock(mu);
            d->last_kernel = k->name;
        }
        const std::string failure = run_grid(*k, dim3{gx, gy, gz}, dim3{bx, by, bz}, ptrs->data());
        if (!failure.empty()) {
            report("%s", failure.c_str());
            sticky = CUDA_ERROR_LAUNCH_FAILED;
        }
    });
    return CUDA_SUCCESS;
}

// ---- stream capture and graphs ----

API CUresult cuStreamBeginCapture_v2(CUstream h, int mode) {
    NEED_INIT();
    CHECK_STICKY();
    if (!h) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot capture
    Stream* s = reinterpret_cast<Stream*>(h);
    if (mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(cap_mu);
    if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    auto* c = new Capture;
    c->id = ++capture_counter;
    c->device = s->device;
    c->origin = s;
    c->mode = mode;
    c->thread = std::this_thread::get_id();
    c->members.push_back(s);
    captures[c->id] = c;
    s->capture = c;
    return CUDA_SUCCESS;
}
API CUresult cuStreamBeginCapture(CUstream h, int mode) { return cuStreamBeginCapture_v2(h, mode); }

API CUresult cuStreamEndCapture(CUstream h, CUgraph* graph) {
    NEED_INIT();
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    *graph = nullptr;
    Stream* s = stream_of(h);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    std::unique_ptr<Capture> c;
    {
        std::lock_guard<std::mutex> lock(cap_mu);
        if (!s->capture) return CUDA_ERROR_ILLEGAL_STATE;
        if (s->capture->origin != s) {
            invalidate(s->capture);
            return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
        }
        if (s->capture->mode == 1 && s->capture->thread != std::this_thread::get_id())
            return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
        c.reset(s->capture);
        captures.erase(c->id);
        for (Stream* m : c->members) m->capture = nullptr;
    }
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;  // its memory goes with it
    auto* g = new Graph{std::make_shared<const std::vector<Op>>(std::move(c->ops)), c->memory};
    *graph = reinterpret_cast<CUgraph>(g);
    return CUDA_SUCCESS;
}

// CU_STREAM_CAPTURE_STATUS_NONE 0, ACTIVE 1, INVALIDATED 2.
API CUresult cuStreamIsCapturing(CUstream h, int* status) {
    NEED_INIT();
    Stream* s = stream_of(h);
    if (!s || !status) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(cap_mu);
    *status = !s->capture ? 0 : s->capture->invalidated ? 2 : 1;
    return CUDA_SUCCESS;
}

API CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
    NEED_INIT();
    CHECK_STICKY();
    Graph* g = reinterpret_cast<Graph*>(graph);
    if (!exec || !g) return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~0xfull) return CUDA_ERROR_INVALID_VALUE;
    *exec = reinterpret_cast<CUgraphExec>(new Graph(*g));
    return CUDA_SUCCESS;
}

// Queues the graph's operations, in their captured order, on the stream.
API CUresult cuGraphLaunch(CUgraphExec exec, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    Graph* g = reinterpret_cast<Graph*>(exec);
    Stream* s = stream_of(h);
    if (!g || !s) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = capture_error(s)) return r;
    g->memory->launched = true;
    for (const Op& op : *g->ops) s->push(op);
    return CUDA_SUCCESS;
}

API CUresult cuGraphUpload(CUgraphExec exec, CUstream h) {
    NEED_INIT();
    CHECK_STICKY();
    if (!exec || !stream_of(h)) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

API CUresult cuGraphExecDestroy(CUgraphExec exec) {
    NEED_INIT();
    if (!exec) return CUDA_ERROR_INVALID_VALUE;
    delete reinterpret_cast<Graph*>(exec);
    return CUDA_SUCCESS;
}

API CUresult cuGraphDestroy(CUgraph graph) {
    NEED_INIT();
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    delete reinterpret_cast<Graph*>(graph);
    return CUDA_SUCCESS;
}

// ---- errors ----

API CUresult cuGetErrorName(CUresult e, const char** s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define NAME(x) \
    case x: *s = #x; return CUDA_SUCCESS;
        CU_ERROR_LIST(NAME)
#undef NAME
        default: *s = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

API CUresult cuGetErrorString(CUresult e, const char** s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define TEXT(x, text) \
    case x: *s = text; return CUDA_SUCCESS;
        CU_ERROR_TEXTS(TEXT)
#undef TEXT
        default: *s = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

}  // extern "C"
