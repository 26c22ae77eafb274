/* The matrix decompositions of torch.linalg that LAPACK computes: Cholesky, QR, the symmetric
   eigendecomposition, the SVD and the symmetric indefinite LDL^T, on batches of float32 or float64
   CPU matrices, through the LAPACK routines of the OpenBLAS that core/blas.c loaded (potrf, geqrf +
   orgqr, syevd, gesdd, sytrf + sytrs: the ones PyTorch calls on the CPU). lua/torch/linalg.lua adds
   their gradients.

   Every function takes a (..., m, n) tensor of any strides, returns new contiguous tensors with the
   same batch shape, and returns LT_OK, or LT_ERR with an error naming the operation (not a CPU
   float32/float64 batch, not square where it must be, no LAPACK in the loaded library, a routine
   that did not converge, out of memory). */
#ifndef LT_LAPACK_H
#define LT_LAPACK_H

#include "core/tensor.h"

#include <stdbool.h>

/* true when the loaded library has the LAPACK routines these need */
bool lt_lapack_available(void);

/* a (..., n, n) symmetric positive-definite (only its lower triangle is read, or its upper one when
   upper): *l the factor L with A = L L^T (upper: U with A = U^T U), its other triangle zero; *info
   (...) int64: 0, or the order of the leading minor that is not positive-definite (the factor is
   then incomplete, as LAPACK leaves it). */
int lt_cholesky(const lt_tensor_t *a, bool upper, lt_tensor_t **l, lt_tensor_t **info);

/* a (..., m, n) = Q R with k = min(m, n). mode "reduced": Q (..., m, k), R (..., k, n); "complete":
   Q (..., m, m), R (..., m, n); "r": R (..., k, n) and *q an empty tensor. R is upper triangular;
   its diagonal has LAPACK's signs (not made positive). */
int lt_qr(const lt_tensor_t *a, const char *mode, lt_tensor_t **q, lt_tensor_t **r);

/* a (..., m, n) = Q R as LAPACK's geqrf leaves it, k = min(m, n): *qr (..., m, n) R on and above
   the diagonal, below it the Householder vectors v_i (their 1 on the diagonal implied), *tau
   (..., k) the scalars of H_i = I - tau_i v_i v_i^T, Q = H_1 ... H_k (torch.geqrf). */
int lt_geqrf(const lt_tensor_t *a, lt_tensor_t **qr, lt_tensor_t **tau);

/* a (..., n, n) symmetric (only the lower triangle is read, or the upper one when upper):
   *w (..., n) the eigenvalues in ascending order, *v (..., n, n) the orthonormal eigenvectors as
   columns (NULL when !vectors). A non-finite input is an error. */
int lt_eigh(const lt_tensor_t *a, bool upper, bool vectors, lt_tensor_t **w, lt_tensor_t **v);

/* a (..., m, n) = U diag(S) Vh with k = min(m, n): *s (..., k) descending and non-negative; with
   vectors, full: *u (..., m, m), *vh (..., n, n); reduced: *u (..., m, k), *vh (..., k, n);
   without vectors *u and *vh are NULL. A non-finite input is an error. */
int lt_svd(const lt_tensor_t *a, bool full, bool vectors, lt_tensor_t **u, lt_tensor_t **s, lt_tensor_t **vh);

/* a (..., n, n) symmetric (only its lower triangle is read) = P L D L^T P^T by Bunch-Kaufman
   pivoting (LAPACK's sytrf with uplo 'L'): *ld (..., n, n) the compact factors as sytrf leaves
   them (D's 1 x 1 and 2 x 2 blocks on and beside the diagonal, L's multipliers below), the strict
   upper triangle zero; *piv (..., n) int32 sytrf's ipiv (1-based; a 2 x 2 block's two entries
   both -p); *info (...) int32: 0, or the first i with D[i][i] exactly zero (D singular). */
int lt_ldl_factor(const lt_tensor_t *a, lt_tensor_t **ld, lt_tensor_t **piv, lt_tensor_t **info);

/* x = A^-1 b (sytrs) for ldl_factor's factors of A, b (..., n, k) and pivots of their batch shape
   and dtype; pivots sytrs could not use are an error. A new contiguous tensor, or NULL + error. */
lt_tensor_t *lt_ldl_solve(const lt_tensor_t *ld, const lt_tensor_t *piv, const lt_tensor_t *b);

#endif
