/* The device registry, device strings, and the CPU backend with its virtual devices. */
#include "core/device.h"
#include "core/error.h"
#include "core/stream.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the CPU backend ---- */
#define CPU_ALIGN 64

/* atomic: embedded states on several threads may ask at once */
static atomic_int cpu_count = 0; /* 0 until first asked: then LUTORCH_CPU_DEVICES or 1 */
static atomic_int cpu_count_locked = 0;

/* the number after `key` in a file of "key value" lines (/proc/meminfo: "MemAvailable:  123 kB"),
   or a file holding one number (cgroup v2's memory.max, memory.current); -1 when absent or "max" */
static int64_t read_number(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  int64_t v = -1;
  size_t klen = key ? strlen(key) : 0;
  while (fgets(line, sizeof line, f)) {
    if (key && strncmp(line, key, klen) != 0) continue;
    char *end;
    long long x = strtoll(line + klen, &end, 10);
    if (end != line + klen && x >= 0) v = (int64_t)x;
    break;
  }
  fclose(f);
  return v;
}

/* the memory a new allocation can still have: the kernel's MemAvailable, and below a cgroup's
   limit (v2) what is left of it; -1 unknown */
static int64_t cpu_available_memory(int index) {
  (void)index;
  int64_t kb = read_number("/proc/meminfo", "MemAvailable:");
  int64_t avail = kb >= 0 && kb <= INT64_MAX / 1024 ? kb * 1024 : -1;
  int64_t max = read_number("/sys/fs/cgroup/memory.max", NULL);
  int64_t cur = max >= 0 ? read_number("/sys/fs/cgroup/memory.current", NULL) : -1;
  if (max >= 0 && cur >= 0) {
    int64_t left = max > cur ? max - cur : 0;
    if (avail < 0 || left < avail) avail = left;
  }
  return avail;
}

/* Allocations from here on are checked against the memory available: Linux hands out more than it
   has and kills the process when the pages are touched, where an error in the script is wanted.
   (Smaller ones are not: reading /proc costs ~20 us.) */
#define CPU_CHECKED_ALLOC ((size_t)256 << 20)

static int cpu_raw_alloc(int index, size_t n, void **out) {
  (void)index;
  atomic_store(&cpu_count_locked, 1);
  size_t sz = (n + CPU_ALIGN - 1) & ~(size_t)(CPU_ALIGN - 1);
  if (sz < n) return LT_ERR;
  if (sz >= CPU_CHECKED_ALLOC) {
    int64_t avail = cpu_available_memory(index);
    if (avail >= 0 && sz > (uint64_t)avail) return LT_ERR;
  }
  void *p = aligned_alloc(CPU_ALIGN, sz ? sz : CPU_ALIGN);
  if (!p) return LT_ERR;
  *out = p;
  return LT_OK;
}

static void cpu_raw_free(int index, void *p) { (void)index; free(p); }

static int cpu_synchronize(int index) { (void)index; return LT_OK; }

/* the machine's memory: every virtual CPU device shares it */
static int64_t cpu_total_memory(int index) {
  (void)index;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (int64_t)pages * page : -1;
}

static int cpu_device_count(void) {
  int c = atomic_load(&cpu_count);
  if (c == 0) {
    const char *s = getenv("LUTORCH_CPU_DEVICES");
    int n = 1;
    if (s && *s) {
      char *end;
      long v = strtol(s, &end, 10);
      if (*end == '\0' && v >= 1 && v <= LT_DEVICE_MAX) n = (int)v;
      else fprintf(stderr, "lutorch: ignoring LUTORCH_CPU_DEVICES=%s (expected 1 to %d)\n", s,
                   LT_DEVICE_MAX);
    }
    int zero = 0; /* the first to decide wins; the others read its answer */
    c = atomic_compare_exchange_strong(&cpu_count, &zero, n) ? n : zero;
  }
  return c;
}

static const lt_backend_i cpu_backend = {
    .name = "cpu",
    .device_count = cpu_device_count,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .alignment = CPU_ALIGN,
    .cache_limit = (size_t)1 << 30, /* host memory: keep at most 1 GiB cached per device */
    .split_segments = false, /* whole size-class blocks: the fastest reuse (torch._memory_set_policy) */
    .synchronize = cpu_synchronize,
    .host_accessible = true,
    .total_memory = cpu_total_memory,
    .available_memory_i = cpu_available_memory,
    .stream_create = lt_cpu_stream_create,
    .stream_synchronize = lt_cpu_stream_synchronize,
    .stream_query = lt_cpu_stream_query,
    .stream_wait_event = lt_cpu_stream_wait_event,
    .event_create = lt_cpu_event_create,
    .event_destroy = lt_cpu_event_destroy,
    .event_record = lt_cpu_event_record,
    .event_synchronize = lt_cpu_event_synchronize,
    .event_query = lt_cpu_event_query,
    .event_elapsed_ms = lt_cpu_event_elapsed_ms,
};

int lt_cpu_device_count(void) { return cpu_device_count(); }

int lt_cpu_set_device_count(int n) {
  if (n < 1 || n > LT_DEVICE_MAX)
    return lt_error("cpu.set_device_count: expected a count from 1 to %d, got %d", LT_DEVICE_MAX, n);
  if (atomic_load(&cpu_count_locked) && n != cpu_device_count())
    return lt_error("cpu.set_device_count: CPU tensors already exist; call it before creating any "
                    "(or set LUTORCH_CPU_DEVICES before start)");
  atomic_store(&cpu_count, n);
  return LT_OK;
}

/* ---- the registry ---- */
static const lt_backend_i *backends[LT_NDEVTYPES] = {&cpu_backend, NULL};
static const char *const type_names[LT_NDEVTYPES] = {"cpu", "cuda"};

void lt_register_backend(lt_devtype type, const lt_backend_i *be) { backends[type] = be; }

const lt_backend_i *lt_backend(lt_devtype type) {
  if ((unsigned)type >= LT_NDEVTYPES) return NULL;
  return backends[type];
}

const char *lt_devtype_name(lt_devtype type) {
  return (unsigned)type < LT_NDEVTYPES ? type_names[type] : "unknown";
}

const char *lt_devtypes_available(void) {
  return backends[LT_CUDA] ? "cpu, cuda" : "cpu";
}

int lt_device_parse(const char *s, lt_device_t *out) {
  if (!s || !*s) return lt_error("torch.device: device string must not be empty");
  const char *colon = strchr(s, ':');
  size_t tlen = colon ? (size_t)(colon - s) : strlen(s);
  int type = -1;
  for (int t = 0; t < LT_NDEVTYPES; t++)
    if (strlen(type_names[t]) == tlen && strncmp(s, type_names[t], tlen) == 0) type = t;
  if (type < 0) {
    static const char *const known[] = {"tpu", "xpu", "mps", "hip", "xla", "meta", "ipu", "hpu", "vulkan", "opengl", "opencl", "fpga", "ve", "lazy", "ort", "mkldnn", "ideep"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      if (strlen(known[i]) == tlen && strncmp(s, known[i], tlen) == 0)
        return lt_error("torch.device: device type '%.*s' is not supported by this build; "
                        "available types: %s", (int)tlen, s, lt_devtypes_available());
    return lt_error("torch.device: invalid device string '%s': expected one of %s, optionally "
                    "followed by ':' and an index (e.g. 'cpu:1')", s, lt_devtypes_available());
  }
  if (!backends[type])
    return lt_error("torch.device: device type '%s' is not available in this build; available "
                    "types: %s", type_names[type], lt_devtypes_available());
  int index = -1;
  if (colon) {
    const char *p = colon + 1;
    /* digits only, no sign or spaces, no leading zero (but "0" itself) */
    size_t len = strlen(p);
    int ok = len > 0 && len <= 4 && !(p[0] == '0' && len > 1);
    for (size_t i = 0; ok && i < len; i++) ok = p[i] >= '0' && p[i] <= '9';
    if (!ok) return lt_error("torch.device: invalid device string '%s'", s);
    index = atoi(p);
    if (index >= LT_DEVICE_MAX)
      return lt_error("torch.device: device index %d in '%s' is out of range (at most %d)", index,
                      s, LT_DEVICE_MAX - 1);
  }
  out->type = (int16_t)type;
  out->index = (int16_t)index;
  return LT_OK;
}

char *lt_device_format(lt_device_t d, char *buf, size_t n) {
  if (d.index < 0) snprintf(buf, n, "%s", lt_devtype_name((lt_devtype)d.type));
  else snprintf(buf, n, "%s:%d", lt_devtype_name((lt_devtype)d.type), d.index);
  return buf;
}

int lt_device_count(lt_devtype type) {
  const lt_backend_i *be = lt_backend(type);
  return be ? be->device_count() : 0;
}

static _Thread_local int current[LT_NDEVTYPES];

int lt_current_device(lt_devtype type) { return (unsigned)type < LT_NDEVTYPES ? current[type] : 0; }

int lt_set_current_device(lt_device_t d) {
  lt_device_t r;
  LT_TRY(lt_device_resolve(d, &r));
  current[r.type] = r.index;
  return LT_OK;
}

int lt_device_resolve(lt_device_t d, lt_device_t *out) {
  const lt_backend_i *be = lt_backend((lt_devtype)d.type);
  char buf[32];
  if (!be)
    return lt_error("device type '%s' is not available in this build; available types: %s",
                    lt_devtype_name((lt_devtype)d.type), lt_devtypes_available());
  int n = be->device_count();
  if (n == 0) {
    const char *why = be->unavailable ? be->unavailable() : NULL;
    if (d.type == LT_CUDA)
      return lt_error("%s: CUDA is not available: %s", lt_device_format(d, buf, sizeof buf),
                      why ? why : "no CUDA device found");
    return lt_error("no %s device is available (%s)", be->name, why ? why : "none found");
  }
  int index = d.index < 0 ? current[d.type] : d.index;
  if (index >= n)
    return lt_error("device %s does not exist: %d %s device%s available", lt_device_format(d, buf, sizeof buf),
                    n, be->name, n == 1 ? " is" : "s are");
  out->type = d.type;
  out->index = (int16_t)index;
  return LT_OK;
}
