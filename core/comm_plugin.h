/* The distributed plugin: Open MPI (core/comm_mpi.c) and NCCL (core/comm_nccl.c) are built into
   lutorch_mpi.so, which the core (core/comm_plugin.c) loads on the first use of the MPI or NCCL
   backend instead of linking them: Open MPI's seven libraries cost every start of the interpreter
   about 4 ms of page faults and relocations, for a feature most scripts never use.

   The plugin does not link the core (torch.so is loaded by lua5.4 with RTLD_LOCAL, so its symbols
   are not visible to libraries it loads): it calls the few core functions it needs through the
   host table below, which core/comm_shim.c turns back into the core's own names. Both sides come
   from one build; LT_COMM_PLUGIN_ABI guards against a plugin of another. */
#ifndef LT_COMM_PLUGIN_H
#define LT_COMM_PLUGIN_H

#include "core/comm.h"
#include "core/elementwise.h"
#include "core/stream.h"

#define LT_COMM_PLUGIN_ABI 4
#define LT_COMM_PLUGIN_FILE "lutorch_mpi.so"
#define LT_COMM_PLUGIN_ENTRY "lt_comm_plugin_init"

/* the core, as the plugin sees it */
typedef struct {
  int abi;
  size_t tensor_size; /* sizeof(lt_tensor_t) */
  int (*error)(const char *msg);
  const char *(*last_error)(void);
  const char *(*dtype_name)(lt_dtype t);
  const char *(*reduce_op_name)(lt_reduce_op op);
  lt_tensor_t *(*empty)(int ndim, const int64_t *sizes, lt_dtype dt, lt_device_t dev);
  lt_tensor_t *(*view_geometry)(const lt_tensor_t *t, int ndim, const int64_t *sizes, const int64_t *strides,
                                int64_t offset);
  void (*release)(lt_tensor_t *t);
  void (*contiguous_strides)(int ndim, const int64_t *sizes, int64_t *strides);
  lt_tensor_t *(*contiguous)(lt_tensor_t *x);
  lt_tensor_t *(*convert)(const lt_tensor_t *x, lt_dtype dt, lt_device_t dev);
  int (*copy_)(lt_tensor_t *dst, const lt_tensor_t *src);
  int (*stream_current)(lt_device_t d, lt_stream_t *out);
  void *(*stream_handle)(lt_stream_t s);
  int (*cuda_use)(int index); /* make cuda:index the calling thread's CUDA device (core/cuda_check.h) */
} lt_comm_host_t;

/* the plugin, as the core sees it */
typedef struct {
  int abi;
  lt_comm_t *(*mpi_new)(double timeout_s);
  bool nccl; /* built with NCCL */
  lt_comm_t *(*nccl_new)(double timeout_s, int device);
} lt_comm_plugin_t;

/* The plugin's one exported function: NULL when the host's ABI differs. */
typedef const lt_comm_plugin_t *(*lt_comm_plugin_init_fn)(const lt_comm_host_t *host);

#endif
