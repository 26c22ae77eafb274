/* The CUDA elementwise kernels' input geometry (kernels/cuda/ew_geo.h), run on the host: the
   multiply-high division against `/` over small, power-of-two, large and random divisors and the
   dividends at their edges; and, for broadcast, permuted, sliced and expanded inputs of random
   shapes, every output element's offset through the merged geometry against the offset its
   coordinates give directly, the merging (at most 8 dims kept, refused beyond), and the 2^31 limit.
   Output: a line per failed check, then "N passed, N failed"; exit status 1 on any failure. */
#include "kernels/cuda/ew_geo.h"
#include "spec/c/tensor_check.h"

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static void check_div(uint32_t d) {
  lt_ew_dim_t m = lt_ew_dim_make(d, 1);
  uint32_t top = 0x7fffffffu;
  uint32_t ns[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, top, top - 1, top - d, next() & top, next() & top,
                   (next() % 1000) * d, (next() % 1000) * d - 1};
  int bad = 0;
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    uint32_t n = ns[k];
    if (n > top) continue;
    if (lt_ew_div(n, &m) != n / d) {
      if (!bad++) check(false, "%u / %u: got %u, want %u", n, d, lt_ew_div(n, &m), n / d);
    }
  }
  if (!bad) check(true, "div");
}

/* out: a contiguous tensor of out_sizes; in: in_nd dims aligned with its last ones */
static void check_geometry(const char *what, int out_nd, const int64_t *out_sizes, int in_nd, const int64_t *in_sizes,
                           const int64_t *in_strides) {
  int64_t n = 1;
  for (int d = 0; d < out_nd; d++) n *= out_sizes[d];
  lt_cuda_ew_geo_t g;
  if (!lt_cuda_ew_geometry(out_nd, out_sizes, n, in_nd, in_sizes, in_strides, &g)) {
    /* refused only when more than 8 dims would be left */
    int kept = 0;
    for (int d = 0; d < out_nd; d++) kept += out_sizes[d] != 1;
    check(kept > LT_CUDA_EW_MAXDIM, "%s: refused with %d dims of more than one element", what, kept);
    return;
  }
  lt_ew_dim_t dims[LT_CUDA_EW_MAXDIM];
  for (int d = 0; d < g.nd; d++) dims[d] = lt_ew_dim_make(g.sizes[d], g.strides[d]);
  int shift = out_nd - in_nd, bad = 0;
  for (int64_t i = 0; i < n && !bad; i++) {
    int64_t r = i, want = 0;
    for (int d = out_nd - 1; d >= 0; d--) {
      int64_t k = r % out_sizes[d];
      r /= out_sizes[d];
      int sd = d - shift;
      if (sd >= 0 && in_sizes[sd] != 1) want += k * in_strides[sd];
    }
    int64_t got = g.nd == 0 ? i : lt_ew_offset(dims, g.nd, (uint32_t)i);
    if (got != want) {
      bad = 1;
      check(false, "%s: element %lld at %lld, want %lld (nd %d)", what, (long long)i, (long long)got, (long long)want, g.nd);
    }
  }
  if (!bad) check(true, "%s", what);
}

int main(void) {
  for (uint32_t d = 1; d <= 5000; d++) check_div(d);
  for (int s = 1; s < 31; s++) {
    check_div(1u << s);
    check_div((1u << s) - 1);
    check_div((1u << s) + 1);
  }
  for (int k = 0; k < 20000; k++) check_div(1 + next() % 0x7fffffffu);

  /* fixed cases: a row broadcast, a column broadcast, a transpose, a scalar expanded, contiguous */
  {
    int64_t os[] = {3, 4}, rs[] = {4}, rst[] = {1};
    check_geometry("row", 2, os, 1, rs, rst);
    int64_t cs[] = {3, 1}, cst[] = {1, 1};
    check_geometry("column", 2, os, 2, cs, cst);
    int64_t ts[] = {3, 4}, tst[] = {1, 3};
    check_geometry("transposed", 2, os, 2, ts, tst);
    int64_t es[] = {3, 4}, est[] = {0, 0};
    check_geometry("expanded scalar", 2, os, 2, es, est);
    int64_t ct[] = {4, 1};
    lt_cuda_ew_geo_t g;
    check(lt_cuda_ew_geometry(2, os, 12, 2, ts, ct, &g) && g.nd == 0, "contiguous: nd 0");
    int64_t big[] = {1 << 16, 1 << 15};
    check(!lt_cuda_ew_geometry(2, big, (int64_t)1 << 31, 1, rs, rst, &g), "2^31 elements: refused");
    /* 8 and 9 dims that cannot merge: the reverse permutation of 2x..x2 */
    for (int nd = 8; nd <= 9; nd++) {
      int64_t sz[9], st[9];
      for (int d = 0; d < nd; d++) sz[d] = 2, st[d] = (int64_t)1 << d;
      char what[32];
      snprintf(what, sizeof what, "%d reversed dims", nd);
      check_geometry(what, nd, sz, nd, sz, st);
      check(lt_cuda_ew_geometry(nd, sz, (int64_t)1 << nd, nd, sz, st, &g) == (nd <= 8), "%s: accepted or not", what);
    }
  }
  /* random shapes: permuted, sliced out of a bigger tensor, broadcast over fewer and size-1 dims */
  for (int t = 0; t < 3000; t++) {
    int nd = 1 + (int)(next() % 7);
    int64_t os[8], is[8], st[8];
    for (int d = 0; d < nd; d++) os[d] = 1 + next() % 4;
    int in_nd = nd - (int)(next() % 3);
    if (in_nd < 1) in_nd = 1;
    int shift = nd - in_nd;
    for (int d = 0; d < in_nd; d++) is[d] = next() % 3 == 0 ? 1 : os[d + shift];
    /* strides of a bigger (sliced) tensor in a random order of its dims */
    int order[8];
    for (int d = 0; d < in_nd; d++) order[d] = d;
    for (int d = in_nd - 1; d > 0; d--) {
      int j = (int)(next() % (uint32_t)(d + 1)), tmp = order[d];
      order[d] = order[j], order[j] = tmp;
    }
    int64_t step = 1 + (next() % 2);
    for (int k = in_nd - 1; k >= 0; k--) {
      int d = order[k];
      st[d] = step;
      step *= is[d] + (int64_t)(next() % 2);
    }
    if (next() % 4 == 0) st[next() % (uint32_t)in_nd] = 0; /* an expanded dim */
    char what[32];
    snprintf(what, sizeof what, "random case %d", t);
    check_geometry(what, nd, os, in_nd, is, st);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
