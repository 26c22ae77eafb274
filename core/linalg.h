/* Matrix products: mm, bmm, matmul (with batch broadcasting), addmm, mv, dot. Operands must share
   dtype and device (no promotion, as in PyTorch). New references or NULL with an error. */
#ifndef LT_LINALG_H
#define LT_LINALG_H

#include "core/tensor.h"

lt_tensor_t *lt_mm(lt_tensor_t *a, lt_tensor_t *b);
lt_tensor_t *lt_bmm(lt_tensor_t *a, lt_tensor_t *b);
lt_tensor_t *lt_matmul(lt_tensor_t *a, lt_tensor_t *b);
/* beta * c + alpha * (a @ b), c broadcast to the product's shape */
lt_tensor_t *lt_addmm(lt_tensor_t *c, lt_tensor_t *a, lt_tensor_t *b, double beta, double alpha);
lt_tensor_t *lt_mv(lt_tensor_t *a, lt_tensor_t *v);
lt_tensor_t *lt_dot(lt_tensor_t *a, lt_tensor_t *b);

#endif
