/* Work stealing for parallel loops whose units do not depend on which thread runs them.

   The cores a process gets are not always alike: on a shared host one may run 20-30% slower than
   the other for minutes at a time (here: the same Winograd pass took 2.4 ms on one core and 3.1 on
   the other), and an even static split then leaves the fast thread waiting for the slow one. Each
   worker starts on its own contiguous run of units (the run a static split gives it, so the data
   it touches is the same as before), takes them from the front, and when its run is empty takes
   units from the back of the run with the most left. A run is one 64-bit word (next, end) changed
   only by compare-and-swap, so owner and thief never both take a unit.

   Use it where a unit's result does not depend on the thread that computes it (each output element
   written by one unit, no per-thread partial sums): the results are then the same bits whichever
   thread takes which unit. Sums kept per run instead of per thread can be made independent of it
   too: the owner adds its run's units in order (lt_steal_own takes them from the front), a thief
   keeps each unit it takes (lt_steal_other: always from a run's back) apart, and after the workers
   are done each run adds what no one took (lt_steal_left) and then the kept units, in order (see
   Winograd's weight gradient in core/conv.c). A run of a worker the team did not have is taken by
   the others (lt_steal_next), or left for lt_steal_left. */
#ifndef LT_STEAL_H
#define LT_STEAL_H

#include <stdint.h>

#define LT_STEAL_MAX 64 /* workers; more share the runs of the first LT_STEAL_MAX */

typedef struct {
  _Alignas(64) uint64_t run; /* next unit in the low 32 bits, end in the high 32 */
} lt_steal_run_t;

typedef struct {
  int nw;
  lt_steal_run_t runs[LT_STEAL_MAX];
} lt_steal_t;

/* units [0, n) over nw workers: worker w's run is [n w / nw, n (w + 1) / nw) */
void lt_steal_init(lt_steal_t *s, int64_t n, int nw);
/* the next unit for worker w, or -1 when every run is empty: lt_steal_own's, else lt_steal_other's */
int64_t lt_steal_next(lt_steal_t *s, int w);
/* the front unit of worker w's own run, or -1 when it is empty */
int64_t lt_steal_own(lt_steal_t *s, int w);
/* a unit from the back of the run with the most left, or -1 when every run is empty: the units a
   worker takes from run v this way are always the last of v's run, after all that v's owner took */
int64_t lt_steal_other(lt_steal_t *s);
/* the units of worker v's run not taken yet: [*next, *end) (after the workers are done: those of a
   worker the team lacked, or that no one took) */
void lt_steal_left(lt_steal_t *s, int v, int64_t *next, int64_t *end);
/* worker v's run as lt_steal_init set it: [*b, *e) */
void lt_steal_run(int64_t n, int nw, int v, int64_t *b, int64_t *e);

/* For the specs: worker 0 waits us microseconds before each unit of its own run (0: never), so
   that the others take from its back. Process-wide; returns the previous setting. */
int lt_steal_set_delay(int us);

#endif
