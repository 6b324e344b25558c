/*
 * memory.c — device memory of the OpenCL plugin: a buffer is one cl_mem (ts_buffer.mem), offsets
 * are bytes. Host copies are blocking reads / writes on the device's queue (so they also wait
 * for every kernel queued before them); device-to-device copies between two opencl devices go
 * through host memory unless both share the context (never here: one context per device).
 */
#include "ocl.h"

#include <stdlib.h>

size_t ocl_memory_bytes(void *dev) { return ((ocl_dev *)dev)->global_mem; }
size_t ocl_max_alloc(void *dev) { return ((ocl_dev *)dev)->max_alloc; }

ts_status ocl_alloc(void *dev, size_t bytes, void **mem) {
    ocl_dev *d = dev;
    cl_int e;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 64, NULL, &e);
    if (e != CL_SUCCESS)
        return OCL_ERR(TS_ERR_NOMEM, "opencl:%d: cannot allocate %zu bytes: %s", d->index, bytes, ocl_errname(e));
    *mem = m;
    return TS_OK;
}

void ocl_free(void *dev, void *mem) {
    if (mem) clReleaseMemObject((cl_mem)mem);
}

ts_status ocl_copy_to_device(void *dev, ts_buffer dst, const void *src, size_t bytes) {
    ocl_dev *d = dev;
    if (!bytes) return TS_OK;
    cl_int e = clEnqueueWriteBuffer(d->queue, (cl_mem)dst.mem, CL_TRUE, dst.offset, bytes, src, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: copy of %zu bytes to the device failed: %s", d->index, bytes,
                       ocl_errname(e));
    return TS_OK;
}

ts_status ocl_copy_to_host(void *dev, void *dst, ts_buffer src, size_t bytes) {
    ocl_dev *d = dev;
    if (!bytes) return TS_OK;
    cl_int e = clEnqueueReadBuffer(d->queue, (cl_mem)src.mem, CL_TRUE, src.offset, bytes, dst, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: copy of %zu bytes to the host failed: %s", d->index, bytes,
                       ocl_errname(e));
    return TS_OK;
}

ts_status ocl_copy_from_device(void *dev, ts_buffer dst, void *src_dev, ts_buffer src, size_t bytes) {
    ocl_dev *d = dev;
    if (!bytes) return TS_OK;
    if (src_dev == dev) {
        ts_status s = ocl_copy(d, dst, src, bytes);
        return s ? s : ocl_synchronize(dev);
    }
    void *tmp = malloc(bytes);
    if (!tmp) return OCL_ERR(TS_ERR_NOMEM, "opencl: out of host memory for a %zu-byte device copy", bytes);
    ts_status s = ocl_copy_to_host(src_dev, tmp, src, bytes);
    if (!s) s = ocl_copy_to_device(dev, dst, tmp, bytes);
    free(tmp);
    return s;
}

ts_status ocl_synchronize(void *dev) {
    ocl_dev *d = dev;
    cl_int e = clFinish(d->queue);
    if (e != CL_SUCCESS) return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: clFinish failed: %s", d->index, ocl_errname(e));
    return TS_OK;
}

ts_status ocl_fill0(ocl_dev *d, ts_buffer b, size_t bytes) {
    if (!bytes) return TS_OK;
    cl_uchar zero = 0;
    cl_int e = clEnqueueFillBuffer(d->queue, (cl_mem)b.mem, &zero, 1, b.offset, bytes, 0, NULL, NULL);
    if (e != CL_SUCCESS) return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: zero fill failed: %s", d->index, ocl_errname(e));
    return TS_OK;
}

ts_status ocl_copy(ocl_dev *d, ts_buffer dst, ts_buffer src, size_t bytes) {
    if (!bytes || (dst.mem == src.mem && dst.offset == src.offset)) return TS_OK;
    cl_int e = clEnqueueCopyBuffer(d->queue, (cl_mem)src.mem, (cl_mem)dst.mem, src.offset, dst.offset, bytes, 0,
                                   NULL, NULL);
    if (e != CL_SUCCESS) return OCL_ERR(TS_ERR_RUNTIME, "opencl:%d: buffer copy failed: %s", d->index, ocl_errname(e));
    return TS_OK;
}
