// The driver API's types and result codes, as CUDA 13.0 defines them (cudarc's sys bindings
// are the ABI the simulated libcuda.so implements).
#pragma once

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUmemPoolHandle_st* CUmemoryPool;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

#define CU_ERROR_TEXTS(X)                                                             \
    X(CUDA_SUCCESS, "no error")                                                       \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                   \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                      \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                             \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                     \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                            \
    X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                     \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                           \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                           \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                 \
    X(CUDA_ERROR_NOT_READY, "device not ready")                                       \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")         \
    X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                         \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                            \
    X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture") \
    X(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences") \
    X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began") \
    X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream") \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

#define CU_ERROR_LIST(N)                \
    N(CUDA_SUCCESS)                     \
    N(CUDA_ERROR_INVALID_VALUE)         \
    N(CUDA_ERROR_OUT_OF_MEMORY)         \
    N(CUDA_ERROR_NOT_INITIALIZED)       \
    N(CUDA_ERROR_NO_DEVICE)             \
    N(CUDA_ERROR_INVALID_DEVICE)        \
    N(CUDA_ERROR_INVALID_IMAGE)         \
    N(CUDA_ERROR_INVALID_CONTEXT)       \
    N(CUDA_ERROR_INVALID_HANDLE)        \
    N(CUDA_ERROR_NOT_FOUND)             \
    N(CUDA_ERROR_NOT_READY)             \
    N(CUDA_ERROR_ILLEGAL_ADDRESS)       \
    N(CUDA_ERROR_LAUNCH_FAILED)         \
    N(CUDA_ERROR_NOT_SUPPORTED)         \
    N(CUDA_ERROR_ILLEGAL_STATE)         \
    N(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) \
    N(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) \
    N(CUDA_ERROR_STREAM_CAPTURE_MERGE)  \
    N(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED) \
    N(CUDA_ERROR_STREAM_CAPTURE_ISOLATION) \
    N(CUDA_ERROR_UNKNOWN)

typedef enum CUresult_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = 902,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905,
    CUDA_ERROR_UNKNOWN = 999,
} CUresult;
