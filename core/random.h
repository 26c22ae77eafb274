/* The CPU random generator: PyTorch 1.13's CPUGeneratorImpl (at::mt19937, 32-bit seeding from the
   64-bit seed's low half) and its CPU distribution kernels, reproduced so that the same seed gives
   the same numbers as PyTorch on an x86-64 CPU with AVX2 (PyTorch's default CPU capability there).

   All fill functions write n contiguous elements of dtype dt at data, lock the generator for the
   whole call, check their arguments first (nothing is drawn when they fail) and return LT_OK or
   LT_ERR with a message (core/error.h). Which PyTorch call each one reproduces:
     lt_random_uniform    torch.rand / Tensor.uniform_(from, to)           floating dtypes
     lt_random_normal     torch.randn / Tensor.normal_(mean, std)          floating dtypes
     lt_random_int        torch.randint(low, high) / Tensor.random_(low, high)   all dtypes
     lt_random_perm       torch.randperm(n)                                all dtypes but bool
     lt_random_bernoulli  Tensor.bernoulli_(p) with a number p (dropout)   all dtypes
     lt_random_exponential / _cauchy / _log_normal   Tensor.exponential_ / cauchy_ / log_normal_
                                                     floating dtypes
     lt_random_geometric  Tensor.geometric_(p)                             all dtypes but bool
   bernoulli_ is the non-MKL kernel, which Debian's PyTorch uses (PyTorch wheels built with MKL
   draw bernoulli_(p) differently), and also takes float16, which PyTorch's CPU kernel refuses.
   What differs on CPUs without AVX2 and where libm matters: see random.c. */
#ifndef LT_RANDOM_H
#define LT_RANDOM_H

#include "core/dtype.h"

#include <stddef.h>
#include <stdint.h>

typedef struct lt_generator lt_generator_t;

/* PyTorch's default_rng_seed_val, the default generator's seed. */
#define LT_DEFAULT_SEED UINT64_C(67280421310721)

/* A new generator seeded with seed; NULL (and lt_error) when out of memory. */
lt_generator_t *lt_generator_new(uint64_t seed);
/* Frees g (NULL and the default generator are ignored). */
void lt_generator_free(lt_generator_t *g);
/* The process-wide CPU generator, shared by all threads, seeded with LT_DEFAULT_SEED until
   reseeded. (PyTorch seeds its default generator nondeterministically instead.) */
lt_generator_t *lt_default_generator(void);
/* Makes g the calling thread's default generator (NULL: the process-wide one again) and returns
   the previous one: a DataLoader worker thread gets a generator of its own, so that
   torch.manual_seed there seeds that worker only. The caller keeps ownership of g. */
lt_generator_t *lt_set_thread_generator(lt_generator_t *g);

/* torch.manual_seed / Generator.manual_seed: resets the engine and the cached normal value. */
void lt_generator_seed(lt_generator_t *g, uint64_t seed);
/* torch.initial_seed / Generator.initial_seed: the last seed set. */
uint64_t lt_generator_initial_seed(const lt_generator_t *g);

/* The complete state as bytes, in PyTorch 1.13's own layout (CPUGeneratorImplState, 5056 bytes,
   little-endian), so torch.get_rng_state() bytes can be loaded here and vice versa. */
size_t lt_generator_state_size(void);
void lt_generator_get_state(const lt_generator_t *g, void *buf);
/* Accepts the 5056-byte layout and PyTorch's 5048-byte legacy layout; checks the size and that the
   engine state is valid ("Invalid mt19937 state") and leaves g unchanged when it fails. */
int lt_generator_set_state(lt_generator_t *g, const void *buf, size_t n);

/* Uniform in [from, to) (from and to first rounded to dt, like PyTorch). */
int lt_random_uniform(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double from, double to);
/* Normal(mean, std), std >= 0. */
int lt_random_normal(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double mean, double std);
/* Integers uniform in [low, high), stored in dt (floating dtypes too; bool needs [0, 2) or [0, 1)). */
int lt_random_int(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, int64_t low, int64_t high);
/* A random permutation of 0 .. n-1 stored in dt. */
int lt_random_perm(lt_generator_t *g, lt_dtype dt, void *data, int64_t n);
/* 1 with probability p, else 0, stored in dt; 0 <= p <= 1. */
int lt_random_bernoulli(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double p);
/* -1/lambd * log(1 - u) per element (u uniform in [0, 1) with 53 bits); lambd > 0 (PyTorch 1.13
   also takes 0, later versions refuse it). */
int lt_random_exponential(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double lambd);
/* ceil(log(u) / log(1 - p)) per element; 0 < p < 1. */
int lt_random_geometric(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double p);
/* median + sigma * tan(pi * (u - 0.5)) per element; sigma > 0 (PyTorch 1.13 does not check it). */
int lt_random_cauchy(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double median, double sigma);
/* exp(Normal(mean, std)) per element, drawn one at a time (the cached Box-Muller pair); std > 0. */
int lt_random_log_normal(lt_generator_t *g, lt_dtype dt, void *data, int64_t n, double mean, double std);

#endif
