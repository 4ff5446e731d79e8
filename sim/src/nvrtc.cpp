// libnvrtc.so of the simulated device. There is no GPU code to generate: every kernel file was
// compiled ahead, as host C++, into the simulated libcuda.so. "Compiling" a program finds the
// kernel file it is (by its name and the hash of its source with common.cuh) and returns a
// small image naming it, which the simulated cuModuleLoadData accepts. A program whose source
// differs from what the simulator was built from fails to compile, with a log that says so.
//
// nvrtcVersion reports 0.1: devtype's on-disk kernel cache keys entries by the NVRTC version,
// so simulated images and real cubins never share an entry.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_registry.h"

namespace {

enum nvrtcResult {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
};

struct Program {
    std::string name;
    std::string source;
    std::string header;  // common.cuh as given, empty when not given
    std::string image;   // with its terminating NUL
    std::string log;
    bool compiled = false;
};

}  // namespace

extern "C" {

#define API __attribute__((visibility("default")))

API const char* nvrtcGetErrorString(nvrtcResult r) {
    switch (r) {
        case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
        case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
        case NVRTC_ERROR_PROGRAM_CREATION_FAILURE: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
        case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
        case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
        case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
        case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
        default: return "NVRTC_ERROR unknown";
    }
}

API nvrtcResult nvrtcVersion(int* major, int* minor) {
    if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
    *major = 0;
    *minor = 1;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    *n = 1;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetSupportedArchs(int* archs) {
    if (!archs) return NVRTC_ERROR_INVALID_INPUT;
    archs[0] = 90;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcCreateProgram(Program** prog, const char* src, const char* name, int num_headers,
                                   const char* const* headers, const char* const* include_names) {
    if (!prog || !src) return NVRTC_ERROR_INVALID_INPUT;
    if (num_headers < 0 || (num_headers > 0 && (!headers || !include_names))) return NVRTC_ERROR_INVALID_INPUT;
    auto* p = new Program;
    p->name = name ? name : "default_program";
    p->source = src;
    for (int i = 0; i < num_headers; ++i)
        if (include_names[i] && std::strcmp(include_names[i], "common.cuh") == 0 && headers[i]) p->header = headers[i];
    *prog = p;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcDestroyProgram(Program** prog) {
    if (!prog || !*prog) return NVRTC_ERROR_INVALID_PROGRAM;
    delete *prog;
    *prog = nullptr;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcCompileProgram(Program* p, int num_options, const char* const* options) {
    if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
    if (num_options < 0 || (num_options > 0 && !options)) return NVRTC_ERROR_INVALID_INPUT;
    const uint64_t hash = devtype_sim::fnv1a(p->header.data(), p->header.size(),
                                             devtype_sim::fnv1a(p->source.data(), p->source.size()));
    std::string base = p->name;
    if (const size_t slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
    for (unsigned i = 0; i < devtype_sim::kernel_file_count; ++i) {
        const devtype_sim::KernelFileInfo& f = devtype_sim::kernel_files[i];
        if (base != f.file) continue;
        if (f.source_hash != hash) {
            p->log = p->name +
                     ": the simulated device was built from a different version of this kernel file "
                     "(or of common.cuh); rebuild it (scripts/cuda-sim.sh does when the sources change)";
            return NVRTC_ERROR_COMPILATION;
        }
        char hex[32];
        std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
        p->image = "devtype-sim-module\n" + std::string(f.file) + "\n" + hex + "\n";
        p->image.push_back('\0');
        p->compiled = true;
        p->log.clear();
        return NVRTC_SUCCESS;
    }
    p->log = p->name + ": the simulated device has no kernel file of this name (it runs kernels/*.cu, built ahead)";
    return NVRTC_ERROR_COMPILATION;
}

API nvrtcResult nvrtcGetProgramLogSize(Program* p, size_t* n) {
    if (!p || !n) return NVRTC_ERROR_INVALID_INPUT;
    *n = p->log.size() + 1;
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetProgramLog(Program* p, char* log) {
    if (!p || !log) return NVRTC_ERROR_INVALID_INPUT;
    std::memcpy(log, p->log.c_str(), p->log.size() + 1);
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetCUBINSize(Program* p, size_t* n) {
    if (!p || !n) return NVRTC_ERROR_INVALID_INPUT;
    if (!p->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    *n = p->image.size();
    return NVRTC_SUCCESS;
}

API nvrtcResult nvrtcGetCUBIN(Program* p, char* out) {
    if (!p || !out) return NVRTC_ERROR_INVALID_INPUT;
    if (!p->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    std::memcpy(out, p->image.data(), p->image.size());
    return NVRTC_SUCCESS;
}

// The "PTX" is the same image: it is text, and cuModuleLoadData accepts it too.
API nvrtcResult nvrtcGetPTXSize(Program* p, size_t* n) { return nvrtcGetCUBINSize(p, n); }
API nvrtcResult nvrtcGetPTX(Program* p, char* out) { return nvrtcGetCUBIN(p, out); }

}  // extern "C"
