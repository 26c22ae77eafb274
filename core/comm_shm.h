/* The all-reduce of the ranks of one machine through memory they share, which the MPI backend
   (core/comm_mpi.c) uses for float32 and float64 SUM and AVG when every rank of the group is on
   one node: DDP's gradients. Open MPI's shared-memory transport copies a message through its
   fragments and polls for each; here the ranks read each other's buffers in place.

   The mapping holds one region a rank: its barrier count and what it is reducing, then a buffer
   of `piece` bytes. A tensor is reduced in pieces of at most a buffer, each cut into `size` equal
   slices, slice k summed by rank k and kept in slot k of the buffers (the k-th `size`-th of each,
   whatever the piece's length). Each rank copies into its buffer the slices the others sum (its
   own stays in the tensor), waits for the others (barrier), sums its slice over the ranks in rank
   order -- its own data read in place, the others' from their buffers; so every rank gets the
   same bits -- into the tensor and into its own slot of its buffer, waits again, and copies the
   others' slices from their owners' buffers into the tensor. Two barriers a piece are enough, for
   a rank writes into the slots of its buffer the others read (theirs) only before the first
   barrier, after they reached the second of the piece before, and into the slot they read after
   the second barrier (its own) only after the first, which they pass only once they finished
   reading it in the piece before. One buffer a rank keeps the memory in use, and in cache, small.

   Waiting spins (with the CPU's pause) and then yields the core, so that more ranks than cores
   still make progress. A rank that died or hangs leaves the others waiting: the MPI backend's
   watchdog ends the job after the group's timeout, as for its own collectives. The code knows
   nothing of MPI (spec/c/test_comm_shm.c runs it over forked processes). */
#ifndef LT_COMM_SHM_H
#define LT_COMM_SHM_H

#include "core/dtype.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LT_SHM_MAX_RANKS 64

typedef struct {
  char *base;      /* the shared mapping: `size` regions, zeroed before the first use */
  int rank, size;
  size_t piece;    /* bytes of each region's buffer (a multiple of 4096) */
  uint64_t gen;    /* barriers this rank passed */
  /* what the rank that differed was reducing (lt_shm_all_reduce's result >= 0) */
  int64_t their_n;
  lt_dtype their_dtype;
  bool their_avg;
} lt_shm_t;

/* The buffer size for `size` ranks: 4 MiB (DDP's 25 MB buckets in a few pieces, each warm in
   cache), less for many ranks so that the mapping stays under ~24 MiB. */
size_t lt_shm_piece_for(int size);

/* bytes of the mapping for `size` ranks with buffers of `piece` bytes */
size_t lt_shm_bytes(int size, size_t piece);

/* s over a zeroed mapping of lt_shm_bytes(size, piece) bytes, as rank `rank` of `size` (at most
   LT_SHM_MAX_RANKS) */
void lt_shm_init(lt_shm_t *s, void *base, int rank, int size, size_t piece);

/* whether lt_shm_all_reduce takes this dtype and op (float32 and float64; SUM or AVG) */
bool lt_shm_takes(lt_dtype dt, bool sum_or_avg);

/* data (n contiguous elements of dt, host memory) = the sum over the ranks of their data, divided
   by the number of ranks when avg. Every rank calls it with the same n, dt and avg: each checks the
   others' at every piece, and returns the first rank that differs (its call in their_*; the ranks
   are out of step and data is partly reduced: the caller ends the job), or -1 when done. */
int lt_shm_all_reduce(lt_shm_t *s, void *data, int64_t n, lt_dtype dt, bool avg);

/* The same over the concatenation of count segments (seg[j]: len[j] contiguous elements), as one
   collective: DDP's gradients reduced in place, without a bucket's copy. */
int lt_shm_all_reduce_many(lt_shm_t *s, void *const *seg, const int64_t *len, int count, lt_dtype dt, bool avg);

#endif
