/* IDX reader (MNIST's format), plain or gzipped: the header is checked completely, and against the
   file's size, before the tensor is allocated, so a corrupt header never asks for absurd memory;
   then the data is read straight into the tensor and byte-swapped in place from big-endian. */
#include "core/idx.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_MAX_DIMS 4
/* deflate never compresses better than about 1032:1, so a gzip file of n bytes cannot hold more */
#define GZ_MAX_RATIO 1032

static const struct {
  unsigned char code;
  lt_dtype dtype;
} idx_types[] = {{0x08, LT_UINT8}, {0x09, LT_INT8},    {0x0B, LT_INT16},
                 {0x0C, LT_INT32}, {0x0D, LT_FLOAT32}, {0x0E, LT_FLOAT64}};

typedef struct {
  const char *path;
  gzFile gz;
  bool failed; /* gzread returned -1: the message is in gzerror */
} reader_t;

/* Reads up to n bytes, in chunks that fit gzread's unsigned length; fewer at the end of the
   stream or on an error (r->failed). */
static int64_t read_some(reader_t *r, void *buf, int64_t n) {
  int64_t got = 0;
  while (got < n) {
    int64_t want = n - got;
    if (want > (INT64_C(1) << 30)) want = INT64_C(1) << 30;
    int k = gzread(r->gz, (char *)buf + got, (unsigned)want);
    if (k < 0) { r->failed = true; break; }
    if (k == 0) break;
    got += k;
  }
  return got;
}

/* The error of a failed gzread: corrupt compressed data, or the system's read error. */
static int read_error(reader_t *r) {
  int errnum = Z_OK;
  const char *msg = gzerror(r->gz, &errnum);
  if (errnum == Z_ERRNO) return lt_error("idx: %s: read error: %s", r->path, strerror(errno));
  return lt_error("idx: %s: corrupt gzip data (%s)", r->path, msg && *msg ? msg : "unknown zlib error");
}

static void swap_bytes(void *data, int64_t n, size_t elsize) {
  if (elsize == 2) {
    uint16_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap16(p[i]);
  } else if (elsize == 4) {
    uint32_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap32(p[i]);
  } else if (elsize == 8) {
    uint64_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap64(p[i]);
  }
}

/* Parses the header and checks the payload's size against the file; fills ndim, sizes, dtype. */
static int read_header(reader_t *r, const struct stat *st, bool gzipped, int *ndim, int64_t *sizes,
                       lt_dtype *dt, int64_t *nbytes) {
  unsigned char magic[4];
  int64_t got = read_some(r, magic, 4);
  if (r->failed) return read_error(r);
  if (got < 4)
    return lt_error("idx: %s: truncated: expected a 4-byte header, got %lld bytes", r->path, (long long)got);
  uint32_t m = (uint32_t)magic[0] << 24 | (uint32_t)magic[1] << 16 | (uint32_t)magic[2] << 8 | magic[3];
  if (magic[0] != 0 || magic[1] != 0)
    return lt_error("idx: %s: not an IDX file: magic number 0x%08x does not start with two zero bytes",
                    r->path, m);
  *dt = LT_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
    if (idx_types[i].code == magic[2]) *dt = idx_types[i].dtype;
  if (*dt == LT_DTYPE_INVALID)
    return lt_error("idx: %s: unknown data type byte 0x%02x in magic number 0x%08x (expected 0x08 uint8, "
                    "0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32 or 0x0E float64)",
                    r->path, magic[2], m);
  *ndim = magic[3];
  if (*ndim < 1 || *ndim > IDX_MAX_DIMS)
    return lt_error("idx: %s: %d dimensions in magic number 0x%08x (expected 1 to %d)", r->path, *ndim, m,
                    IDX_MAX_DIMS);
  unsigned char dims[4 * IDX_MAX_DIMS];
  int64_t dbytes = 4 * (int64_t)*ndim;
  got = read_some(r, dims, dbytes);
  if (r->failed) return read_error(r);
  if (got < dbytes)
    return lt_error("idx: %s: truncated: expected %d dimensions (%lld bytes) after the magic number, got %lld bytes",
                    r->path, *ndim, (long long)dbytes, (long long)got);
  size_t elsize = lt_dtype_size(*dt);
  int64_t total = (int64_t)elsize;
  bool any_zero = false, too_big = false;
  for (int d = 0; d < *ndim; d++) {
    const unsigned char *b = dims + 4 * d;
    sizes[d] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
    if (sizes[d] == 0) any_zero = true;
  }
  /* the nonzero dimensions are bounded even when another is zero, so that no size computation
     (strides included) overflows; the check comes before each product, so neither does it */
  for (int d = 0; d < *ndim && !too_big; d++) {
    if (sizes[d] == 0) continue;
    if (total > LT_IDX_MAX_BYTES / sizes[d]) too_big = true;
    else total *= sizes[d];
  }
  if (any_zero) total = 0;
  if (too_big) {
    char shape[128];
    int len = 0;
    for (int d = 0; d < *ndim && len < (int)sizeof shape; d++)
      len += snprintf(shape + len, sizeof shape - (size_t)len, d ? "x%lld" : "%lld", (long long)sizes[d]);
    return lt_error("idx: %s: dimensions %s of %s make more than %lld bytes of data", r->path, shape,
                    lt_dtype_name(*dt), (long long)LT_IDX_MAX_BYTES);
  }
  *nbytes = total;
  if (S_ISREG(st->st_mode)) {
    int64_t header = 4 + dbytes, avail = (int64_t)st->st_size - header;
    if (!gzipped && avail < total)
      return lt_error("idx: %s: truncated: expected %lld bytes of data, got %lld", r->path, (long long)total,
                      (long long)avail);
    if (!gzipped && avail > total)
      return lt_error("idx: %s: %lld bytes after the data (the header announces %lld bytes of data)", r->path,
                      (long long)(avail - total), (long long)total);
    if (gzipped && st->st_size < LT_IDX_MAX_BYTES / GZ_MAX_RATIO &&
        total + header > (int64_t)st->st_size * GZ_MAX_RATIO)
      return lt_error("idx: %s: truncated: expected %lld bytes of data, but a gzip file of %lld bytes cannot "
                      "hold more than %lld",
                      r->path, (long long)total, (long long)st->st_size, (long long)st->st_size * GZ_MAX_RATIO);
  }
  return LT_OK;
}

static lt_tensor_t *read_body(reader_t *r, const struct stat *st, bool gzipped) {
  int ndim = 0;
  int64_t sizes[IDX_MAX_DIMS], nbytes = 0;
  lt_dtype dt = LT_DTYPE_INVALID;
  if (read_header(r, st, gzipped, &ndim, sizes, &dt, &nbytes) != LT_OK) return NULL;
  lt_tensor_t *t = lt_empty(ndim, sizes, dt, lt_device(LT_CPU, 0));
  if (!t) return NULL;
  int64_t got = read_some(r, lt_data(t), nbytes);
  if (r->failed) { read_error(r); lt_release(t); return NULL; }
  if (got < nbytes) {
    lt_error("idx: %s: truncated: expected %lld bytes of data, got %lld", r->path, (long long)nbytes,
             (long long)got);
    lt_release(t);
    return NULL;
  }
  /* one byte more must be the end; reading it also makes zlib check the gzip trailer's CRC */
  unsigned char extra[4096];
  int64_t more = read_some(r, extra, sizeof extra);
  if (r->failed) { read_error(r); lt_release(t); return NULL; }
  if (more > 0) {
    lt_error("idx: %s: %s%lld bytes after the data (the header announces %lld bytes of data)", r->path,
             more == (int64_t)sizeof extra ? "at least " : "", (long long)more, (long long)nbytes);
    lt_release(t);
    return NULL;
  }
  int errnum = Z_OK;
  gzerror(r->gz, &errnum);
  if (errnum == Z_BUF_ERROR) { /* zlib's "unexpected end of file": the data is complete, its trailer is not */
    lt_error("idx: %s: truncated gzip stream: the data is complete but the gzip trailer is missing", r->path);
    lt_release(t);
    return NULL;
  }
  if (lt_elsize(t) > 1) swap_bytes(lt_data(t), t->numel, lt_elsize(t));
  return t;
}

lt_tensor_t *lt_idx_read(const char *path) {
  if (!path) { lt_error("idx: expected a file name"); return NULL; }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) { lt_error("idx: %s: cannot open: %s", path, strerror(errno)); return NULL; }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    lt_error("idx: %s: cannot stat: %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    lt_error("idx: %s: is a directory, not an IDX file", path);
    close(fd);
    return NULL;
  }
  bool gzipped = false;
  if (S_ISREG(st.st_mode)) {
    unsigned char head[2];
    ssize_t k = pread(fd, head, 2, 0);
    if (k < 0) {
      lt_error("idx: %s: read error: %s", path, strerror(errno));
      close(fd);
      return NULL;
    }
    gzipped = k == 2 && head[0] == 0x1f && head[1] == 0x8b;
  }
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    lt_error("idx: %s: cannot open through zlib (out of memory)", path);
    close(fd);
    return NULL;
  }
  if (gzbuffer(gz, 1u << 17) != 0) {
    lt_error("idx: %s: cannot set zlib's buffer size", path);
    gzclose(gz);
    return NULL;
  }
  reader_t r = {path, gz, false};
  lt_tensor_t *t = read_body(&r, &st, gzipped);
  int rc = gzclose(gz); /* closes fd */
  if (t && rc != Z_OK) {
    lt_error("idx: %s: error closing the file (zlib code %d)", path, rc);
    lt_release(t);
    return NULL;
  }
  return t;
}
