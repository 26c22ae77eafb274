/* Process-wide settings that ops consult, PyTorch's global context: deterministic algorithms
   (with warn_only), warn_always, and the calling thread's flush-denormal mode. */
#ifndef LT_SETTINGS_H
#define LT_SETTINGS_H

#include <stdbool.h>

/* torch.use_deterministic_algorithms(mode, {warn_only}) */
void lt_set_deterministic(bool mode, bool warn_only);
bool lt_deterministic(void);
bool lt_deterministic_warn_only(void);

/* torch.set_warn_always(b): a warning shown once per process is shown every time */
void lt_set_warn_always(bool on);
bool lt_warn_always(void);

/* An op about to run a kernel whose results may vary from run to run (e.g. atomic adds of floats):
   LT_OK when deterministic algorithms are off; with them on, LT_ERR and PyTorch's error naming op,
   or with warn_only, LT_OK after PyTorch's warning on stderr (once per op unless warn_always). */
int lt_alert_not_deterministic(const char *op);
/* The same for a message of its own (msg, once per distinct key when warning). */
int lt_alert_deterministic(const char *key, const char *msg);

/* Flush denormal results to zero and treat denormal operands as zero (FTZ and DAZ in MXCSR) on
   the calling thread; true where the CPU supports it (x86 with SSE3), false elsewhere (nothing
   changes then). Threads created afterwards inherit the mode, as POSIX threads inherit their
   creator's floating-point environment; threads that already exist (a pool's) keep theirs. */
bool lt_set_flush_denormal(bool on);

#endif
