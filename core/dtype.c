#include "dtype.h"

#include "error.h"

#include <stdatomic.h>
#include <string.h>

const size_t lt_dtype_sizes[LT_NDTYPES] = LT_DTYPE_SIZES_INIT;
static const char *const names[LT_NDTYPES] = {"float32", "float64", "float16", "bfloat16", "int64",
                                              "int32",   "int16",   "int8",    "uint8",    "bool"};


const char *lt_dtype_name(lt_dtype t) { return (unsigned)t < LT_NDTYPES ? names[t] : "invalid"; }

lt_dtype lt_dtype_from_name(const char *name) {
  static const struct { const char *alias; lt_dtype t; } aliases[] = {
      {"float", LT_FLOAT32}, {"double", LT_FLOAT64}, {"half", LT_FLOAT16},
      {"long", LT_INT64},    {"int", LT_INT32},      {"short", LT_INT16},
  };
  for (int i = 0; i < LT_NDTYPES; i++)
    if (strcmp(name, names[i]) == 0) return (lt_dtype)i;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) return aliases[i].t;
  return LT_DTYPE_INVALID;
}

static atomic_int default_float = LT_FLOAT32;

lt_dtype lt_default_float(void) { return (lt_dtype)atomic_load_explicit(&default_float, memory_order_relaxed); }

int lt_set_default_float(lt_dtype t) {
  if (!lt_dtype_is_floating(t))
    return lt_error("set_default_dtype: only floating-point types are supported as the default type, got %s",
                    lt_dtype_name(t));
  if (t != LT_FLOAT32 && t != LT_FLOAT64)
    return lt_error("set_default_dtype: only float32 and float64 are supported as the default type, got %s",
                    lt_dtype_name(t));
  atomic_store_explicit(&default_float, (int)t, memory_order_relaxed);
  return LT_OK;
}

bool lt_dtype_is_floating(lt_dtype t) {
  return t == LT_FLOAT32 || t == LT_FLOAT64 || t == LT_FLOAT16 || t == LT_BFLOAT16;
}

bool lt_dtype_is_integral(lt_dtype t) {
  return t == LT_INT64 || t == LT_INT32 || t == LT_INT16 || t == LT_INT8 || t == LT_UINT8;
}

/* PyTorch's promotion table (c10/core/ScalarType.h) restricted to our types. */
lt_dtype lt_promote_types(lt_dtype a, lt_dtype b) {
  enum { f4 = LT_FLOAT32, f8 = LT_FLOAT64, f2 = LT_FLOAT16, bf = LT_BFLOAT16, i8 = LT_INT64,
         i4 = LT_INT32, i2 = LT_INT16, i1 = LT_INT8, u1 = LT_UINT8, b1 = LT_BOOL };
  static const unsigned char table[LT_NDTYPES][LT_NDTYPES] = {
      /*        f4  f8  f2  bf  i8  i4  i2  i1  u1  b1 */
      /* f4 */ {f4, f8, f4, f4, f4, f4, f4, f4, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* f2 */ {f4, f8, f2, f4, f2, f2, f2, f2, f2, f2},
      /* bf */ {f4, f8, f4, bf, bf, bf, bf, bf, bf, bf},
      /* i8 */ {f4, f8, f2, bf, i8, i8, i8, i8, i8, i8},
      /* i4 */ {f4, f8, f2, bf, i8, i4, i4, i4, i4, i4},
      /* i2 */ {f4, f8, f2, bf, i8, i4, i2, i2, i2, i2},
      /* i1 */ {f4, f8, f2, bf, i8, i4, i2, i1, i2, i1},
      /* u1 */ {f4, f8, f2, bf, i8, i4, i2, i2, u1, u1},
      /* b1 */ {f4, f8, f2, bf, i8, i4, i2, i1, u1, b1},
  };
  if (a == LT_DTYPE_INVALID) return b;
  if (b == LT_DTYPE_INVALID) return a;
  return (lt_dtype)table[a][b];
}

void lt_result_type_init(lt_result_type_t *r) {
  r->dim = r->zero = r->scalar = LT_DTYPE_INVALID;
}

void lt_result_type_add_tensor(lt_result_type_t *r, lt_dtype t, int ndim) {
  if (ndim > 0) r->dim = lt_promote_types(r->dim, t);
  else r->zero = lt_promote_types(r->zero, t);
}

void lt_result_type_add_scalar(lt_result_type_t *r, bool is_float, bool is_bool) {
  lt_dtype t = is_bool ? LT_BOOL : is_float ? lt_default_float() : LT_INT64;
  r->scalar = lt_promote_types(r->scalar, t);
}

/* c10's combine_categories(higher, lower) */
static lt_dtype combine(lt_dtype higher, lt_dtype lower) {
  if (higher != LT_DTYPE_INVALID && lt_dtype_is_floating(higher)) return higher;
  if (higher == LT_BOOL || (lower != LT_DTYPE_INVALID && lt_dtype_is_floating(lower)))
    return lt_promote_types(higher, lower);
  if (higher != LT_DTYPE_INVALID) return higher;
  return lower;
}

lt_dtype lt_result_type_get(const lt_result_type_t *r) {
  return combine(r->dim, combine(r->zero, r->scalar));
}
