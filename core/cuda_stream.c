/* The CUDA backend's streams and events (the entry points of core/stream.h that core/cuda_backend.c
   registers): cudaStream_t created with cudaStreamNonBlocking, as PyTorch's pool streams are (they
   do not synchronise with the legacy default stream, handle NULL), and cudaEvent_t with
   cudaEventDisableTiming unless timing was asked for. Without CUDA=1 these are stubs that refuse:
   nothing references them there, since no CUDA backend is registered. */
#include "core/stream.h"
#include "core/error.h"

#ifdef LT_WITH_CUDA
#include "core/cuda_check.h"

int lt_cuda_stream_create(int index, void **h) {
  LT_TRY(lt_cuda_use(index));
  cudaStream_t s;
  LT_CUDA_CHECK(index, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *h = s;
  return LT_OK;
}

int lt_cuda_stream_synchronize(int index, void *h) {
  LT_TRY(lt_cuda_use(index));
  LT_CUDA_CHECK(index, cudaStreamSynchronize((cudaStream_t)h));
  return LT_OK;
}

int lt_cuda_stream_query(int index, void *h, bool *done) {
  LT_TRY(lt_cuda_use(index));
  cudaError_t rc = cudaStreamQuery((cudaStream_t)h);
  if (rc == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *done = false;
    return LT_OK;
  }
  LT_CUDA_CHECK(index, rc);
  *done = true;
  return LT_OK;
}

int lt_cuda_stream_wait_event(int index, void *h, void *ev) {
  LT_TRY(lt_cuda_use(index));
  LT_CUDA_CHECK(index, cudaStreamWaitEvent((cudaStream_t)h, (cudaEvent_t)ev, 0));
  return LT_OK;
}

int lt_cuda_event_create(int index, bool timing, void **ev) {
  LT_TRY(lt_cuda_use(index));
  cudaEvent_t e;
  LT_CUDA_CHECK(index, cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  *ev = e;
  return LT_OK;
}

void lt_cuda_event_destroy(int index, void *ev) {
  if (lt_cuda_use(index) != LT_OK) return;
  if (cudaEventDestroy((cudaEvent_t)ev) != cudaSuccess) (void)cudaGetLastError();
}

int lt_cuda_event_record(int index, void *ev, void *stream) {
  LT_TRY(lt_cuda_use(index));
  LT_CUDA_CHECK(index, cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream));
  return LT_OK;
}

int lt_cuda_event_synchronize(int index, void *ev) {
  LT_TRY(lt_cuda_use(index));
  LT_CUDA_CHECK(index, cudaEventSynchronize((cudaEvent_t)ev));
  return LT_OK;
}

int lt_cuda_event_query(int index, void *ev, bool *done) {
  LT_TRY(lt_cuda_use(index));
  cudaError_t rc = cudaEventQuery((cudaEvent_t)ev);
  if (rc == cudaErrorNotReady) {
    (void)cudaGetLastError();
    *done = false;
    return LT_OK;
  }
  LT_CUDA_CHECK(index, rc);
  *done = true;
  return LT_OK;
}

int lt_cuda_event_elapsed_ms(int index, void *a, void *b, double *ms) {
  LT_TRY(lt_cuda_use(index));
  float f = 0;
  LT_CUDA_CHECK(index, cudaEventElapsedTime(&f, (cudaEvent_t)a, (cudaEvent_t)b));
  *ms = f;
  return LT_OK;
}

#else /* ---- a build without CUDA ---- */

static int no_cuda(void) { return lt_error("CUDA streams and events: this build has no CUDA support (build with make CUDA=1)"); }
int lt_cuda_stream_create(int index, void **h) { (void)index; (void)h; return no_cuda(); }
int lt_cuda_stream_synchronize(int index, void *h) { (void)index; (void)h; return no_cuda(); }
int lt_cuda_stream_query(int index, void *h, bool *done) { (void)index; (void)h; (void)done; return no_cuda(); }
int lt_cuda_stream_wait_event(int index, void *h, void *ev) { (void)index; (void)h; (void)ev; return no_cuda(); }
int lt_cuda_event_create(int index, bool timing, void **ev) { (void)index; (void)timing; (void)ev; return no_cuda(); }
void lt_cuda_event_destroy(int index, void *ev) { (void)index; (void)ev; }
int lt_cuda_event_record(int index, void *ev, void *stream) { (void)index; (void)ev; (void)stream; return no_cuda(); }
int lt_cuda_event_synchronize(int index, void *ev) { (void)index; (void)ev; return no_cuda(); }
int lt_cuda_event_query(int index, void *ev, bool *done) { (void)index; (void)ev; (void)done; return no_cuda(); }
int lt_cuda_event_elapsed_ms(int index, void *a, void *b, double *ms) { (void)index; (void)a; (void)b; (void)ms; return no_cuda(); }

#endif
