/* Reading IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic (two zero bytes, a
   data-type byte, the number of dimensions), the dimensions as big-endian 32-bit integers, then the
   elements, big-endian. Files may be gzipped (read through zlib, which also reads plain files). */
#ifndef LT_IDX_H
#define LT_IDX_H

#include "core/tensor.h"

/* Largest payload accepted, in bytes: a header is checked against it before anything is allocated. */
#define LT_IDX_MAX_BYTES (INT64_C(1) << 36)

/* The whole file as a new contiguous CPU tensor whose dtype follows the type byte:
   0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. NULL + lt_error
   ("idx: <path>: ...") when the file is missing, unreadable, malformed, truncated or has bytes
   after the data. */
lt_tensor_t *lt_idx_read(const char *path);

#endif
