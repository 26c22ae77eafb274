/* lutorch.h - the C API for programs that embed lutorch: Lua states with `torch` loaded, running
   Lua code with tracebacks, and moving tensors between C memory and Lua.

   Build against it with `pkg-config --cflags --libs lutorch` (after `make install`), which links
   liblutorch.so and Lua 5.4. examples/embed/classify.c is a complete program.

     lua_State *L = lutorch_newstate();
     if (!L) { fprintf(stderr, "%s\n", lutorch_errmsg(NULL)); exit(1); }
     if (lutorch_dostring(L, "model = torch.load('m.safetensors')", NULL) != LUTORCH_OK)
       fprintf(stderr, "%s\n", lutorch_errmsg(L));          (the message ends with a traceback)
     int64_t sizes[2] = {4, 784};
     lutorch_push_tensor(L, pixels, 2, sizes, LUTORCH_FLOAT32, lutorch_cpu(0));
     lua_setglobal(L, "x");                                  (the ordinary Lua API works too)
     lutorch_dostring(L, "y = model(x):argmax(2)", NULL);
     lutorch_tensor y;
     if (lutorch_get_global_tensor(L, "y", &y) == LUTORCH_OK) { use y.data ...; lutorch_tensor_release(&y); }
     lutorch_close(L);

   Errors: every function that can fail returns LUTORCH_OK (0) or an error status (one of Lua's:
   LUA_ERRRUN, LUA_ERRSYNTAX, LUA_ERRMEM, LUA_ERRFILE); the message is then lutorch_errmsg(L).
   Nothing raises a Lua error into the caller and the Lua stack is left as it was on failure.

   Threads: several states may live in one process, each used by one thread at a time, and run on
   different threads at once. Each state has a random generator of its own (seeded as PyTorch's
   default, 67280421310721): torch.manual_seed and torch.rand* in code run by lutorch_dostring,
   lutorch_dofile or lutorch_pcall use it, so states do not disturb each other's random numbers.
   Process-wide (shared by all states): torch.set_num_threads, the number of virtual CPU devices
   (LUTORCH_CPU_DEVICES, read once), the caching allocator, the CUDA devices and their generators.
   Tensors must not be shared between states except through this API (copies or buffers). A thread
   that used these functions frees lutorch's per-thread caches when it ends (a pthread key
   destructor): nothing to call. */
#ifndef LUTORCH_H
#define LUTORCH_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LUTORCH_VERSION_STRING "0.1.0"
#define LUTORCH_OK 0
#define LUTORCH_MAX_DIM 16

/* Element types; the values are torch's dtypes (torch.float32 ...), in this order. */
typedef enum {
  LUTORCH_FLOAT32 = 0,
  LUTORCH_FLOAT64,
  LUTORCH_FLOAT16,  /* IEEE half, stored as uint16_t */
  LUTORCH_BFLOAT16, /* the upper half of a float32, stored as uint16_t */
  LUTORCH_INT64,
  LUTORCH_INT32,
  LUTORCH_INT16,
  LUTORCH_INT8,
  LUTORCH_UINT8,
  LUTORCH_BOOL,     /* one byte, 0 or 1 */
  LUTORCH_NDTYPES
} lutorch_dtype;

typedef enum { LUTORCH_CPU = 0, LUTORCH_CUDA = 1 } lutorch_devtype;

/* A device: type and index (0-based; -1 = the current device of the type). */
typedef struct {
  int type;
  int index;
} lutorch_device;

static inline lutorch_device lutorch_cpu(int index) {
  lutorch_device d = {LUTORCH_CPU, index};
  return d;
}
static inline lutorch_device lutorch_cuda(int index) {
  lutorch_device d = {LUTORCH_CUDA, index};
  return d;
}

/* Bytes per element of a dtype (0 for an invalid one), and its name ("float32"; NULL if invalid). */
size_t lutorch_dtype_size(lutorch_dtype dt);
const char *lutorch_dtype_name(lutorch_dtype dt);

/* ---- states ---- */

/* A new Lua state with the standard libraries open and `torch` loaded as a global (as in the lutorch
   interpreter; `require 'torch'` returns the same table). NULL when it fails: lutorch_errmsg(NULL)
   says why (on the calling thread). The state has lutorch's own allocator, which also releases
   the tensors of the state's tensor objects when Lua frees them: do not replace it (lua_setallocf). */
lua_State *lutorch_newstate(void);

/* Opens the standard libraries and torch in a state of your own; a lua_CFunction, call it with
   lua_pcall on a fresh state (lutorch_newstate does this and more: prefer it). */
int lutorch_openlibs(lua_State *L);

/* The `torch` module: luaL_requiref(L, "torch", luaopen_torch, 1) makes it a global. Also the entry
   point of the C module torch.so for the stock lua5.4. */
int luaopen_torch(lua_State *L);

/* Closes the state: frees every tensor it still references (a wrapped buffer's release callback
   runs when its last tensor dies) and its generator. NULL is allowed. */
void lutorch_close(lua_State *L);

/* The message of the last failure of a lutorch_* call on L (a traceback follows the message of an
   error raised by Lua code), or "" when the last call succeeded. Valid until the next lutorch_*
   call on L. With L NULL: the last failure of lutorch_newstate on this thread. */
const char *lutorch_errmsg(lua_State *L);

/* ---- running code ---- */

/* Runs the file (NULL: stdin) as a chunk with no arguments; its results are dropped. */
int lutorch_dofile(lua_State *L, const char *path);
/* Runs a string; chunkname names it in messages (NULL: "=(lutorch_dostring)"). */
int lutorch_dostring(lua_State *L, const char *code, const char *chunkname);
/* lua_pcall with a traceback: calls the function below its narg arguments on top of the stack,
   leaving nres results (LUA_MULTRET: all). On failure the function and its arguments are popped,
   nothing is pushed, and lutorch_errmsg(L) has the message. */
int lutorch_pcall(lua_State *L, int narg, int nres);

/* ---- tensors from C ---- */

/* Pushes a new tensor (requires_grad false) of the given dtype, shape and device, holding a copy
   of the ndim-dimensional contiguous (row-major) array at data in host memory; the copy goes to
   the device (a CUDA device in a build with CUDA). data may be NULL only when the tensor has no
   elements. */
int lutorch_push_tensor(lua_State *L, const void *data, int ndim, const int64_t *sizes,
                        lutorch_dtype dt, lutorch_device dev);

/* Pushes a tensor over the caller's memory without copying: data is in the device's memory (host
   memory for the CPU devices, a device pointer for CUDA), strides in elements (NULL: contiguous).
   Lua code that writes to the tensor writes to the buffer. release(ctx, data) runs (on whichever
   thread drops the last reference, possibly inside lutorch_close) when no tensor uses the memory
   any more; it may be NULL when the caller keeps the memory alive longer than the state. On
   failure release is not called: the buffer is still the caller's. */
int lutorch_push_tensor_wrap(lua_State *L, void *data, int ndim, const int64_t *sizes,
                             const int64_t *strides, lutorch_dtype dt, lutorch_device dev,
                             void (*release)(void *ctx, void *data), void *ctx);

/* ---- tensors to C ---- */

/* A tensor read back: contiguous data of numel elements (nbytes bytes) on the tensor's device (host
   memory for the CPU devices, a device pointer for CUDA: call x:cpu() in Lua first to read it on
   the host). It holds a reference of its own: it stays valid after the Lua value is gone, even
   after lutorch_close, until lutorch_tensor_release. Writes through data reach the Lua tensor only
   when it was contiguous already (then data is its memory; else data is a copy). */
typedef struct {
  int ndim;
  int64_t sizes[LUTORCH_MAX_DIM];
  int64_t numel;
  size_t nbytes;
  lutorch_dtype dtype;
  lutorch_device device;
  void *data;
  void *handle; /* private: the reference */
} lutorch_tensor;

/* The tensor at stack index idx (the stack is unchanged). Fails when it is not a tensor. */
int lutorch_get_tensor(lua_State *L, int idx, lutorch_tensor *out);
/* The tensor in global `name`. */
int lutorch_get_global_tensor(lua_State *L, const char *name, lutorch_tensor *out);
/* Drops the reference (out->data is then invalid); a zeroed or released struct is allowed. */
void lutorch_tensor_release(lutorch_tensor *t);

#ifdef __cplusplus
}
#endif

#endif /* LUTORCH_H */
