// Executes a kernel launch on the host: blocks one after another, the threads of a block as
// fibers. A thread runs until it finishes or waits at a barrier (`__syncthreads`, or a warp
// exchange behind `__shfl_*_sync` and `__ballot_sync`); the scheduler then resumes the others
// in turn, and a barrier opens when every live thread of its block (or warp) has arrived, as on
// a GPU. A thread that never waits runs start to end on a stack reused by the next thread, so
// kernels without barriers cost one context switch per thread.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "kernel_registry.h"

namespace devtype_sim {

thread_local const ThreadCoords* current = nullptr;

// ---- registry ----------------------------------------------------------------------------------

namespace {
std::map<std::string, std::map<std::string, const KernelInfo*>>& registry() {
    // Never destroyed: a stream thread may launch a kernel while the process exits.
    static auto* r = new std::map<std::string, std::map<std::string, const KernelInfo*>>;
    return *r;
}
}  // namespace

Registration::Registration(const char* file, const KernelInfo* kernels, unsigned count) {
    auto& names = registry()[file];
    for (unsigned i = 0; i < count; ++i) names[kernels[i].name] = &kernels[i];
}

const KernelInfo* find_kernel(const std::string& file, const std::string& name) {
    auto f = registry().find(file);
    if (f == registry().end()) return nullptr;
    auto k = f->second.find(name);
    return k == f->second.end() ? nullptr : k->second;
}

// ---- context switch ----------------------------------------------------------------------------

#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save,
// switches to `to` and pops the registers saved there.
extern "C" void devtype_sim_switch(void** save, void* to);
asm(R"(
    .text
    .globl devtype_sim_switch
    .hidden devtype_sim_switch
    .type devtype_sim_switch,@function
devtype_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size devtype_sim_switch, .-devtype_sim_switch
)");
#else
#error "the simulated device's fibers are written for x86_64"
#endif

namespace {

constexpr size_t kStackBytes = 128 * 1024;
constexpr size_t kGuardBytes = 4096;

struct Fiber {
    void* sp = nullptr;
    char* stack = nullptr;
    ThreadCoords coords{};
    unsigned linear = 0;
    bool done = false;
};

struct Warp {
    unsigned live = 0, arrived = 0, gen = 0;
    unsigned exited = 0;  // bit per lane
    alignas(16) unsigned char slots[32][16];
};

struct Block {
    const KernelInfo* kernel = nullptr;
    void* const* args = nullptr;
    unsigned live = 0, arrived = 0, gen = 0;
    unsigned long long progress = 0;
    std::vector<Warp> warps;
    void* scheduler_sp = nullptr;
    Fiber* running = nullptr;
};

thread_local Block* block_state = nullptr;
thread_local std::vector<char*> free_stacks;

char* take_stack() {
    if (!free_stacks.empty()) {
        char* s = free_stacks.back();
        free_stacks.pop_back();
        return s;
    }
    void* m = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        std::fprintf(stderr, "devtype-sim: cannot map a fiber stack\n");
        std::abort();
    }
    mprotect(m, kGuardBytes, PROT_NONE);  // overflow faults instead of corrupting
    return static_cast<char*>(m) + kGuardBytes;
}

void give_stack(char* s) { free_stacks.push_back(s); }

void yield() {
    Block& b = *block_state;
    Fiber* f = b.running;
    devtype_sim_switch(&f->sp, b.scheduler_sp);
}

void release_if_complete(unsigned& arrived, unsigned live, unsigned& gen) {
    if (arrived > 0 && arrived >= live) {
        arrived = 0;
        ++gen;
    }
}

void warp_barrier(Warp& w) {
    Block& b = *block_state;
    const unsigned g = w.gen;
    ++b.progress;
    if (++w.arrived >= w.live) {
        w.arrived = 0;
        ++w.gen;
        return;
    }
    while (w.gen == g) yield();
}

[[noreturn]] void fiber_main() {
    Block& b = *block_state;
    Fiber* f = b.running;
    b.kernel->run(b.args);
    // The thread exits: barriers stop waiting for it.
    Block& after = *block_state;
    f->done = true;
    ++after.progress;
    --after.live;
    release_if_complete(after.arrived, after.live, after.gen);
    Warp& w = after.warps[f->linear / 32];
    --w.live;
    w.exited |= 1u << (f->linear % 32);
    release_if_complete(w.arrived, w.live, w.gen);
    devtype_sim_switch(&f->sp, after.scheduler_sp);
    std::abort();  // a finished fiber is never resumed
}

void start(Fiber* f) {
    f->stack = take_stack();
    // The stack as devtype_sim_switch leaves it: six saved registers, then the return address
    // (fiber_main), then a fake return address for fiber_main's frame (16-byte alignment).
    uintptr_t top = reinterpret_cast<uintptr_t>(f->stack + kStackBytes) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;
    *--sp = reinterpret_cast<void*>(&fiber_main);
    for (int i = 0; i < 6; ++i) *--sp = nullptr;
    f->sp = sp;
}

void resume(Block& b, Fiber* f) {
    current = &f->coords;
    b.running = f;
    devtype_sim_switch(&b.scheduler_sp, f->sp);
    b.running = nullptr;
}

}  // namespace

// ---- intrinsics ------------------------------------------------------------------------------

void syncthreads() {
    Block& b = *block_state;
    const unsigned g = b.gen;
    ++b.progress;
    if (++b.arrived >= b.live) {
        b.arrived = 0;
        ++b.gen;
        return;
    }
    while (b.gen == g) yield();
}

void syncwarp() { warp_barrier(block_state->warps[block_state->running->linear / 32]); }

unsigned lane() { return block_state->running->linear % 32; }

void warp_exchange(const void* value, void* out, size_t bytes, unsigned src) {
    Block& b = *block_state;
    const unsigned linear = b.running->linear;
    Warp& w = b.warps[linear / 32];
    const unsigned me = linear % 32;
    std::memcpy(w.slots[me], value, bytes);
    warp_barrier(w);
    const unsigned warp_base = linear - me;
    const unsigned threads = b.running->coords.block_dim.x * b.running->coords.block_dim.y * b.running->coords.block_dim.z;
    const bool present = src < 32 && warp_base + src < threads && !(w.exited & (1u << src));
    std::memcpy(out, present ? w.slots[src] : value, bytes);
    warp_barrier(w);
}

unsigned warp_ballot(bool pred) {
    unsigned char bit = pred ? 1 : 0;
    unsigned mask = 0;
    // Each lane publishes its bit; lane i reads everyone's after the barrier.
    Block& b = *block_state;
    const unsigned linear = b.running->linear;
    Warp& w = b.warps[linear / 32];
    const unsigned me = linear % 32;
    w.slots[me][0] = bit;
    warp_barrier(w);
    const unsigned warp_base = linear - me;
    const unsigned threads = b.running->coords.block_dim.x * b.running->coords.block_dim.y * b.running->coords.block_dim.z;
    for (unsigned l = 0; l < 32 && warp_base + l < threads; ++l)
        if (!(w.exited & (1u << l)) && w.slots[l][0]) mask |= 1u << l;
    warp_barrier(w);
    return mask;
}

// ---- the grid ----------------------------------------------------------------------------------

std::string run_grid(const KernelInfo& kernel, dim3 grid, dim3 block, void* const* args) {
    const unsigned threads = block.x * block.y * block.z;
    std::vector<Fiber> fibers(threads);
    std::vector<Fiber*> waiting;
    waiting.reserve(threads);
    Block b;
    b.kernel = &kernel;
    b.args = args;
    b.warps.resize((threads + 31) / 32);
    Block* saved = block_state;
    block_state = &b;
    std::string failure;
    for (unsigned bz = 0; bz < grid.z && failure.empty(); ++bz)
        for (unsigned by = 0; by < grid.y && failure.empty(); ++by)
            for (unsigned bx = 0; bx < grid.x && failure.empty(); ++bx) {
                b.live = threads;
                b.arrived = 0;
                for (unsigned w = 0; w < b.warps.size(); ++w) {
                    Warp& warp = b.warps[w];
                    warp.live = std::min(32u, threads - w * 32);
                    warp.arrived = 0;
                    warp.exited = 0;
                }
                waiting.clear();
                unsigned t = 0;
                for (unsigned z = 0; z < block.z; ++z)
                    for (unsigned y = 0; y < block.y; ++y)
                        for (unsigned x = 0; x < block.x; ++x, ++t) {
                            Fiber* f = &fibers[t];
                            f->coords = ThreadCoords{{x, y, z}, {bx, by, bz}, block, grid};
                            f->linear = t;
                            f->done = false;
                            start(f);
                            resume(b, f);
                            if (f->done)
                                give_stack(f->stack);
                            else
                                waiting.push_back(f);
                        }
                while (!waiting.empty()) {
                    const unsigned long long before = b.progress;
                    size_t kept = 0;
                    for (Fiber* f : waiting) {
                        resume(b, f);
                        if (f->done)
                            give_stack(f->stack);
                        else
                            waiting[kept++] = f;
                    }
                    waiting.resize(kept);
                    if (!waiting.empty() && b.progress == before) {
                        failure = "kernel `" + std::string(kernel.name) +
                                  "` deadlocked: threads wait at barriers that the others never reach";
                        for (Fiber* f : waiting) give_stack(f->stack);
                        waiting.clear();
                    }
                }
            }
    block_state = saved;
    return failure;
}

}  // namespace devtype_sim
