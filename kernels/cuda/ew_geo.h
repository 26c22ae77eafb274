/* Where a CUDA elementwise kernel finds an input's elements (kernels/cuda/elementwise.cu), as plain
   C shared with the host so that a C test checks it (spec/c/test_ew_geo.c): the output is
   contiguous with n < 2^31 elements in row-major order, and an input -- contiguous, strided,
   sliced, permuted or broadcast -- is read in place through a geometry instead of being copied
   contiguous first. */
#ifndef LT_CUDA_EW_GEO_H
#define LT_CUDA_EW_GEO_H

#include "kernels/lt_kernel.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* nd = 0: element i at i. Else element i at sum over d of k_d * strides[d], k_d being i's
   coordinates over sizes[0..nd): the output's dims, those of one element left out and neighbours
   the input steps through as one merged (stride 0 where the input is broadcast). */
#define LT_CUDA_EW_MAXDIM 8
typedef struct {
  int nd;
  uint32_t sizes[LT_CUDA_EW_MAXDIM];
  int64_t strides[LT_CUDA_EW_MAXDIM];
} lt_cuda_ew_geo_t;

/* The geometry of an input (in_ndim dims, aligned with the output's last ones, as broadcasting
   does) over a contiguous output; false when the kernels cannot read it in place: more than
   LT_CUDA_EW_MAXDIM dims left after merging, or an output of 2^31 elements or more. */
static inline bool lt_cuda_ew_geometry(int out_ndim, const int64_t *out_sizes, int64_t out_numel, int in_ndim,
                                       const int64_t *in_sizes, const int64_t *in_strides, lt_cuda_ew_geo_t *g) {
  memset(g, 0, sizeof *g);
  if (out_numel >= ((int64_t)1 << 31)) return false;
  int shift = out_ndim - in_ndim;
  for (int d = 0; d < out_ndim; d++) {
    int64_t sz = out_sizes[d];
    if (sz == 1) continue; /* one element: no step */
    int sd = d - shift;
    int64_t st = sd >= 0 && in_sizes[sd] != 1 ? in_strides[sd] : 0;
    /* the output is contiguous, so the previous kept dim steps over this one whole there: the
       two merge when the input's steps agree */
    if (g->nd > 0 && g->strides[g->nd - 1] == st * sz) {
      g->sizes[g->nd - 1] *= (uint32_t)sz;
      g->strides[g->nd - 1] = st;
      continue;
    }
    if (g->nd == LT_CUDA_EW_MAXDIM) return false;
    g->sizes[g->nd] = (uint32_t)sz;
    g->strides[g->nd] = st;
    g->nd++;
  }
  if (g->nd == 1 && g->strides[0] == 1) g->nd = 0; /* contiguous after all */
  return true;
}

/* A dim as the kernels use it: the coordinate comes from a division by `size` done as a
   multiply-high and a shift (exact for dividends below 2^31): a 32-bit division is some twenty
   instructions, and with two or three dims an op over 1e8 elements was bound by them. */
typedef struct {
  uint32_t size, magic, shift;
  int64_t stride;
} lt_ew_dim_t;

static inline lt_ew_dim_t lt_ew_dim_make(uint32_t size, int64_t stride) {
  lt_ew_dim_t r;
  uint32_t sh = 0;
  while (sh < 32 && ((uint64_t)1 << sh) < size) sh++;
  r.size = size;
  r.shift = sh;
  r.magic = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << sh) - size)) / size + 1);
  r.stride = stride;
  return r;
}

/* n / size for n < 2^31 */
LT_HD uint32_t lt_ew_div(uint32_t n, const lt_ew_dim_t *d) {
#ifdef __CUDA_ARCH__
  uint32_t hi = __umulhi(n, d->magic);
#else
  uint32_t hi = (uint32_t)(((uint64_t)n * d->magic) >> 32);
#endif
  return (hi + n) >> d->shift;
}

/* element i's offset in an input of nd > 0 dims (innermost last); the loop is unrolled over the
   fixed maximum so that the kernels index the dims with constants */
LT_HD int64_t lt_ew_offset(const lt_ew_dim_t *dims, int nd, uint32_t i) {
  int64_t off = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int d = LT_CUDA_EW_MAXDIM - 1; d >= 0; d--) {
    if (d < nd) {
      uint32_t t = lt_ew_div(i, &dims[d]);
      off += (int64_t)(i - t * dims[d].size) * dims[d].stride;
      i = t;
    }
  }
  return off;
}

#endif
