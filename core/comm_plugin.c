/* The core's side of the distributed plugin (core/comm_plugin.h): lt_comm_mpi_new and
   lt_comm_nccl_new of core/comm.h load lutorch_mpi.so on first use and call into it.

   The plugin is looked for beside the file that holds this code (the lutorch executable,
   liblutorch.so or torch.so), then in a lutorch/ directory there, then in ../lib/lutorch/ from it
   (an installed bin/lutorch). It is opened with RTLD_GLOBAL: Open MPI opens components of its own
   that expect its symbols to be global. A failure to find or open it is kept and given as the
   error of every later call (a process does not half-load MPI twice). */
#include "core/comm_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *lt_reduce_op_name(lt_reduce_op op) {
  static const char *names[LT_NREDUCE] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
  return (unsigned)op < LT_NREDUCE ? names[op] : "?";
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const lt_comm_plugin_t *plugin;
static char why[2 * PATH_MAX + 512]; /* why there is no plugin */

#ifdef LT_WITH_MPI
static int host_error(const char *msg) { return lt_error("%s", msg); }

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"
static int host_cuda_use(int index) { return lt_cuda_use(index); }
#else
static int host_cuda_use(int index) { return lt_error("cuda:%d: this build has no CUDA backend", index); }
#endif

static const lt_comm_host_t host = {
    LT_COMM_PLUGIN_ABI, sizeof(lt_tensor_t), host_error, lt_last_error, lt_dtype_name, lt_reduce_op_name,
    lt_empty, lt_view_geometry, lt_release, lt_contiguous_strides, lt_contiguous, lt_convert,
    lt_copy_, lt_stream_current, lt_stream_handle, host_cuda_use,
};

/* the directory of the file this code was loaded from, into dir[PATH_MAX] */
static bool own_dir(char *dir) {
  Dl_info info;
  char path[PATH_MAX];
  const char *name = NULL;
  if (dladdr((void *)lt_comm_mpi_new, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
      strcmp(info.dli_fname, program_invocation_name) != 0)
    name = info.dli_fname;
  if (name ? !realpath(name, path) : !realpath("/proc/self/exe", path)) return false;
  char *slash = strrchr(path, '/');
  if (!slash) return false;
  *slash = '\0';
  snprintf(dir, PATH_MAX, "%s", path[0] ? path : "/");
  return true;
}
#endif

static void load(void) {
#ifndef LT_WITH_MPI
  snprintf(why, sizeof why, "backend 'mpi' is not available in this build (Open MPI was not found when it "
                            "was built: install libopenmpi-dev and rebuild)");
#else
  char dir[PATH_MAX], path[PATH_MAX + 64];
  if (!own_dir(dir)) {
    snprintf(why, sizeof why, "backend 'mpi' is not available: cannot find the directory lutorch was loaded "
                              "from, where its plugin " LT_COMM_PLUGIN_FILE " is");
    return;
  }
  static const char *const places[] = {"", "lutorch/", "../lib/lutorch/"};
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
    snprintf(path, sizeof path, "%s/%s" LT_COMM_PLUGIN_FILE, dir, places[i]);
    if (access(path, F_OK) != 0) continue;
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char *e = dlerror();
      snprintf(why, sizeof why, "backend 'mpi' is not available: cannot load %s: %s", path, e ? e : "?");
      return;
    }
    lt_comm_plugin_init_fn init = (lt_comm_plugin_init_fn)dlsym(h, LT_COMM_PLUGIN_ENTRY);
    plugin = init ? init(&host) : NULL;
    if (!plugin || plugin->abi != LT_COMM_PLUGIN_ABI) {
      plugin = NULL;
      snprintf(why, sizeof why, "backend 'mpi' is not available: %s is from another build of lutorch", path);
    }
    return;
  }
  snprintf(why, sizeof why, "backend 'mpi' is not available: its plugin " LT_COMM_PLUGIN_FILE " is not in %s "
           "(nor in lutorch/ or ../lib/lutorch/ from there)", dir);
#endif
}

bool lt_comm_mpi_available(void) {
  pthread_once(&once, load);
  return plugin != NULL;
}

lt_comm_t *lt_comm_mpi_new(double timeout_s) {
  if (!lt_comm_mpi_available()) {
    lt_error("init_process_group: %s", why);
    return NULL;
  }
  return plugin->mpi_new(timeout_s);
}

bool lt_comm_nccl_available(void) { return lt_comm_mpi_available() && plugin->nccl; }

lt_comm_t *lt_comm_nccl_new(double timeout_s, int device) {
  if (!lt_comm_nccl_available()) {
    lt_error("Distributed package doesn't have NCCL built in");
    return NULL;
  }
  return plugin->nccl_new(timeout_s, device);
}
