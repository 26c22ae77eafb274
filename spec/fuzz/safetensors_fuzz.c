/* libFuzzer target for the safetensors reader (core/safetensors.c): any bytes must give either
   tensors whose sizes match the header or an error, never a crash, hang, leak or out-of-bounds
   access. Build and run from the repository root (clang with libFuzzer; `make build` first, for
   the rest of the core's objects):

     clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -I. -Icore -Ikernels \
       spec/fuzz/safetensors_fuzz.c core/safetensors.c \
       $(find build/obj/core build/obj/kernels -name '[a-z]*.o' ! -name safetensors.o) \
       -lopenblas -lgomp -lm -lpthread -o build/safetensors_fuzz
     build/safetensors_fuzz -max_total_time=60 -max_len=4096 spec/data/reference.safetensors

   (spec/data/reference.safetensors is a good seed: give a corpus directory to keep findings.) */
#include "core/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lt_st_header_t h;
  lt_tensor_t **ts;
  if (lt_safetensors_read_buffer("fuzz", "input", data, size, &h, &ts) != LT_OK) return 0;
  /* what was accepted must be consistent: every tensor's bytes inside the input, and equal to them
     (bools normalised to 0 and 1) */
  uint64_t n = (uint64_t)h.header_len;
  for (int i = 0; i < h.n; i++) {
    const lt_st_info_t *t = &h.tensors[i];
    uint64_t nbytes = (uint64_t)ts[i]->numel * lt_elsize(ts[i]);
    if (t->end - t->begin != nbytes || 8 + n + t->end > size) abort();
    const uint8_t *got = lt_data(ts[i]), *file = data + 8 + n + t->begin;
    if (ts[i]->dtype == LT_BOOL) { /* bools hold 0 or 1: any non-zero byte of the file is true */
      for (uint64_t k = 0; k < nbytes; k++)
        if (got[k] != (file[k] != 0)) abort();
    } else if (nbytes && memcmp(got, file, (size_t)nbytes) != 0) {
      abort();
    }
    lt_release(ts[i]);
  }
  free(ts);
  lt_safetensors_header_free(&h);
  return 0;
}
