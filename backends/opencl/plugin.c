/*
 * plugin.c — the entry of the OpenCL plugin (ts_backend_get_api), its ts_backend_api table and
 * its devices: opencl:N is the N-th OpenCL device found, platforms in the ICD loader's order and
 * devices in each platform's order. A device has one context and one in-order command queue.
 */
#include "ocl.h"

#include <stdio.h>
#include <stdlib.h>

const ts_host_api *ocl_host;

#define MAX_DEVICES 64

int ocl_find_devices(cl_platform_id *plat, cl_device_id *ids, int cap) {
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 0;
    int n = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ds[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && n < cap; i++) {
            plat[n] = ps[p];
            ids[n++] = ds[i];
        }
    }
    return n;
}

static int device_count(void) {
    cl_platform_id plat[MAX_DEVICES];
    cl_device_id ids[MAX_DEVICES];
    return ocl_find_devices(plat, ids, MAX_DEVICES);
}

static void device_close(void *dev) {
    ocl_dev *d = dev;
    if (!d) return;
    if (d->queue) clFinish(d->queue);
    for (int i = 0; i < d->nkernels; i++) clReleaseKernel(d->kernels[i]);
    if (d->err) clReleaseMemObject(d->err);
    if (d->prog) clReleaseProgram(d->prog);
    if (d->queue) clReleaseCommandQueue(d->queue);
    if (d->ctx) clReleaseContext(d->ctx);
    free(d);
}

static ts_status device_open(const ts_device_args *args, void **dev) {
    cl_platform_id plat[MAX_DEVICES];
    cl_device_id ids[MAX_DEVICES];
    int n = ocl_find_devices(plat, ids, MAX_DEVICES);
    if (!args || args->index < 0 || args->index >= n)
        return OCL_ERR(TS_ERR_NOT_FOUND, "opencl: no device opencl:%d (%d OpenCL device%s found)",
                       args ? args->index : -1, n, n == 1 ? "" : "s");
    ocl_dev *d = calloc(1, sizeof *d);
    if (!d) return OCL_ERR(TS_ERR_NOMEM, "opencl: out of memory opening a device");
    d->index = args->index;
    d->platform = plat[args->index];
    d->id = ids[args->index];
    clGetDeviceInfo(d->id, CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
    cl_ulong gm = 0, ma = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
    d->global_mem = (size_t)gm;
    d->max_alloc = (size_t)ma;
    cl_int e;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
    d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &e);
    if (e == CL_SUCCESS) d->queue = clCreateCommandQueue(d->ctx, d->id, 0, &e);
    if (e == CL_SUCCESS) d->err = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, 4 * sizeof(cl_int), NULL, &e);
    if (e != CL_SUCCESS) {
        device_close(d);
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d (%s): cannot make a context and queue: %s", args->index,
                       d->name, ocl_errname(e));
    }
    *dev = d;
    return TS_OK;
}

static const ts_backend_api api = {
    .struct_size = sizeof(ts_backend_api),
    .abi_major = TS_ABI_MAJOR,
    .abi_minor = TS_ABI_MINOR,
    .name = "opencl",
    .device_count = device_count,
    .device_open = device_open,
    .device_close = device_close,
    .memory_bytes = ocl_memory_bytes,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .copy_to_device = ocl_copy_to_device,
    .copy_to_host = ocl_copy_to_host,
    .copy_from_device = ocl_copy_from_device,
    .supports = ocl_supports,
    .compile = ocl_compile,
    .execute = ocl_execute,
    .release = ocl_release,
    .synchronize = ocl_synchronize,
    .max_alloc = ocl_max_alloc,
};

TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *host) {
    if (!host || host->abi_major != TS_ABI_MAJOR) {
        if (host && host->error)
            host->error(TS_ERR_UNSUPPORTED, "opencl plugin: built for tessera ABI 2.x, the host has another major");
        return NULL;
    }
    ocl_host = host;
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) {
        host->error(TS_ERR_UNSUPPORTED, "opencl plugin: no OpenCL platform (is an ICD such as PoCL installed?)");
        return NULL;
    }
    return &api;
}

const char *ocl_errname(cl_int e) {
    switch (e) {
#define C(x) case x: return #x;
    C(CL_SUCCESS) C(CL_DEVICE_NOT_FOUND) C(CL_DEVICE_NOT_AVAILABLE) C(CL_COMPILER_NOT_AVAILABLE)
    C(CL_MEM_OBJECT_ALLOCATION_FAILURE) C(CL_OUT_OF_RESOURCES) C(CL_OUT_OF_HOST_MEMORY)
    C(CL_BUILD_PROGRAM_FAILURE) C(CL_MISALIGNED_SUB_BUFFER_OFFSET) C(CL_INVALID_VALUE)
    C(CL_INVALID_DEVICE) C(CL_INVALID_CONTEXT) C(CL_INVALID_COMMAND_QUEUE) C(CL_INVALID_MEM_OBJECT)
    C(CL_INVALID_PROGRAM) C(CL_INVALID_PROGRAM_EXECUTABLE) C(CL_INVALID_KERNEL_NAME)
    C(CL_INVALID_KERNEL) C(CL_INVALID_ARG_INDEX) C(CL_INVALID_ARG_VALUE) C(CL_INVALID_ARG_SIZE)
    C(CL_INVALID_KERNEL_ARGS) C(CL_INVALID_WORK_DIMENSION) C(CL_INVALID_WORK_GROUP_SIZE)
    C(CL_INVALID_WORK_ITEM_SIZE) C(CL_INVALID_GLOBAL_OFFSET) C(CL_INVALID_BUFFER_SIZE)
    C(CL_INVALID_OPERATION) C(CL_INVALID_GLOBAL_WORK_SIZE)
#undef C
    default: {
        static __thread char buf[32];
        snprintf(buf, sizeof buf, "CL error %d", (int)e);
        return buf;
    }
    }
}
