// Simulated libcublasLt.so. The real libcublas.so depends on libcublasLt.so (same folder, same
// version), and devtype checks that both come from one folder; the simulated libcublas.so links
// this one the same way. devtype and cudarc call nothing in it; it answers version queries only.
#include <cstddef>

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT size_t cublasLtGetVersion(void) { return 130000; }
EXPORT size_t cublasLtGetCudartVersion(void) { return 13000; }
