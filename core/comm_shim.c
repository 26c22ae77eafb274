/* The plugin's side of core/comm_plugin.h: the core functions core/comm_mpi.c and comm_nccl.c call,
   forwarded to the host's table, and the plugin's entry point. Compiled into lutorch_mpi.so only,
   with hidden visibility, so these names bind inside the plugin and never interpose on the core's. */
#include "core/comm_plugin.h"

#include <stdarg.h>
#include <stdio.h>

static const lt_comm_host_t *H;

const size_t lt_dtype_sizes[LT_NDTYPES] = LT_DTYPE_SIZES_INIT;

int lt_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return H->error(msg);
}

const char *lt_last_error(void) { return H->last_error(); }
const char *lt_dtype_name(lt_dtype t) { return H->dtype_name(t); }
const char *lt_reduce_op_name(lt_reduce_op op) { return H->reduce_op_name(op); }

lt_tensor_t *lt_empty(int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev) {
  return H->empty(ndim, sizes, dt, dev);
}

lt_tensor_t *lt_view_geometry(const lt_tensor_t *t, int ndim, const int64_t *sizes, const int64_t *strides,
                              int64_t offset) {
  return H->view_geometry(t, ndim, sizes, strides, offset);
}

void lt_release(lt_tensor_t *t) { H->release(t); }

void lt_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
  H->contiguous_strides(ndim, sizes, strides);
}

lt_tensor_t *lt_contiguous(lt_tensor_t *x) { return H->contiguous(x); }
lt_tensor_t *lt_convert(const lt_tensor_t *x, lt_dtype dt, lt_device_t dev) { return H->convert(x, dt, dev); }
int lt_copy_(lt_tensor_t *dst, const lt_tensor_t *src) { return H->copy_(dst, src); }
int lt_stream_current(lt_device_t d, lt_stream_t *out) { return H->stream_current(d, out); }
void *lt_stream_handle(lt_stream_t s) { return H->stream_handle(s); }
int lt_cuda_use(int index) { return H->cuda_use(index); }

__attribute__((visibility("default"))) const lt_comm_plugin_t *lt_comm_plugin_init(const lt_comm_host_t *host) {
  static const lt_comm_plugin_t plugin = {LT_COMM_PLUGIN_ABI, lt_comm_mpi_new, false, lt_comm_nccl_new};
  static lt_comm_plugin_t with_nccl;
  if (!host || host->abi != LT_COMM_PLUGIN_ABI || host->tensor_size != sizeof(lt_tensor_t)) return NULL;
  H = host;
  if (!lt_comm_nccl_available()) return &plugin;
  with_nccl = plugin;
  with_nccl.nccl = true;
  return &with_nccl;
}
