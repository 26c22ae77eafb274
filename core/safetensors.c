/* The safetensors format (huggingface/safetensors): u64 little-endian header length N, N bytes of
   JSON (padded with spaces to a multiple of 8), then the tensors' raw little-endian bytes.
   The writer reproduces the reference writer byte for byte (tensors sorted by its dtype order,
   descending, then by name; `__metadata__` first; serde_json's compact form and escapes). The reader
   trusts nothing: a bounded header, its own strict JSON parser (no code, no recursion beyond a fixed
   depth), and every offset and shape checked against the file before a byte of data is read. */
#include "core/safetensors.h"
#include "core/elementwise.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "core/safetensors.c writes host memory as the file's little-endian data: add byte swapping for this host"
#endif

/* ---- dtypes ---- */

/* The reference's Dtype enum order (its writer sorts by it, descending); names by lutorch dtype. */
static const struct { lt_dtype t; const char *name; int rank; } st_dtypes[] = {
    {LT_BOOL, "BOOL", 0},  {LT_UINT8, "U8", 1},      {LT_INT8, "I8", 2},   {LT_INT16, "I16", 5},
    {LT_FLOAT16, "F16", 7}, {LT_BFLOAT16, "BF16", 8}, {LT_INT32, "I32", 9}, {LT_FLOAT32, "F32", 11},
    {LT_FLOAT64, "F64", 12}, {LT_INT64, "I64", 13}};
#define N_ST_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

/* Types of the format (current and older releases) that lutorch has no dtype for. */
static const char *const st_unsupported[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                             "F4", "F6_E2M3", "F6_E3M2", "C64"};

const char *lt_safetensors_dtype_name(lt_dtype t) {
  for (size_t i = 0; i < N_ST_DTYPES; i++)
    if (st_dtypes[i].t == t) return st_dtypes[i].name;
  return NULL;
}

static int dtype_rank(lt_dtype t) {
  for (size_t i = 0; i < N_ST_DTYPES; i++)
    if (st_dtypes[i].t == t) return st_dtypes[i].rank;
  return -1;
}

lt_dtype lt_safetensors_dtype_from_name(const char *s, size_t len) {
  for (size_t i = 0; i < N_ST_DTYPES; i++)
    if (strlen(st_dtypes[i].name) == len && memcmp(st_dtypes[i].name, s, len) == 0) return st_dtypes[i].t;
  return LT_DTYPE_INVALID;
}

static bool dtype_known_unsupported(const char *s, size_t len) {
  for (size_t i = 0; i < sizeof st_unsupported / sizeof st_unsupported[0]; i++)
    if (strlen(st_unsupported[i]) == len && memcmp(st_unsupported[i], s, len) == 0) return true;
  return false;
}

/* ---- helpers ---- */

/* Names in messages: at most 200 bytes of them, so a hostile header cannot flood the error. */
#define NAMEFMT "'%.*s'"
#define NAMEARG(p, n) (int)((n) > 200 ? 200 : (n)), (p)

/* Strict UTF-8 as Rust's str::from_utf8: no overlong forms, no surrogates, nothing past U+10FFFF.
   Returns the offset of the first bad byte, or n when all is well. */
static size_t utf8_check(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return i;
    if (n - i < len) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return n;
}

typedef struct {
  char *p;
  size_t n, cap;
  bool oom;
} buf_t;

static void buf_put(buf_t *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = true; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void buf_str(buf_t *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_u64(buf_t *b, uint64_t v) {
  char tmp[24];
  int k = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  buf_put(b, tmp, (size_t)k);
}
/* A JSON string as serde_json writes it: the short escapes where JSON has them, \u00xx (lower-case
   hex) for the other control characters, everything else (DEL and non-ASCII too) as it is. */
static void buf_json_string(buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  buf_put(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[6];
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default:
        if (c < 0x20) {
          memcpy(u, "\\u00", 4);
          u[4] = hex[c >> 4];
          u[5] = hex[c & 15];
        }
    }
    if (esc || c < 0x20) {
      buf_put(b, s + run, i - run);
      if (esc) buf_str(b, esc);
      else buf_put(b, u, 6);
      run = i + 1;
    }
  }
  buf_put(b, s + run, n - run);
  buf_put(b, "\"", 1);
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  if (c) return c;
  return an < bn ? -1 : an > bn;
}

/* ---- writing ---- */

static atomic_llong write_limit = -1;
void lt_safetensors_set_write_limit(int64_t bytes) { atomic_store(&write_limit, (long long)bytes); }

typedef struct {
  const char *op, *path, *tmp;
  FILE *f;
  uint64_t written;
} writer_t;

static int w_put(writer_t *w, const void *p, size_t n) {
  long long lim = atomic_load(&write_limit);
  if (lim >= 0 && w->written + n > (uint64_t)lim) {
    size_t part = (size_t)((uint64_t)lim > w->written ? (uint64_t)lim - w->written : 0);
    if (part) fwrite(p, 1, part, w->f);
    errno = ENOSPC;
    return lt_error("%s: %s: cannot write to the temporary file %s: %s", w->op, w->path, w->tmp, strerror(ENOSPC));
  }
  if (n && fwrite(p, 1, n, w->f) != n)
    return lt_error("%s: %s: cannot write to the temporary file %s: %s", w->op, w->path, w->tmp, strerror(errno));
  w->written += n;
  return LT_OK;
}

typedef struct {
  const lt_st_entry_t *e;
  int rank;
} order_t;

static int cmp_order(const void *pa, const void *pb) {
  const order_t *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank > b->rank ? -1 : 1;
  return cmp_bytes(a->e->name, a->e->name_len, b->e->name, b->e->name_len);
}

static int cmp_meta(const void *pa, const void *pb) {
  const lt_st_meta_t *a = *(const lt_st_meta_t *const *)pa, *b = *(const lt_st_meta_t *const *)pb;
  return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

/* The JSON header, padded; entries in order[], metadata sorted by key (the reference writer keeps
   it in a hash map, so any order is its order; sorting makes our files reproducible). */
static int build_header(const char *op, const char *path, int n, const order_t *order, int nmeta,
                        const lt_st_meta_t *meta, buf_t *b) {
  buf_put(b, "{", 1);
  if (nmeta > 0) {
    const lt_st_meta_t **ms = malloc((size_t)nmeta * sizeof *ms);
    if (!ms) return lt_error("%s: %s: out of memory", op, path);
    for (int i = 0; i < nmeta; i++) ms[i] = &meta[i];
    qsort(ms, (size_t)nmeta, sizeof *ms, cmp_meta);
    int rc = LT_OK;
    for (int i = 0; i < nmeta && rc == LT_OK; i++) {
      if (utf8_check((const uint8_t *)ms[i]->key, ms[i]->key_len) != ms[i]->key_len)
        rc = lt_error("%s: %s: metadata key " NAMEFMT " is not valid UTF-8", op, path, NAMEARG(ms[i]->key, ms[i]->key_len));
      else if (utf8_check((const uint8_t *)ms[i]->value, ms[i]->value_len) != ms[i]->value_len)
        rc = lt_error("%s: %s: the value of metadata key " NAMEFMT " is not valid UTF-8", op, path, NAMEARG(ms[i]->key, ms[i]->key_len));
      else if (i > 0 && cmp_meta(&ms[i - 1], &ms[i]) == 0)
        rc = lt_error("%s: %s: duplicate metadata key " NAMEFMT, op, path, NAMEARG(ms[i]->key, ms[i]->key_len));
    }
    if (rc == LT_OK) {
      buf_str(b, "\"__metadata__\":{");
      for (int i = 0; i < nmeta; i++) {
        if (i) buf_put(b, ",", 1);
        buf_json_string(b, ms[i]->key, ms[i]->key_len);
        buf_put(b, ":", 1);
        buf_json_string(b, ms[i]->value, ms[i]->value_len);
      }
      buf_put(b, "}", 1);
    }
    free(ms);
    if (rc != LT_OK) return rc;
  }
  uint64_t offset = 0;
  for (int i = 0; i < n; i++) {
    const lt_st_entry_t *e = order[i].e;
    const lt_tensor_t *t = e->tensor;
    if (i > 0 || nmeta > 0) buf_put(b, ",", 1);
    buf_json_string(b, e->name, e->name_len);
    buf_str(b, ":{\"dtype\":\"");
    buf_str(b, lt_safetensors_dtype_name(t->dtype));
    buf_str(b, "\",\"shape\":[");
    for (int d = 0; d < t->ndim; d++) {
      if (d) buf_put(b, ",", 1);
      buf_u64(b, (uint64_t)t->sizes[d]);
    }
    uint64_t nbytes = (uint64_t)t->numel * lt_elsize(t);
    buf_str(b, "],\"data_offsets\":[");
    buf_u64(b, offset);
    buf_put(b, ",", 1);
    buf_u64(b, offset + nbytes);
    buf_str(b, "]}");
    offset += nbytes;
  }
  buf_put(b, "}", 1);
  while (b->n % 8) buf_put(b, " ", 1); /* the data then starts 8-byte aligned */
  if (b->oom) return lt_error("%s: %s: out of memory building the header", op, path);
  return LT_OK;
}

/* The tensor's bytes in row-major order: the tensor itself when it is contiguous in memory the CPU
   can read, else a contiguous CPU copy. */
static lt_tensor_t *host_contiguous(lt_tensor_t *t) {
  const lt_backend_i *be = lt_backend((lt_devtype)t->device.type);
  if (be && be->host_accessible) return lt_contiguous(t);
  return lt_convert(t, t->dtype, lt_device(LT_CPU, 0));
}

/* dirname of path into buf ("." when it has no slash). */
static void dir_of(const char *path, char *buf, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(buf, n, ".");
  else if (slash == path) snprintf(buf, n, "/");
  else snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

int lt_safetensors_write(const char *op, const char *path, int n, const lt_st_entry_t *entries,
                         int nmeta, const lt_st_meta_t *meta) {
  if (!path || !*path) return lt_error("%s: expected a file name, got an empty path", op);
  if (n < 0 || nmeta < 0) return lt_error("%s: %s: negative count", op, path);
  order_t *order = malloc(((size_t)n + 1) * sizeof *order);
  if (!order) return lt_error("%s: %s: out of memory", op, path);
  for (int i = 0; i < n; i++) {
    const lt_st_entry_t *e = &entries[i];
    if (!e->tensor) { free(order); return lt_error("%s: %s: tensor %d is missing", op, path, i + 1); }
    if (utf8_check((const uint8_t *)e->name, e->name_len) != e->name_len) {
      free(order);
      return lt_error("%s: %s: tensor name " NAMEFMT " is not valid UTF-8", op, path, NAMEARG(e->name, e->name_len));
    }
    if (e->name_len == 12 && memcmp(e->name, "__metadata__", 12) == 0) {
      free(order);
      return lt_error("%s: %s: '__metadata__' is reserved by the format and cannot name a tensor", op, path);
    }
    order[i].e = e;
    order[i].rank = dtype_rank(e->tensor->dtype);
    if (order[i].rank < 0) {
      free(order);
      return lt_error("%s: %s: tensor " NAMEFMT " has dtype %s, which the format cannot store", op, path,
                      NAMEARG(e->name, e->name_len), lt_dtype_name(e->tensor->dtype));
    }
  }
  /* duplicate names: sort a copy by name alone (order[] is by dtype first) */
  if (n > 1) {
    order_t *byname = malloc((size_t)n * sizeof *byname);
    if (!byname) { free(order); return lt_error("%s: %s: out of memory", op, path); }
    for (int i = 0; i < n; i++) { byname[i] = order[i]; byname[i].rank = 0; }
    qsort(byname, (size_t)n, sizeof *byname, cmp_order);
    for (int i = 1; i < n; i++)
      if (cmp_order(&byname[i - 1], &byname[i]) == 0) {
        int rc = lt_error("%s: %s: duplicate tensor name " NAMEFMT, op, path, NAMEARG(byname[i].e->name, byname[i].e->name_len));
        free(byname);
        free(order);
        return rc;
      }
    free(byname);
  }
  qsort(order, (size_t)n, sizeof *order, cmp_order);

  buf_t hdr = {0};
  if (build_header(op, path, n, order, nmeta, meta, &hdr) != LT_OK) {
    free(hdr.p);
    free(order);
    return LT_ERR;
  }

  /* a symbolic link keeps pointing where it did: the file it names is the one replaced */
  char *resolved = NULL;
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) resolved = realpath(path, NULL);
  const char *target = resolved ? resolved : path;
  bool had_old = stat(target, &st) == 0 && S_ISREG(st.st_mode);

  /* the temporary file: in the target's directory, so that rename() is atomic */
  char dir[4096];
  dir_of(target, dir, sizeof dir);
  const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
  size_t tlen = strlen(dir) + strlen(base) + 64;
  char *tmp = malloc(tlen);
  if (!tmp) { free(resolved); free(hdr.p); free(order); return lt_error("%s: %s: out of memory", op, path); }
  static atomic_uint counter;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    /* the base is cut so that the name stays within NAME_MAX (255) */
    snprintf(tmp, tlen, "%s/.%.200s.tmp%ld.%u", dir, base, (long)getpid(), atomic_fetch_add(&counter, 1));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int rc = lt_error("%s: %s: cannot create a temporary file in %s: %s", op, path, dir, strerror(errno));
    free(tmp); free(resolved); free(hdr.p); free(order);
    return rc;
  }
  /* the new file keeps the old one's permissions, as writing over it in place would */
  if (had_old && fchmod(fd, st.st_mode & 07777) != 0) {
    int rc = lt_error("%s: %s: cannot set the permissions of the temporary file %s: %s", op, path, tmp, strerror(errno));
    close(fd); unlink(tmp); free(tmp); free(resolved); free(hdr.p); free(order);
    return rc;
  }
  writer_t w = {op, path, tmp, fdopen(fd, "wb"), 0};
  int rc = LT_OK;
  if (!w.f) {
    rc = lt_error("%s: %s: cannot open the temporary file %s: %s", op, path, tmp, strerror(errno));
    close(fd);
  }
  if (rc == LT_OK) {
    uint8_t len8[8];
    uint64_t nh = hdr.n;
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(nh >> (8 * i));
    rc = w_put(&w, len8, 8);
    if (rc == LT_OK) rc = w_put(&w, hdr.p, hdr.n);
    for (int i = 0; i < n && rc == LT_OK; i++) {
      lt_tensor_t *c = host_contiguous(order[i].e->tensor);
      if (!c) {
        rc = lt_error("%s: %s: cannot copy tensor " NAMEFMT " to the CPU: %s", op, path,
                      NAMEARG(order[i].e->name, order[i].e->name_len), lt_last_error());
        break;
      }
      if (c->device.type != LT_CPU) {
        const lt_backend_i *be = lt_backend((lt_devtype)c->device.type);
        if (be && be->synchronize) be->synchronize(c->device.index);
      }
      rc = w_put(&w, lt_data(c), (size_t)c->numel * lt_elsize(c));
      lt_release(c);
    }
    if (rc == LT_OK && fflush(w.f) != 0)
      rc = lt_error("%s: %s: cannot write to the temporary file %s: %s", op, path, tmp, strerror(errno));
    if (rc == LT_OK && fsync(fileno(w.f)) != 0)
      rc = lt_error("%s: %s: cannot sync the temporary file %s: %s", op, path, tmp, strerror(errno));
    if (fclose(w.f) != 0 && rc == LT_OK)
      rc = lt_error("%s: %s: cannot close the temporary file %s: %s", op, path, tmp, strerror(errno));
  }
  if (rc == LT_OK && rename(tmp, target) != 0)
    rc = lt_error("%s: %s: cannot rename the temporary file %s over it: %s", op, path, tmp, strerror(errno));
  if (rc != LT_OK) {
    unlink(tmp); /* the old file, if any, was never touched */
  } else {
    /* make the rename itself durable; the new file is in place either way, so this is best effort */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)fsync(dfd);
      close(dfd);
    }
  }
  free(tmp);
  free(resolved);
  free(hdr.p);
  free(order);
  return rc;
}

/* ---- the JSON header parser ---- */

#define MAX_DEPTH 64

typedef struct {
  const char *op, *what;
  const uint8_t *s;
  size_t n, i;
} parser_t;

static int perr(parser_t *p, const char *msg) {
  return lt_error("%s: %s: the header is not valid JSON: %s at byte %zu of the header", p->op, p->what, msg, p->i);
}

static void skip_ws(parser_t *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int expect(parser_t *p, char c) {
  skip_ws(p);
  if (p->i >= p->n || p->s[p->i] != (uint8_t)c) {
    char msg[32];
    snprintf(msg, sizeof msg, "expected '%c'", c);
    return perr(p, msg);
  }
  p->i++;
  return LT_OK;
}

/* true (and consumes it) when the next non-blank character is c */
static bool accept(parser_t *p, char c) {
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == (uint8_t)c) { p->i++; return true; }
  return false;
}

static int hex4(parser_t *p, uint32_t *out) {
  if (p->n - p->i < 4) return perr(p, "truncated \\u escape");
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) {
    uint8_t c = p->s[p->i + k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return perr(p, "bad \\u escape");
  }
  p->i += 4;
  *out = v;
  return LT_OK;
}

/* A string, decoded into a new malloc'ed buffer (NUL-terminated; *len excludes the NUL). out may be
   NULL to skip it. The input was checked to be UTF-8 already. */
static int parse_string(parser_t *p, char **out, size_t *len) {
  skip_ws(p);
  if (p->i >= p->n || p->s[p->i] != '"') return perr(p, "expected a string");
  p->i++;
  buf_t b = {0};
  for (;;) {
    if (p->i >= p->n) { free(b.p); return perr(p, "unterminated string"); }
    uint8_t c = p->s[p->i];
    if (c == '"') { p->i++; break; }
    if (c < 0x20) { free(b.p); return perr(p, "control character in a string"); }
    if (c != '\\') {
      size_t j = p->i;
      while (j < p->n && p->s[j] != '"' && p->s[j] != '\\' && p->s[j] >= 0x20) j++;
      if (out) buf_put(&b, p->s + p->i, j - p->i);
      p->i = j;
      continue;
    }
    p->i++;
    if (p->i >= p->n) { free(b.p); return perr(p, "unterminated string"); }
    c = p->s[p->i++];
    char ch;
    switch (c) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (hex4(p, &cp) != LT_OK) { free(b.p); return LT_ERR; }
        if (cp >= 0xDC00 && cp <= 0xDFFF) { free(b.p); return perr(p, "lone low surrogate in a \\u escape"); }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') {
            free(b.p);
            return perr(p, "lone high surrogate in a \\u escape");
          }
          p->i += 2;
          if (hex4(p, &lo) != LT_OK) { free(b.p); return LT_ERR; }
          if (lo < 0xDC00 || lo > 0xDFFF) { free(b.p); return perr(p, "bad surrogate pair in a \\u escape"); }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        uint8_t u[4];
        size_t k;
        if (cp < 0x80) { u[0] = (uint8_t)cp; k = 1; }
        else if (cp < 0x800) { u[0] = (uint8_t)(0xC0 | (cp >> 6)); u[1] = (uint8_t)(0x80 | (cp & 0x3F)); k = 2; }
        else if (cp < 0x10000) {
          u[0] = (uint8_t)(0xE0 | (cp >> 12)); u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
          u[2] = (uint8_t)(0x80 | (cp & 0x3F)); k = 3;
        } else {
          u[0] = (uint8_t)(0xF0 | (cp >> 18)); u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
          u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (uint8_t)(0x80 | (cp & 0x3F)); k = 4;
        }
        if (out) buf_put(&b, u, k);
        continue;
      }
      default: free(b.p); p->i--; return perr(p, "bad escape in a string");
    }
    if (out) buf_put(&b, &ch, 1);
  }
  if (!out) return LT_OK;
  buf_put(&b, "", 1);
  if (b.oom) { free(b.p); return lt_error("%s: %s: out of memory parsing the header", p->op, p->what); }
  *out = b.p;
  *len = b.n - 1;
  return LT_OK;
}

/* A JSON number of any form (only skipped: the format's numbers are read by parse_uint). */
static int skip_number(parser_t *p) {
  size_t i = p->i;
  if (i < p->n && p->s[i] == '-') i++;
  if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') return perr(p, "bad number");
  if (p->s[i] == '0') i++;
  else while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
  if (i < p->n && p->s[i] == '.') {
    i++;
    if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') { p->i = i; return perr(p, "bad number"); }
    while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
  }
  if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
    i++;
    if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
    if (i >= p->n || p->s[i] < '0' || p->s[i] > '9') { p->i = i; return perr(p, "bad number"); }
    while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
  }
  p->i = i;
  return LT_OK;
}

static int skip_value(parser_t *p, int depth) {
  if (depth > MAX_DEPTH) return perr(p, "nested too deeply");
  skip_ws(p);
  if (p->i >= p->n) return perr(p, "unexpected end");
  uint8_t c = p->s[p->i];
  if (c == '"') return parse_string(p, NULL, NULL);
  if (c == '{') {
    p->i++;
    if (accept(p, '}')) return LT_OK;
    do {
      LT_TRY(parse_string(p, NULL, NULL));
      LT_TRY(expect(p, ':'));
      LT_TRY(skip_value(p, depth + 1));
    } while (accept(p, ','));
    return expect(p, '}');
  }
  if (c == '[') {
    p->i++;
    if (accept(p, ']')) return LT_OK;
    do LT_TRY(skip_value(p, depth + 1)); while (accept(p, ','));
    return expect(p, ']');
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    size_t wl = strlen(words[k]);
    if (p->n - p->i >= wl && memcmp(p->s + p->i, words[k], wl) == 0) { p->i += wl; return LT_OK; }
  }
  return skip_number(p);
}

/* A non-negative integer (no sign, fraction or exponent) that fits in max. */
static int parse_uint(parser_t *p, uint64_t max, uint64_t *out, const char *field, const char *name, size_t nlen) {
  skip_ws(p);
  size_t i = p->i;
  uint64_t v = 0;
  bool ok = i < p->n && p->s[i] >= '0' && p->s[i] <= '9' && !(p->s[i] == '0' && i + 1 < p->n && p->s[i + 1] >= '0' && p->s[i + 1] <= '9');
  while (ok && i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
    unsigned d = p->s[i] - '0';
    if (v > (max - d) / 10) {
      return lt_error("%s: %s: tensor " NAMEFMT ": a number in \"%s\" is too large, at byte %zu of the header",
                      p->op, p->what, NAMEARG(name, nlen), field, p->i);
    }
    v = v * 10 + d;
    i++;
  }
  if (ok && i < p->n && (p->s[i] == '.' || p->s[i] == 'e' || p->s[i] == 'E')) ok = false;
  if (!ok)
    return lt_error("%s: %s: tensor " NAMEFMT ": \"%s\" must hold non-negative integers, at byte %zu of the header",
                    p->op, p->what, NAMEARG(name, nlen), field, p->i);
  p->i = i;
  *out = v;
  return LT_OK;
}

static int parse_info(parser_t *p, lt_st_info_t *t) {
  const char *name = t->name;
  size_t nlen = t->name_len;
  bool have_dtype = false, have_shape = false, have_offsets = false;
  skip_ws(p);
  if (p->i >= p->n) return perr(p, "unexpected end");
  if (p->s[p->i] != '{')
    return lt_error("%s: %s: tensor " NAMEFMT ": expected an object with dtype, shape and data_offsets, at byte %zu of the header",
                    p->op, p->what, NAMEARG(name, nlen), p->i);
  p->i++;
  if (!accept(p, '}')) {
    do {
      char *key;
      size_t klen;
      LT_TRY(parse_string(p, &key, &klen));
      if (expect(p, ':') != LT_OK) { free(key); return LT_ERR; }
      int rc = LT_OK;
      bool *seen = NULL;
      if (strcmp(key, "dtype") == 0 && klen == 5) {
        seen = &have_dtype;
        if (!have_dtype) {
          char *dt;
          size_t dlen;
          rc = parse_string(p, &dt, &dlen);
          if (rc == LT_OK) {
            t->dtype = lt_safetensors_dtype_from_name(dt, dlen);
            if (t->dtype == LT_DTYPE_INVALID)
              rc = dtype_known_unsupported(dt, dlen)
                       ? lt_error("%s: %s: tensor " NAMEFMT " has dtype %s, which lutorch does not support",
                                  p->op, p->what, NAMEARG(name, nlen), dt)
                       : lt_error("%s: %s: tensor " NAMEFMT " has unknown dtype '%.*s'", p->op, p->what,
                                  NAMEARG(name, nlen), NAMEARG(dt, dlen));
            free(dt);
          }
        }
      } else if (strcmp(key, "shape") == 0 && klen == 5) {
        seen = &have_shape;
        if (!have_shape) {
          rc = expect(p, '[');
          t->ndim = 0;
          if (rc == LT_OK && !accept(p, ']')) {
            do {
              uint64_t v;
              if (t->ndim >= LT_MAX_DIM) {
                rc = lt_error("%s: %s: tensor " NAMEFMT " has more than %d dimensions", p->op, p->what,
                              NAMEARG(name, nlen), LT_MAX_DIM);
                break;
              }
              rc = parse_uint(p, INT64_MAX, &v, "shape", name, nlen);
              if (rc == LT_OK) t->sizes[t->ndim++] = (int64_t)v;
            } while (rc == LT_OK && accept(p, ','));
            if (rc == LT_OK) rc = expect(p, ']');
          }
        }
      } else if (strcmp(key, "data_offsets") == 0 && klen == 12) {
        seen = &have_offsets;
        if (!have_offsets) {
          bool ok = accept(p, '[');
          if (ok) rc = parse_uint(p, UINT64_MAX, &t->begin, "data_offsets", name, nlen);
          if (ok && rc == LT_OK) ok = accept(p, ',');
          if (ok && rc == LT_OK) rc = parse_uint(p, UINT64_MAX, &t->end, "data_offsets", name, nlen);
          if (ok && rc == LT_OK) ok = accept(p, ']');
          if (!ok)
            rc = lt_error("%s: %s: tensor " NAMEFMT ": \"data_offsets\" must be [begin, end], at byte %zu of the header",
                          p->op, p->what, NAMEARG(name, nlen), p->i);
        }
      } else {
        rc = skip_value(p, 2); /* fields of later versions are ignored, as the reference does */
      }
      if (rc == LT_OK && seen) {
        if (*seen) rc = lt_error("%s: %s: tensor " NAMEFMT ": duplicate field \"%s\"", p->op, p->what, NAMEARG(name, nlen), key);
        *seen = true;
      }
      free(key);
      LT_TRY(rc);
    } while (accept(p, ','));
    LT_TRY(expect(p, '}'));
  }
  const char *missing = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_offsets ? "data_offsets" : NULL;
  if (missing) return lt_error("%s: %s: tensor " NAMEFMT " has no \"%s\"", p->op, p->what, NAMEARG(name, nlen), missing);
  return LT_OK;
}

void lt_safetensors_header_free(lt_st_header_t *h) {
  if (!h) return;
  for (int i = 0; i < h->n; i++) free(h->tensors[i].name);
  for (int i = 0; i < h->nmeta; i++) {
    free((char *)h->meta[i].key);
    free((char *)h->meta[i].value);
  }
  free(h->tensors);
  free(h->meta);
  memset(h, 0, sizeof *h);
}

static int cmp_info_offsets(const void *pa, const void *pb) {
  const lt_st_info_t *a = pa, *b = pb;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end) return a->end < b->end ? -1 : 1;
  return (a->position > b->position) - (a->position < b->position);
}
static int cmp_info_names(const void *pa, const void *pb) {
  const lt_st_info_t *a = *(const lt_st_info_t *const *)pa, *b = *(const lt_st_info_t *const *)pb;
  return cmp_bytes(a->name, a->name_len, b->name, b->name_len);
}

static int parse_metadata(parser_t *p, lt_st_header_t *h) {
  skip_ws(p);
  if (p->n - p->i >= 4 && memcmp(p->s + p->i, "null", 4) == 0) { p->i += 4; return LT_OK; }
  if (p->i >= p->n || p->s[p->i] != '{')
    return lt_error("%s: %s: \"__metadata__\" must be an object of strings, at byte %zu of the header", p->op, p->what, p->i);
  p->i++;
  if (accept(p, '}')) return LT_OK;
  int cap = 0;
  do {
    if (h->nmeta == cap) {
      cap = cap ? cap * 2 : 8;
      lt_st_meta_t *m = realloc(h->meta, (size_t)cap * sizeof *m);
      if (!m) return lt_error("%s: %s: out of memory parsing the header", p->op, p->what);
      h->meta = m;
    }
    lt_st_meta_t *m = &h->meta[h->nmeta];
    char *k, *v;
    size_t kl, vl;
    LT_TRY(parse_string(p, &k, &kl));
    if (expect(p, ':') != LT_OK) { free(k); return LT_ERR; }
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != '"') {
      int rc = lt_error("%s: %s: metadata " NAMEFMT " must be a string, at byte %zu of the header", p->op, p->what, NAMEARG(k, kl), p->i);
      free(k);
      return rc;
    }
    if (parse_string(p, &v, &vl) != LT_OK) { free(k); return LT_ERR; }
    for (int j = 0; j < h->nmeta; j++) /* metadata maps are small */
      if (cmp_bytes(h->meta[j].key, h->meta[j].key_len, k, kl) == 0) {
        int rc = lt_error("%s: %s: duplicate metadata key " NAMEFMT, p->op, p->what, NAMEARG(k, kl));
        free(k);
        free(v);
        return rc;
      }
    m->key = k; m->key_len = kl; m->value = v; m->value_len = vl;
    h->nmeta++;
  } while (accept(p, ','));
  return expect(p, '}');
}

static int parse_header(parser_t *p, uint64_t data_len, lt_st_header_t *h) {
  size_t bad = utf8_check(p->s, p->n);
  if (bad != p->n) return lt_error("%s: %s: the header is not valid UTF-8 (byte %zu of the header)", p->op, p->what, bad);
  skip_ws(p);
  if (p->i >= p->n || p->s[p->i] != '{') return perr(p, "expected '{' to start the header");
  p->i++;
  bool have_meta = false;
  int cap = 0;
  if (!accept(p, '}')) {
    do {
      char *name;
      size_t nlen;
      LT_TRY(parse_string(p, &name, &nlen));
      if (expect(p, ':') != LT_OK) { free(name); return LT_ERR; }
      if (nlen == 12 && memcmp(name, "__metadata__", 12) == 0) {
        free(name);
        if (have_meta) return lt_error("%s: %s: duplicate \"__metadata__\" in the header", p->op, p->what);
        have_meta = true;
        LT_TRY(parse_metadata(p, h));
        continue;
      }
      if (h->n == cap) {
        if (cap >= (1 << 28)) { free(name); return lt_error("%s: %s: too many tensors", p->op, p->what); }
        cap = cap ? cap * 2 : 16;
        lt_st_info_t *t = realloc(h->tensors, (size_t)cap * sizeof *t);
        if (!t) { free(name); return lt_error("%s: %s: out of memory parsing the header", p->op, p->what); }
        h->tensors = t;
      }
      lt_st_info_t *t = &h->tensors[h->n++];
      memset(t, 0, sizeof *t);
      t->name = name;
      t->name_len = nlen;
      t->position = h->n - 1;
      LT_TRY(parse_info(p, t));
    } while (accept(p, ','));
    LT_TRY(expect(p, '}'));
  }
  skip_ws(p);
  if (p->i != p->n) return perr(p, "unexpected text after the header object");

  /* duplicate names: JSON allows them, the format does not */
  if (h->n > 1) {
    const lt_st_info_t **byname = malloc((size_t)h->n * sizeof *byname);
    if (!byname) return lt_error("%s: %s: out of memory", p->op, p->what);
    for (int i = 0; i < h->n; i++) byname[i] = &h->tensors[i];
    qsort(byname, (size_t)h->n, sizeof *byname, cmp_info_names);
    for (int i = 1; i < h->n; i++)
      if (cmp_info_names(&byname[i - 1], &byname[i]) == 0) {
        int rc = lt_error("%s: %s: duplicate tensor name " NAMEFMT " in the header", p->op, p->what,
                          NAMEARG(byname[i]->name, byname[i]->name_len));
        free(byname);
        return rc;
      }
    free(byname);
  }

  /* the tensors must tile the data from byte 0, in offset order, with no gap, overlap or excess */
  if (h->n > 1) qsort(h->tensors, (size_t)h->n, sizeof *h->tensors, cmp_info_offsets);
  uint64_t start = 0;
  for (int i = 0; i < h->n; i++) {
    lt_st_info_t *t = &h->tensors[i];
    char shape[256];
    if (t->end < t->begin)
      return lt_error("%s: %s: tensor " NAMEFMT ": data offsets [%llu, %llu] end before they begin", p->op, p->what,
                      NAMEARG(t->name, t->name_len), (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->begin != start)
      return lt_error("%s: %s: tensor " NAMEFMT ": data offsets [%llu, %llu] %s the previous tensor's end at byte %llu "
                      "(tensors must cover the data from byte 0 without gaps or overlaps)",
                      p->op, p->what, NAMEARG(t->name, t->name_len), (unsigned long long)t->begin,
                      (unsigned long long)t->end, t->begin < start ? "overlap" : "leave a gap after", (unsigned long long)start);
    /* product of the non-zero sizes, bounded so that strides and byte counts cannot overflow */
    uint64_t numel = 1, bound = 1;
    bool overflow = false;
    for (int d = 0; d < t->ndim; d++) {
      uint64_t s = (uint64_t)t->sizes[d];
      if (s && __builtin_mul_overflow(bound, s, &bound)) overflow = true;
      numel *= s; /* meaningful only without overflow */
    }
    if (overflow || bound > (uint64_t)INT64_MAX / 16)
      return lt_error("%s: %s: tensor " NAMEFMT ": shape %s is too large", p->op, p->what, NAMEARG(t->name, t->name_len),
                      lt_shape_str(t->ndim, t->sizes, shape, sizeof shape));
    uint64_t nbytes = numel * lt_dtype_size(t->dtype);
    if (t->end - t->begin != nbytes)
      return lt_error("%s: %s: tensor " NAMEFMT ": shape %s of dtype %s needs %llu bytes, but data offsets [%llu, %llu] hold %llu",
                      p->op, p->what, NAMEARG(t->name, t->name_len), lt_shape_str(t->ndim, t->sizes, shape, sizeof shape),
                      lt_safetensors_dtype_name(t->dtype), (unsigned long long)nbytes, (unsigned long long)t->begin,
                      (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    start = t->end;
  }
  if (start > data_len)
    return lt_error("%s: %s: the file is truncated: the header describes %llu bytes of tensor data, the file holds %llu",
                    p->op, p->what, (unsigned long long)start, (unsigned long long)data_len);
  if (start < data_len)
    return lt_error("%s: %s: the file holds %llu bytes of tensor data, but the header describes only %llu",
                    p->op, p->what, (unsigned long long)data_len, (unsigned long long)start);
  return LT_OK;
}

int lt_safetensors_parse_header(const char *op, const char *what, const uint8_t *json, size_t n,
                                uint64_t data_len, lt_st_header_t *h) {
  memset(h, 0, sizeof *h);
  h->header_len = n;
  parser_t p = {op, what, json, n, 0};
  if (parse_header(&p, data_len, h) != LT_OK) {
    lt_safetensors_header_free(h);
    return LT_ERR;
  }
  return LT_OK;
}

/* ---- reading ---- */

typedef struct {
  int fd;              /* a file, or -1 with buf */
  const uint8_t *buf;
  uint64_t size;
} source_t;

static int read_at(const char *op, const char *what, const source_t *src, uint64_t off, void *dst, uint64_t n) {
  if (src->fd < 0) {
    memcpy(dst, src->buf + off, (size_t)n);
    return LT_OK;
  }
  char *d = dst;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = pread(src->fd, d, chunk, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return lt_error("%s: %s: read failed: %s", op, what, strerror(errno));
    }
    if (r == 0) return lt_error("%s: %s: the file ended early (was it changed while being read?)", op, what);
    d += r;
    off += (uint64_t)r;
    n -= (uint64_t)r;
  }
  return LT_OK;
}

static int read_source(const char *op, const char *what, const source_t *src, lt_st_header_t *h, lt_tensor_t ***out) {
  memset(h, 0, sizeof *h);
  *out = NULL;
  if (src->size < 8)
    return lt_error("%s: %s: the file is %llu bytes long, too short for the 8-byte header length of a safetensors file",
                    op, what, (unsigned long long)src->size);
  uint8_t len8[8];
  LT_TRY(read_at(op, what, src, 0, len8, 8));
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | len8[i];
  if (n > LT_ST_MAX_HEADER)
    return lt_error("%s: %s: header length %llu exceeds the limit of %u bytes (not a safetensors file?)", op, what,
                    (unsigned long long)n, LT_ST_MAX_HEADER);
  if (n > src->size - 8)
    return lt_error("%s: %s: header length %llu exceeds the file size (%llu bytes)", op, what, (unsigned long long)n,
                    (unsigned long long)src->size);
  uint8_t *json = malloc(n ? (size_t)n : 1);
  if (!json) return lt_error("%s: %s: out of memory for a header of %llu bytes", op, what, (unsigned long long)n);
  int rc = read_at(op, what, src, 8, json, n);
  if (rc == LT_OK) rc = lt_safetensors_parse_header(op, what, json, (size_t)n, src->size - 8 - n, h);
  free(json);
  LT_TRY(rc);
  lt_tensor_t **ts = calloc((size_t)h->n + 1, sizeof *ts);
  if (!ts) { lt_safetensors_header_free(h); return lt_error("%s: %s: out of memory", op, what); }
  for (int i = 0; i < h->n && rc == LT_OK; i++) {
    lt_st_info_t *t = &h->tensors[i];
    ts[i] = lt_empty(t->ndim, t->sizes, t->dtype, lt_device(LT_CPU, 0));
    if (!ts[i])
      rc = lt_error("%s: %s: cannot allocate tensor " NAMEFMT ": %s", op, what, NAMEARG(t->name, t->name_len), lt_last_error());
    else
      rc = read_at(op, what, src, 8 + n + t->begin, lt_data(ts[i]), t->end - t->begin);
    /* a bool element holds 0 or 1 (reading another byte as C's bool is undefined): any non-zero
       byte of the file is true, as torch.frombuffer takes them */
    if (rc == LT_OK && t->dtype == LT_BOOL) {
      uint8_t *b = lt_data(ts[i]);
      for (uint64_t k = 0; k < t->end - t->begin; k++) b[k] = b[k] != 0;
    }
  }
  if (rc != LT_OK) {
    for (int i = 0; i < h->n; i++) lt_release(ts[i]);
    free(ts);
    lt_safetensors_header_free(h);
    return LT_ERR;
  }
  *out = ts;
  return LT_OK;
}

int lt_safetensors_read(const char *op, const char *path, lt_st_header_t *h, lt_tensor_t ***tensors) {
  memset(h, 0, sizeof *h);
  *tensors = NULL;
  /* O_NONBLOCK: a FIFO must not hang the open (it is refused below); regular files ignore it */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return lt_error("%s: %s: %s", op, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int rc = lt_error("%s: %s: %s", op, path, strerror(errno));
    close(fd);
    return rc;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return lt_error("%s: %s: not a regular file", op, path);
  }
  source_t src = {fd, NULL, (uint64_t)st.st_size};
  int rc = read_source(op, path, &src, h, tensors);
  close(fd);
  return rc;
}

int lt_safetensors_read_buffer(const char *op, const char *what, const uint8_t *buf, size_t len,
                               lt_st_header_t *h, lt_tensor_t ***tensors) {
  source_t src = {-1, buf, len};
  return read_source(op, what, &src, h, tensors);
}
