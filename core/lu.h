/* LU factorisation with partial pivoting of a batch of square float32 or float64 matrices on the CPU
   (PA = LU, as LAPACK's getrf), the solves with it (getrs) and with triangular matrices (trtrs):
   what torch.linalg's det, slogdet, solve, inv and solve_triangular are made of (lua/torch/
   linalg.lua, which adds their gradients). */
#ifndef LT_LU_H
#define LT_LU_H

#include "core/tensor.h"

#include <stdbool.h>

/* a (..., m, n), k = min(m, n): *lu a new contiguous tensor of a's dtype holding U (k x n) on and
   above the diagonal and L's multipliers (m x k) below it (L's unit diagonal implied); *piv (..., k)
   int64, 1-based: at step i rows i and piv[i] were swapped; *info (...) int64: 0, or the first
   (1-based) i with U[i][i] = 0 (the matrix is singular; the factorisation is complete all the
   same). LT_ERR + error on bad input (not a batch of float32/float64 CPU matrices). */
int lt_lu_factor(const lt_tensor_t *a, lt_tensor_t **lu, lt_tensor_t **piv, lt_tensor_t **info);

/* x = A^-1 b (trans: A^-T b) for the factorisation of lt_lu_factor, b (..., n, k) of the same batch
   shape and dtype; a new contiguous tensor, or NULL + error. A zero pivot gives inf or NaN, as
   LAPACK's getrs. */
lt_tensor_t *lt_lu_solve(const lt_tensor_t *lu, const lt_tensor_t *piv, const lt_tensor_t *b, bool trans);

/* A^-1 for the factorisation of lt_lu_factor (..., n, n): a new contiguous tensor, or NULL + error.
   The same as lt_lu_solve with the identity, with less work (the forward solve's zeros skipped). */
lt_tensor_t *lt_lu_inverse(const lt_tensor_t *lu, const lt_tensor_t *piv);

/* x = op(A)^-1 b for triangular A (..., n, n) (its upper triangle when upper, else its lower one;
   the other is not read), op(A) = A^T when trans, a diagonal of ones when unit; b (..., n, k) of A's
   batch shape and dtype. A new contiguous tensor, or NULL + error. A zero on the diagonal gives inf
   or NaN, as LAPACK's trtrs. */
lt_tensor_t *lt_triangular_solve(const lt_tensor_t *a, const lt_tensor_t *b, bool upper, bool trans, bool unit);

#endif
