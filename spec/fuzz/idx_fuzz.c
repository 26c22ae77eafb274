/* libFuzzer target for the IDX reader (core/idx.c): any bytes, plain or gzipped, must give either a
   tensor whose size matches its header or an error, never a crash, hang, leak or out-of-bounds
   access. The input is handed to the reader as a file (an anonymous memfd, through /proc/self/fd),
   since the reader works on paths. `make fuzz` builds and runs it (FUZZ_SECONDS each target). */
#include "core/idx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("idx_fuzz", 0);
  if (fd < 0) abort();
  size_t off = 0;
  while (off < size) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) abort();
    off += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  lt_tensor_t *t = lt_idx_read(path);
  if (t) {
    /* what was accepted is consistent: the element count is the product of the sizes */
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->sizes[i];
    if (n != t->numel || t->ndim < 1 || t->ndim > 4) abort();
    lt_release(t);
  }
  close(fd);
  return 0;
}
