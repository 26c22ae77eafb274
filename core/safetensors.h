/* The safetensors file format: writing named tensors and a string->string metadata map exactly as
   the reference writer (huggingface/safetensors) lays them out, and reading such files back with
   every length, offset and shape checked against the file before any data is trusted. */
#ifndef LT_SAFETENSORS_H
#define LT_SAFETENSORS_H

#include "core/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* The reference reader's limit; a larger header is refused before anything is allocated. */
#define LT_ST_MAX_HEADER 100000000u

/* Strings carry their length: names may hold any UTF-8, NUL included. */
typedef struct {
  const char *name;
  size_t name_len;
  lt_tensor_t *tensor;
} lt_st_entry_t;

typedef struct {
  const char *key;
  size_t key_len;
  const char *value;
  size_t value_len;
} lt_st_meta_t;

/* Write a file: tensors of any dtype, layout and device (copied out contiguous, little-endian),
   sorted as the reference writer sorts them, and the metadata (NULL/0 for none: no __metadata__).
   The bytes go to a temporary file in the target's directory, which is flushed, synced and renamed
   over path, so a failed or interrupted save leaves the old file as it was. op names the caller in
   errors ("torch.save"). */
int lt_safetensors_write(const char *op, const char *path, int n, const lt_st_entry_t *entries,
                         int nmeta, const lt_st_meta_t *meta);

/* One tensor as described by a header. Offsets are relative to the start of the data. */
typedef struct {
  char *name;
  size_t name_len;
  lt_dtype dtype;
  int ndim;
  int64_t sizes[LT_MAX_DIM];
  uint64_t begin, end;
  int position; /* in the header's text: breaks ties between empty tensors at one offset */
} lt_st_info_t;

typedef struct {
  uint64_t header_len; /* N: the JSON text and its padding */
  int n;               /* tensors, in the order of their data offsets */
  lt_st_info_t *tensors;
  int nmeta;           /* __metadata__ entries, in the file's order (strings owned here) */
  lt_st_meta_t *meta;
} lt_st_header_t;

/* Parse and validate a header: json is the N header bytes, data_len the bytes after them. On
   failure h is left empty (nothing to free). what names the file in errors. */
int lt_safetensors_parse_header(const char *op, const char *what, const uint8_t *json, size_t n,
                                uint64_t data_len, lt_st_header_t *h);
void lt_safetensors_header_free(lt_st_header_t *h);

/* Read a whole file: its header and one new contiguous cpu:0 tensor per entry (tensors[i] is
   h->tensors[i]); *tensors is a malloc'ed array the caller frees after releasing each tensor. */
int lt_safetensors_read(const char *op, const char *path, lt_st_header_t *h, lt_tensor_t ***tensors);
/* The same from bytes in memory (the fuzz target and tests). */
int lt_safetensors_read_buffer(const char *op, const char *what, const uint8_t *buf, size_t len,
                               lt_st_header_t *h, lt_tensor_t ***tensors);

/* For tests: make the writer fail with ENOSPC once this many bytes were written to the temporary
   file (a full disk in the middle of a save); negative turns it off. */
void lt_safetensors_set_write_limit(int64_t bytes);

/* "F32" and back; LT_DTYPE_INVALID for a name lutorch has no dtype for. */
const char *lt_safetensors_dtype_name(lt_dtype t);
lt_dtype lt_safetensors_dtype_from_name(const char *s, size_t len);

#endif
