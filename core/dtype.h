/* Element types, their sizes and names, and PyTorch's type promotion. */
#ifndef LT_DTYPE_H
#define LT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The order is the promotion lattice's tie-break order of no importance; do not reorder (it is
   stored nowhere, but the kernel tables are indexed by it). */
typedef enum {
  LT_FLOAT32 = 0,
  LT_FLOAT64,
  LT_FLOAT16,
  LT_BFLOAT16,
  LT_INT64,
  LT_INT32,
  LT_INT16,
  LT_INT8,
  LT_UINT8,
  LT_BOOL,
  LT_NDTYPES
} lt_dtype;

#define LT_DTYPE_INVALID ((lt_dtype)-1)

/* element sizes in dtype order (the initialiser is shared with core/comm_shim.c's copy) */
#define LT_DTYPE_SIZES_INIT {4, 8, 2, 2, 8, 4, 2, 1, 1, 1}
extern const size_t lt_dtype_sizes[LT_NDTYPES];
static inline size_t lt_dtype_size(lt_dtype t) { return (unsigned)t < LT_NDTYPES ? lt_dtype_sizes[t] : 0; }
/* PyTorch's name without the prefix: "float32", "int64", "bool". */
const char *lt_dtype_name(lt_dtype t);
/* Parse a name ("float32", "float", "double", "half", "long", ...); LT_DTYPE_INVALID if unknown. */
lt_dtype lt_dtype_from_name(const char *name);

bool lt_dtype_is_floating(lt_dtype t);
bool lt_dtype_is_integral(lt_dtype t); /* integers, not bool */
static inline bool lt_dtype_is_low_precision(lt_dtype t) { return t == LT_FLOAT16 || t == LT_BFLOAT16; }

/* torch.promote_types(a, b) */
lt_dtype lt_promote_types(lt_dtype a, lt_dtype b);

/* The result type of an op over tensors and Lua numbers, as torch.result_type: tensors with
   dimensions take precedence over 0-dim tensors, which take precedence over numbers, except that a
   higher category (bool < integer < floating) always wins. Build it up with lt_result_type_add_*. */
typedef struct {
  lt_dtype dim, zero, scalar; /* LT_DTYPE_INVALID when none seen */
} lt_result_type_t;

void lt_result_type_init(lt_result_type_t *r);
void lt_result_type_add_tensor(lt_result_type_t *r, lt_dtype t, int ndim);
/* A Lua number: is_float for a float, else an integer; is_bool for a boolean. */
void lt_result_type_add_scalar(lt_result_type_t *r, bool is_float, bool is_bool);
lt_dtype lt_result_type_get(const lt_result_type_t *r);

/* The default floating dtype: what factories make of Lua floats and what integer tensors become in
   ops that need a float (torch.get_default_dtype()). float32 until lt_set_default_float changes it;
   one setting for the whole process, as PyTorch's (every thread and Lua state sees it). */
lt_dtype lt_default_float(void);
/* float32 or float64; anything else is an error naming set_default_dtype. */
int lt_set_default_float(lt_dtype t);

#endif
