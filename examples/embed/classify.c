/* classify.c - a C program that embeds lutorch: it loads the MLP that examples/fashion_mnist_mlp.lua
   trained (its checkpoint, a safetensors file written by torch.save) and classifies Fashion-MNIST
   test images that C reads itself (with zlib) and hands over as a tensor.

     make examples
     build/lutorch examples/fashion_mnist_mlp.lua --epochs 1      (writes the checkpoint)
     build/examples/classify build/fashion_mnist_mlp/checkpoint.safetensors 10

   Usage: classify CHECKPOINT [N [IMAGES.gz LABELS.gz]]
   classifies the first N (default 10) images of the test set (default
   /usr/share/datasets/fashion-mnist/t10k-*), prints one line per image and the accuracy.

   Built against the installed library: cc classify.c $(pkg-config --cflags --libs lutorch) -lz */
#include <lutorch.h>

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SIDE 28
#define DATA_DIR "/usr/share/datasets/fashion-mnist"

static const char *const CLASSES[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                        "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* The model of examples/fashion_mnist_mlp.lua, its weights from the checkpoint ({model = state
   dict, optim = ..., epoch = ...}), and a function from a batch of uint8 images to class indices.
   The checkpoint's tensors come to the CPU whichever device trained it (a GPU, by default, where
   one is present). */
static const char *SETUP =
    "local nn = torch.nn\n"
    "local model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),\n"
    "                            nn.Linear(256, 10))\n"
    "local ckpt = torch.load(checkpoint, {map_location = 'cpu'})\n"
    "model:load_state_dict(ckpt.model)\n"
    "model:eval()\n"
    "trained_epochs = ckpt.epoch\n"
    "function classify(images)\n"   /* images: N x 28 x 28 uint8 */
    "  local n = images:size(1)\n"
    "  return torch.no_grad(function()\n"
    "    local logits = model(images:float():div(255):view(n, 784))\n"
    "    return logits:argmax(2):int()\n" /* classes 1..10, as int32 for C */
    "  end)\n"
    "end\n";

/* Reads an IDX file (gzipped): checks the magic for unsigned bytes with `ndim` dimensions and reads
   the first n items of item_bytes bytes each into a new buffer. */
static unsigned char *read_idx(const char *path, int ndim, long n, long item_bytes) {
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "classify: cannot open %s\n", path);
    return NULL;
  }
  unsigned char head[16];
  int hlen = 4 * (1 + ndim);
  unsigned char *buf = NULL;
  if (gzread(f, head, (unsigned)hlen) != hlen || head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != ndim) {
    fprintf(stderr, "classify: %s is not an IDX file of %d-dimensional unsigned bytes\n", path, ndim);
  } else {
    long count = ((long)head[4] << 24) | ((long)head[5] << 16) | ((long)head[6] << 8) | head[7];
    if (n > count) {
      fprintf(stderr, "classify: %s has %ld items, asked for %ld\n", path, count, n);
    } else if (!(buf = malloc((size_t)(n * item_bytes)))) {
      fprintf(stderr, "classify: out of memory\n");
    } else if (gzread(f, buf, (unsigned)(n * item_bytes)) != (int)(n * item_bytes)) {
      fprintf(stderr, "classify: %s: truncated\n", path);
      free(buf);
      buf = NULL;
    }
  }
  gzclose(f);
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc == 4 || argc > 5) {
    fprintf(stderr, "usage: %s CHECKPOINT [N [IMAGES.gz LABELS.gz]]\n", argv[0]);
    return 2;
  }
  long n = argc > 2 ? strtol(argv[2], NULL, 10) : 10;
  if (n < 1 || n > 10000) {
    fprintf(stderr, "classify: N must be 1 to 10000\n");
    return 2;
  }
  const char *images_path = argc > 3 ? argv[3] : DATA_DIR "/t10k-images-idx3-ubyte.gz";
  const char *labels_path = argc > 3 ? argv[4] : DATA_DIR "/t10k-labels-idx1-ubyte.gz";
  unsigned char *images = read_idx(images_path, 3, n, SIDE * SIDE);
  unsigned char *labels = images ? read_idx(labels_path, 1, n, 1) : NULL;
  if (!labels) {
    free(images);
    return 1;
  }

  lua_State *L = lutorch_newstate();
  if (!L) {
    fprintf(stderr, "classify: %s\n", lutorch_errmsg(NULL));
    return 1;
  }
  int rc = 1;
  lua_pushstring(L, argv[1]);
  lua_setglobal(L, "checkpoint");
  if (lutorch_dostring(L, SETUP, "=classify.setup") != LUTORCH_OK) {
    fprintf(stderr, "classify: loading %s: %s\n", argv[1], lutorch_errmsg(L));
    goto done;
  }

  /* classify(images): the images go in without a copy (the state may keep the tensor until it
     is collected: `images` is freed after lutorch_close) */
  int64_t sizes[3] = {n, SIDE, SIDE};
  lua_getglobal(L, "classify");
  if (lutorch_push_tensor_wrap(L, images, 3, sizes, NULL, LUTORCH_UINT8, lutorch_cpu(0), NULL, NULL) != LUTORCH_OK ||
      lutorch_pcall(L, 1, 1) != LUTORCH_OK) {
    fprintf(stderr, "classify: %s\n", lutorch_errmsg(L));
    lua_settop(L, 0);
    goto done;
  }
  lutorch_tensor pred;
  if (lutorch_get_tensor(L, -1, &pred) != LUTORCH_OK) {
    fprintf(stderr, "classify: %s\n", lutorch_errmsg(L));
    goto done;
  }
  lua_pop(L, 1);
  if (pred.dtype != LUTORCH_INT32 || pred.numel != n) {
    fprintf(stderr, "classify: unexpected result (%s, %lld values)\n", lutorch_dtype_name(pred.dtype),
            (long long)pred.numel);
  } else {
    const int32_t *cls = pred.data;
    long correct = 0;
    for (long i = 0; i < n; i++) {
      int p = cls[i] - 1; /* torch's classes are 1-based */
      int ok = p == labels[i];
      correct += ok;
      printf("image %ld: %s (label %s)%s\n", i + 1, p >= 0 && p < 10 ? CLASSES[p] : "?", CLASSES[labels[i] % 10],
             ok ? "" : " wrong");
    }
    printf("accuracy: %ld/%ld\n", correct, n);
    rc = 0;
  }
  lutorch_tensor_release(&pred);
done:
  lutorch_close(L);
  free(images);
  free(labels);
  return rc;
}
