/* Autocast (mixed precision): the per-thread state that torch.autocast sets and the ops consult
   before they run, with the cast cache of float32 parameters kept for the outermost region. */
#ifndef LT_AUTOCAST_H
#define LT_AUTOCAST_H

#include "core/tensor.h"

#include <stdbool.h>

/* What an op does with its floating operands inside an autocast region. The lists differ by
   device type as in PyTorch: CPU autocast leaves softmax, pointwise math, reductions and norms
   alone (dtype in = dtype out), CUDA autocast runs them in float32. */
typedef enum {
  LT_AC_LOWER,     /* both devices: cast to the region's low type (mm, bmm, matmul, addmm, linear, conv) */
  LT_AC_FP32,      /* both devices: cast up to float32 (losses) */
  LT_AC_LOWER_CUDA, /* low type on CUDA, as written on the CPU (mv) */
  LT_AC_FP32_CUDA, /* float32 on CUDA, as written on the CPU (softmax, exp, log, pow, sum, norms) */
  LT_AC_PROMOTE_CUDA, /* widest input on CUDA, as written on the CPU (dot) */
} lt_autocast_policy;

enum { LT_AC_CPU = 0, LT_AC_CUDA = 1, LT_AC_NDEV = 2 };

typedef struct {
  bool enabled[LT_AC_NDEV];
  lt_dtype dtype[LT_AC_NDEV];
  bool cache_enabled;
  int depth; /* nested regions entered (the cache lives while it is > 0) */
} lt_autocast_state_t;

/* The ops' one test when autocast is off: true while any device type has autocast enabled. */
extern _Thread_local bool lt_autocast_on;

void lt_autocast_get_state(lt_autocast_state_t *s);
/* Sets the calling thread's state (checked); leaving every region (depth 0) or turning autocast
   off everywhere drops the cast cache. */
int lt_autocast_set_state(const lt_autocast_state_t *s);
/* Drops the cached casts of the calling thread. */
void lt_autocast_clear_cache(void);

/* The operand the op uses for x under policy p on device dev: a new reference, x itself when
   nothing applies (x NULL gives NULL without error; check lt_autocast_failed for errors). Casts
   are recorded by autograd, so float32 leaves get float32 gradients. */
lt_tensor_t *lt_autocast_arg(lt_tensor_t *x, lt_autocast_policy p, lt_device_t dev);

/* Casts the n operands ts (NULL entries allowed) for an op under policy p into out (new references
   or NULL). Returns 1 when at least one operand changed (the op is to be called again with out),
   0 when none did (out holds nothing, the op goes on as written), LT_ERR on failure. */
int lt_autocast_args(lt_autocast_policy p, int n, lt_tensor_t *const *ts, lt_tensor_t **out);
void lt_autocast_release(int n, lt_tensor_t **ts);

/* The dispatch line at the top of an op of two operands a and b (either may be NULL): when a cast
   applies, the op (call, written with a and b) reruns on the cast operands; the rerun finds nothing
   left to cast and goes on. */
#define LT_AUTOCAST2(policy, a, b, call)                                        \
  if (__builtin_expect(lt_autocast_on, 0)) {                                    \
    lt_tensor_t *in_[2] = {(a), (b)}, *ac_[2];                                  \
    int r_ = lt_autocast_args((policy), 2, in_, ac_);                           \
    if (r_ < 0) return NULL;                                                    \
    if (r_ > 0) {                                                               \
      (a) = ac_[0];                                                             \
      (b) = ac_[1];                                                             \
      lt_tensor_t *o_ = (call);                                                 \
      lt_autocast_release(2, ac_);                                              \
      return o_;                                                                \
    }                                                                           \
  }

/* The same for ops of one operand. */
#define LT_AUTOCAST1(policy, a, call)                                           \
  if (__builtin_expect(lt_autocast_on, 0)) {                                    \
    lt_tensor_t *in_[1] = {(a)}, *ac_[1];                                       \
    int r_ = lt_autocast_args((policy), 1, in_, ac_);                           \
    if (r_ < 0) return NULL;                                                    \
    if (r_ > 0) {                                                               \
      (a) = ac_[0];                                                             \
      lt_tensor_t *o_ = (call);                                                 \
      lt_autocast_release(1, ac_);                                              \
      return o_;                                                                \
    }                                                                           \
  }

/* The same for ops of three operands (addmm's self, conv2d's bias); c may be NULL. */
#define LT_AUTOCAST3(policy, a, b, c, call)                                     \
  if (__builtin_expect(lt_autocast_on, 0)) {                                    \
    lt_tensor_t *in_[3] = {(a), (b), (c)}, *ac_[3];                             \
    int r_ = lt_autocast_args((policy), 3, in_, ac_);                           \
    if (r_ < 0) return NULL;                                                    \
    if (r_ > 0) {                                                               \
      (a) = ac_[0];                                                             \
      (b) = ac_[1];                                                             \
      (c) = ac_[2];                                                             \
      lt_tensor_t *o_ = (call);                                                 \
      lt_autocast_release(3, ac_);                                              \
      return o_;                                                                \
    }                                                                           \
  }

#endif
