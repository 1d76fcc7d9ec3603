"""C sources written next to CasADi's generated code: the call/batch wrapper (``*_api.c/.h``), an
example ``main.c`` that needs no Python, and a Makefile.

For a generated function ``F`` (``<prefix>_<algorithm>``) the wrapper exports

* ``int F_call(void **ctx)``: ``ctx`` holds ``F_SZ_ARG`` input pointers, ``F_SZ_RES`` output
  pointers, then the ``iw`` and ``w`` work pointers, then the owner thread (``NULL``, or the
  value of ``<prefix>_symdyn_thread_id()`` in the one thread allowed to use this context: a call
  from any other thread returns -3 and touches nothing; the Python loader uses this to give each
  thread its own buffers at no cost to the owner's calls). Returns 0, or ``k + 1`` when input ``k``
  holds NaN or inf (nothing is evaluated then), ``-100 - j`` when quaternion ``j`` of ``q``
  (``q[off_j:off_j + 4]``, spherical and floating joints) is not a unit quaternion
  (``|norm - 1| > 1e-6``, the check of :func:`symdyn.rnea`; nothing is evaluated), or -1 when
  ``F`` fails.
* ``int F_call_inputs(const double *q, ..., void **ctx)``: the same with the inputs as arguments
  (the Python fast path passes the inputs' bytes here: cheaper than copying into buffers).
* ``int F_batch(const double *const *in, double *const *out, long long n, int nthreads,
  long long *bad)``: evaluates ``n`` states stored contiguously (state ``i`` of input ``k`` at
  ``in[k] + i * size_k``, of output ``k`` at ``out[k] + i * size_k``), over ``nthreads`` POSIX
  threads. States with NaN/inf inputs or a non-unit quaternion get NaN outputs; ``bad[0]`` is
  the first state with NaN/inf inputs, ``bad[1]`` the first with a non-unit quaternion (or -1).
  Returns 0, 2 (some state had a non-unit quaternion), 1 (some state had NaN/inf inputs), -1
  (``F`` failed) or -2 (out of memory). Safe to call from several threads at once (each call
  allocates its own work buffers). Threads are detached POSIX threads that take chunks of
  states from a shared counter; the call returns once every state is done, without waiting for
  helpers that have not started by then (they find nothing left, touch no array and exit: keep
  the library loaded, as ctypes does). Without POSIX threads or GCC/clang atomics (or with
  ``-DSYMDYN_NO_THREADS``) the states run on the calling thread.
* ``int F_batch_write(in, out, n, nthreads, int stream, bad)``: the same with the way outputs
  are written chosen: ``stream`` 1 streams them, 0 writes them in place, -1 (what ``F_batch``
  does) streams when the outputs exceed ``SYMDYN_STREAM_MIN_BYTES`` (1 MiB) per thread.
* ``long long F_symdyn_size_in(int k)`` / ``F_symdyn_size_out(int k)``: the number of doubles
  of input / output ``k`` the wrappers read / write (-1 out of range). The Python loader takes
  its buffer sizes from these (and from CasADi's ``F_sparsity_in/out``), never from the
  manifest, which is a file anyone can edit.

How outputs are written (the batch section of ``experiments/bench_fastpath.py`` measures each
choice with a C driver; ``reports/fastpath.md`` has the table):

* *in place*: ``F`` writes each state's outputs straight into ``out``, in its evaluation order
  (nv x nv matrices in the tree-sweep order of :mod:`symdyn.codegen.emit_order`, scattered over
  the state's block). Free while ``out`` sits in the caches; on a cold ``out`` every first
  touch of a line is a read for ownership from memory, scattered so that no prefetcher helps.
* *streamed*: ``F`` writes into a scratch block per thread (in L1), then the state's outputs go
  out in order through a line writer: every 64-byte line that lies wholly in the thread's range
  of states is written once with non-temporal stores, assembled across state boundaries when a
  state's block does not start or end on a line (a state's block is rarely line-aligned); only
  the two partial lines at the ends of a range, which a neighbouring range shares, get ordinary
  stores. Streaming whole lines avoids the partial-line flushes that per-state streaming stores
  leave at every state boundary.
* the automatic rule: outputs of more than 1 MiB per thread (a typical L2) stream; smaller ones,
  which a reused ``out`` keeps in cache, are written in place (there in-place writes win, and
  from a few MiB on streaming is as fast or faster and never pays the cold-cache penalty).
* threads take chunks of states from a shared counter (chunks of about 256 KiB of outputs,
  at least 8 chunks a thread), so that a thread slowed by other jobs on a shared machine does
  less of the work instead of holding up the batch, and the caller does not wait for a helper
  thread that the scheduler has not started yet (helpers are detached, not joined).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

API_VERSION = 6   # 3: quaternion checks (status -100 - j, bad[2] in batch), ctx owner;
                  # 4: F_batch_write (stream / in place), line-streamed outputs, chunked threads;
                  # 5: F_symdyn_size_in / F_symdyn_size_out (the sizes the loader trusts);
                  # 6: vector variants (F_batch_mode, F_symdyn_simd_width)

_API_C_HEAD = r"""/* Generated by symdyn {version}: call and batch wrappers around CasADi-generated functions.
 * Layout: inputs are dense vectors (q: nq, qd/qdd/tau: nv); every output is dense, C order
 * (row-major): M[i*nv + j], Gamma[(i*nv + j)*nv + k] with C[i][j] = sum_k Gamma[i][j][k] qd[k].
 * The NaN/inf checks use isfinite(): do not compile with -ffast-math. */
#include "{prefix}_api.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif
#if !defined(_WIN32)
#include <pthread.h>
#define SYMDYN_HAVE_PTHREAD 1
#endif
#if defined(SYMDYN_HAVE_PTHREAD) && (defined(__GNUC__) || defined(__clang__)) \
    && !defined(SYMDYN_NO_THREADS)
#define SYMDYN_THREADS 1          /* batches over threads (POSIX threads + GCC atomics) */
#endif
#define SYMDYN_MAX_THREADS 256
#define SYMDYN_QUAT_TOL 1e-6      /* |norm - 1| allowed for a unit quaternion (as symdyn.rnea) */
#define SYMDYN_BAD_QUAT (-100)    /* status of quaternion j: SYMDYN_BAD_QUAT - j */
#define SYMDYN_OTHER_THREAD (-3)  /* the context belongs to another thread: nothing done */
#ifdef SYMDYN_HAVE_PTHREAD
#define SYMDYN_SELF() ((void*)(uintptr_t)pthread_self())
#else
#define SYMDYN_SELF() ((void*)0)
#endif
/* F_batch streams the outputs (scratch block per thread, then whole cache lines written with
 * non-temporal stores) when they exceed this many bytes per thread; smaller ones are written in
 * place, where the caches keep a reused output array */
#define SYMDYN_STREAM_MIN_BYTES (1024.0 * 1024)
#define SYMDYN_CHUNK_BYTES (256.0 * 1024)  /* outputs per chunk of states taken by a thread */
/* vector batches stream an output of more entries than this a state in pieces of this many,
 * each piece transposed (in L1) and written out through one line writer per state */
#define SYMDYN_VPIECE 512
#define SYMDYN_LINE 64                     /* cache line (bytes) */
#define SYMDYN_LINE_N (SYMDYN_LINE / (int)sizeof(casadi_real))

typedef int (*symdyn_fn)(const casadi_real**, casadi_real**, casadi_int*, casadi_real*, int);
/* a vector variant (symdyn/codegen/simd.py): f evaluates w states stored state-minor (entry j of
 * an input or output block: w consecutive doubles), with sz_w() doubles of work that prepare()
 * initializes once; zeros: 1 when f leaves its outputs' structural zeros unwritten (the
 * recursive form), whose output blocks the wrapper then zeroes once per thread; cpu: its index
 * in symdyn_cpu_has */
typedef void (*symdyn_vfn)(const double* const*, double* const*, double*);
typedef struct {{
  symdyn_vfn f;
  void (*prepare)(double*);
  long long (*sz_w)(void);
  int w, cpu, zeros;
  int (*pack)(const double*, long long, double*, int);      /* rows of m states -> block;
                                                              0: some entry is NaN or inf */
  void (*unpack)(const double*, long long, double*, int);   /* block -> rows of m states */
}} symdyn_vec;
{simd_io}
typedef struct {{
  symdyn_fn f;
  int n_in, n_out, sz_arg, sz_res;
  long long sz_iw, sz_w;
  const long long *nin, *nout;
  int qin, nquat;              /* index of input q (-1: none), number of quaternions in q */
  const long long *quat;       /* their offsets in q: q[quat[j] .. quat[j] + 3] = (x, y, z, w) */
  const symdyn_vec* vec;       /* vector variants, widest first (n_vec of them) */
  int n_vec;
}} symdyn_desc;

/* 1 when the CPU (and OS) runs vector target t of symdyn_cpu_has' list */
static int symdyn_cpu_has(int t) {{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static int known[{n_targets}];   /* 0: not asked yet, 1: yes, -1: no (benign races) */
  if (t < 0 || t >= {n_targets}) return 0;
  if (!known[t]) {{
    __builtin_cpu_init();
    switch (t) {{
{cpu_cases}
      default: known[t] = -1;
    }}
  }}
  return known[t] > 0;
#else
  (void)t;
  return 0;
#endif
}}

/* the variant a batch uses: the widest the CPU runs, or NULL (scalar loop) */
static const symdyn_vec* symdyn_pick(const symdyn_desc* d) {{
  int k;
  for (k = 0; k < d->n_vec; ++k) if (symdyn_cpu_has(d->vec[k].cpu)) return d->vec + k;
  return 0;
}}

/* -1 when every quaternion of q has unit norm (to SYMDYN_QUAT_TOL), else the first bad one */
static int symdyn_bad_quaternion(const symdyn_desc* d, const casadi_real* q) {{
  int j;
  for (j = 0; j < d->nquat; ++j) {{
    const casadi_real* e = q + d->quat[j];
    double n = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]);
    if (!(fabs(n - 1.0) <= SYMDYN_QUAT_TOL)) return j;
  }}
  return -1;
}}

static int symdyn_nonfinite(const casadi_real* x, long long n) {{
  long long i;
  for (i = 0; i < n; ++i) if (!isfinite(x[i])) return 1;
  return 0;
}}

/* one whole cache line out with non-temporal stores (dst line-aligned): batch outputs are
 * written once and not read back soon, so they need not displace the working set, nor be read
 * from memory before they are written */
static void symdyn_line_out(casadi_real* dst, const casadi_real* src) {{
#if defined(__AVX__)
  _mm256_stream_pd(dst, _mm256_loadu_pd(src));
  _mm256_stream_pd(dst + 4, _mm256_loadu_pd(src + 4));
#elif defined(__SSE2__)
  _mm_stream_pd(dst, _mm_loadu_pd(src));
  _mm_stream_pd(dst + 2, _mm_loadu_pd(src + 2));
  _mm_stream_pd(dst + 4, _mm_loadu_pd(src + 4));
  _mm_stream_pd(dst + 6, _mm_loadu_pd(src + 6));
#else
  memcpy(dst, src, SYMDYN_LINE);
#endif
}}

/* Writes one output of a range of consecutive states, in order. The lines that lie wholly in
 * [lo, hi) (the range's own lines) are written whole with non-temporal stores, assembled in
 * line[] where a state's block starts or ends inside a line; the partial lines at the ends of
 * the range, which neighbouring ranges (other threads) share, get ordinary stores. */
typedef struct {{
  casadi_real line[SYMDYN_LINE_N];
  casadi_real *p, *lo, *hi;    /* next element; the range's own lines [lo, hi) */
}} symdyn_writer;

static void symdyn_writer_start(symdyn_writer* s, casadi_real* a, casadi_real* z) {{
  uintptr_t lo = ((uintptr_t)a + SYMDYN_LINE - 1) & ~(uintptr_t)(SYMDYN_LINE - 1);
  uintptr_t hi = (uintptr_t)z & ~(uintptr_t)(SYMDYN_LINE - 1);
  s->p = a;
  if (((uintptr_t)a % sizeof(casadi_real)) || hi <= lo) {{
    s->lo = s->hi = a;         /* misaligned array or no whole line: ordinary stores */
  }} else {{
    s->lo = (casadi_real*)lo;
    s->hi = (casadi_real*)hi;
  }}
}}

static void symdyn_writer_put(symdyn_writer* s, const casadi_real* src, long long n) {{
  casadi_real *p = s->p, *end = p + n;
  while (p < end) {{
    int j;
    if (p < s->lo || p >= s->hi) {{ *p++ = *src++; continue; }}
    j = (int)(((uintptr_t)p % SYMDYN_LINE) / sizeof(casadi_real));
    if (j == 0 && end - p >= SYMDYN_LINE_N) {{
      long long m = (end - p) / SYMDYN_LINE_N, mh = (s->hi - p) / SYMDYN_LINE_N;
      for (m = m < mh ? m : mh; m > 0; --m, p += SYMDYN_LINE_N, src += SYMDYN_LINE_N)
        symdyn_line_out(p, src);
      continue;
    }}
    s->line[j] = *src++;
    ++p;
    if (j == SYMDYN_LINE_N - 1) symdyn_line_out(p - SYMDYN_LINE_N, s->line);
  }}
  s->p = p;
}}

static int symdyn_call(const symdyn_desc* d, void** ctx) {{
  const casadi_real** arg = (const casadi_real**)ctx;
  casadi_real** res = (casadi_real**)(ctx + d->sz_arg);
  casadi_int* iw = (casadi_int*)ctx[d->sz_arg + d->sz_res];
  casadi_real* w = (casadi_real*)ctx[d->sz_arg + d->sz_res + 1];
  void* owner = ctx[d->sz_arg + d->sz_res + 2];
  int k;
  if (owner && owner != SYMDYN_SELF()) return SYMDYN_OTHER_THREAD;
  for (k = 0; k < d->n_in; ++k) if (symdyn_nonfinite(arg[k], d->nin[k])) return k + 1;
  if (d->nquat && (k = symdyn_bad_quaternion(d, arg[d->qin])) >= 0) return SYMDYN_BAD_QUAT - k;
  return d->f(arg, res, iw, w, 0) ? -1 : 0;
}}

/* The work of one batch call, shared by its threads. It lives on the heap with a reference
 * count: the caller returns once every state is done, without waiting for helper threads that
 * have not started yet (with the cores shared, one can wait a whole scheduler time slice to run);
 * such a late helper finds no state left, touches no array and frees the work if it is the
 * last reference. */
typedef struct {{
  const symdyn_desc* d;
  const symdyn_vec* v;         /* the vector variant used, or NULL */
  const casadi_real* const* in;
  casadi_real* const* out;
  long long n, chunk;          /* states, states per chunk */
  long long next;              /* first state no thread has taken (atomic) */
  long long done;              /* states finished */
  long long bad, badq;         /* first states with NaN/inf inputs, with a bad quaternion */
  int status, stream, refs, failed, threaded;
#ifdef SYMDYN_THREADS
  pthread_mutex_t mu;          /* guards done, bad, badq, status, refs (when threaded) */
  pthread_cond_t cv;           /* signalled when done reaches n */
#endif
}} symdyn_work;

#ifdef SYMDYN_THREADS
#define SYMDYN_LOCK(W) do {{ if ((W)->threaded) pthread_mutex_lock(&(W)->mu); }} while (0)
#define SYMDYN_UNLOCK(W) do {{ if ((W)->threaded) pthread_mutex_unlock(&(W)->mu); }} while (0)
#else
#define SYMDYN_LOCK(W) ((void)0)
#define SYMDYN_UNLOCK(W) ((void)0)
#endif

/* per-thread buffers: CasADi's arg/res/iw/w, the scratch block of one state's outputs and one
 * line writer per output */
typedef struct {{
  const casadi_real** arg;
  casadi_real** res;
  casadi_int* iw;
  casadi_real* w;
  casadi_real* scratch;
  symdyn_writer* wr;
  /* vector variant: blocks of W states (state-minor) of every input and output, its work */
  double* vblock;
  double* vw;
  double* vrows;               /* streamed outputs: rows of one block of states (or pieces) */
  const double** varg;
  double** vres;
}} symdyn_buffers;

static void symdyn_buffers_free(symdyn_buffers* b) {{
  free((void*)b->arg); free(b->res); free(b->iw); free(b->w); free(b->scratch); free(b->wr);
  free(b->vblock); free(b->vw); free(b->vrows); free((void*)b->varg); free(b->vres);
}}

/* n doubles aligned to 64 bytes (vector loads), or NULL */
static double* symdyn_aligned(long long n) {{
  void* p = 0;
  if (posix_memalign(&p, 64, sizeof(double) * (size_t)(n > 0 ? n : 1))) return 0;
  return (double*)p;
}}

static int symdyn_buffers_alloc(const symdyn_desc* d, const symdyn_vec* v, symdyn_buffers* b) {{
  long long n_all = 0, n_vin = 0, n_big = 0, off;
  int k;
  memset(b, 0, sizeof(*b));
  for (k = 0; k < d->n_out; ++k) {{
    n_all += d->nout[k];
    if (d->nout[k] > n_big) n_big = d->nout[k];
  }}
  for (k = 0; k < d->n_in; ++k) n_vin += d->nin[k];
  b->arg = (const casadi_real**)calloc((size_t)d->sz_arg + 1, sizeof(void*));
  b->res = (casadi_real**)calloc((size_t)d->sz_res + 1, sizeof(void*));
  b->iw = (casadi_int*)malloc(sizeof(casadi_int) * (size_t)(d->sz_iw + 1));
  b->w = (casadi_real*)malloc(sizeof(casadi_real) * (size_t)(d->sz_w + 1));
  b->scratch = (casadi_real*)malloc(sizeof(casadi_real) * (size_t)(n_all + 1));
  b->wr = (symdyn_writer*)malloc(sizeof(symdyn_writer) * (size_t)(d->n_out + 1));
  if (!(b->arg && b->res && b->iw && b->w && b->scratch && b->wr)) {{
    symdyn_buffers_free(b);
    return -1;
  }}
  if (!v) return 0;
  b->vblock = symdyn_aligned((n_vin + n_all) * v->w);
  b->vw = symdyn_aligned(v->sz_w());
  b->vrows = symdyn_aligned((n_big < SYMDYN_VPIECE ? n_big : SYMDYN_VPIECE) * v->w);
  b->varg = (const double**)calloc((size_t)d->n_in + 1, sizeof(void*));
  b->vres = (double**)calloc((size_t)d->n_out + 1, sizeof(void*));
  if (!(b->vblock && b->vw && b->vrows && b->varg && b->vres)) {{
    symdyn_buffers_free(b);
    return -1;
  }}
  for (k = 0, off = 0; k < d->n_in; off += d->nin[k] * v->w, ++k) b->varg[k] = b->vblock + off;
  for (k = 0; k < d->n_out; off += d->nout[k] * v->w, ++k) b->vres[k] = b->vblock + off;
  if (v->zeros && d->n_out) memset(b->vres[0], 0, sizeof(double) * (size_t)(n_all * v->w));
  v->prepare(b->vw);
  return 0;
}}

/* 1 when state i's inputs are finite and its quaternions of unit norm; else records it */
static int symdyn_state_ok(const symdyn_desc* d, const casadi_real* const* in, long long i,
                           long long* bad, long long* badq) {{
  int k, ok = 1;
  for (k = 0; k < d->n_in; ++k)
    if (symdyn_nonfinite(in[k] + i * d->nin[k], d->nin[k])) ok = 0;
  if (ok && d->nquat && symdyn_bad_quaternion(d, in[d->qin] + i * d->nin[d->qin]) >= 0) {{
    if (*badq < 0) *badq = i;
    return 0;
  }}
  if (!ok && *bad < 0) *bad = i;
  return ok;
}}

/* states [lo, hi) through the vector variant, W at a time: the inputs of each block of states
 * (consecutive rows) are transposed into state-minor blocks (a short last block repeats its last
 * state), evaluated at once, and the outputs transposed back into the block's rows (in place,
 * or through the line writers when streaming); states with bad inputs get NaN outputs as in the
 * scalar loop */
static void symdyn_range_vec(const symdyn_work* W, symdyn_buffers* b, long long lo, long long hi,
                             long long* bad, long long* badq) {{
  const symdyn_desc* d = W->d;
  const symdyn_vec* v = W->v;
  long long i, j;
  int k, l, ok[64], all;
  for (i = lo; i < hi; i += v->w) {{
    const int m = hi - i < v->w ? (int)(hi - i) : v->w;
    for (k = 0, all = 1; k < d->n_in; ++k)
      all &= v->pack(W->in[k] + i * d->nin[k], d->nin[k], (double*)b->varg[k], m);
    if (!all) {{               /* some state is not finite: which (and their quaternions) */
      for (l = 0, all = 1; l < m; ++l) all &= ok[l] = symdyn_state_ok(d, W->in, i + l, bad, badq);
    }} else if (d->nquat) {{    /* all finite: the quaternions of each state */
      for (l = 0; l < m; ++l) {{
        ok[l] = symdyn_bad_quaternion(d, W->in[d->qin] + (i + l) * d->nin[d->qin]) < 0;
        if (!ok[l] && *badq < 0) *badq = i + l;
        all &= ok[l];
      }}
    }}
    v->f(b->varg, b->vres, b->vw);
    for (k = 0; k < d->n_out; ++k) {{
      const long long n = d->nout[k];
      if (W->stream && n > SYMDYN_VPIECE) {{
        /* large outputs: the block's rows would leave the caches before they are streamed;
         * transpose pieces instead, each state's row going out through a writer of its own */
        symdyn_writer lw[64];
        long long j0, len;
        for (l = 0; l < m; ++l)
          symdyn_writer_start(lw + l, W->out[k] + (i + l) * n, W->out[k] + (i + l + 1) * n);
        for (j0 = 0; j0 < n; j0 += SYMDYN_VPIECE) {{
          len = n - j0 < SYMDYN_VPIECE ? n - j0 : SYMDYN_VPIECE;
          v->unpack(b->vres[k] + j0 * v->w, len, b->vrows, m);
          for (l = 0; l < m; ++l) {{
            if (!all && !ok[l]) for (j = 0; j < len; ++j) b->vrows[l * len + j] = NAN;
            symdyn_writer_put(lw + l, b->vrows + l * len, len);
          }}
        }}
        continue;
      }}
      {{
        casadi_real* dst = W->stream ? b->vrows : W->out[k] + i * n;
        v->unpack(b->vres[k], n, dst, m);
        if (!all) for (l = 0; l < m; ++l) if (!ok[l]) for (j = 0; j < n; ++j) dst[l * n + j] = NAN;
        if (W->stream) symdyn_writer_put(b->wr + k, b->vrows, m * n);
      }}
    }}
  }}
}}

/* evaluates states [lo, hi): 0, or -1 when F failed; *bad and *badq get the first states of the
 * range with NaN/inf inputs and with a non-unit quaternion (-1: none) */
static int symdyn_range(const symdyn_work* W, symdyn_buffers* b, long long lo, long long hi,
                        long long* bad, long long* badq) {{
  const symdyn_desc* d = W->d;
  long long i, j, off;
  int k;
  /* streamed: outputs are evaluated into the scratch block (in cache) and written out in
   * order (the generated code writes them in its evaluation order, scattered over a state) */
  for (k = 0, off = 0; k < d->n_out; off += d->nout[k], ++k) {{
    b->res[k] = b->scratch + off;
    if (W->stream)
      symdyn_writer_start(b->wr + k, W->out[k] + lo * d->nout[k], W->out[k] + hi * d->nout[k]);
  }}
  if (W->v) {{
    symdyn_range_vec(W, b, lo, hi, bad, badq);
    return 0;
  }}
  for (i = lo; i < hi; ++i) {{
    int ok = 1;
    if (!W->stream)
      for (k = 0; k < d->n_out; ++k) b->res[k] = W->out[k] + i * d->nout[k];
    for (k = 0; k < d->n_in; ++k) {{
      b->arg[k] = W->in[k] + i * d->nin[k];
      if (symdyn_nonfinite(b->arg[k], d->nin[k])) ok = 0;
    }}
    if (ok && d->nquat && symdyn_bad_quaternion(d, b->arg[d->qin]) >= 0) {{
      ok = 0;
      if (*badq < 0) *badq = i;
    }} else if (!ok && *bad < 0) {{
      *bad = i;
    }}
    if (!ok) {{
      for (k = 0; k < d->n_out; ++k)
        for (j = 0; j < d->nout[k]; ++j) b->res[k][j] = NAN;
    }} else if (d->f(b->arg, b->res, b->iw, b->w, 0)) {{
      return -1;
    }}
    if (W->stream)
      for (k = 0; k < d->n_out; ++k) symdyn_writer_put(b->wr + k, b->res[k], d->nout[k]);
  }}
  return 0;
}}

/* takes chunks of states until none is left */
static void symdyn_run(symdyn_work* W) {{
  symdyn_buffers b;
  long long lo, hi, bad, badq;
  int allocated = 0, status;
  for (;;) {{
#ifdef SYMDYN_THREADS
    lo = __atomic_fetch_add(&W->next, W->chunk, __ATOMIC_RELAXED);
#else
    lo = W->next;
    W->next += W->chunk;
#endif
    if (lo >= W->n) break;
    hi = lo + W->chunk < W->n ? lo + W->chunk : W->n;
    if (!allocated) allocated = symdyn_buffers_alloc(W->d, W->v, &b) ? -1 : 1;
    bad = badq = -1;
    status = 0;
    if (allocated < 0) {{
      status = -2;
#ifdef SYMDYN_THREADS
    }} else if (__atomic_load_n(&W->failed, __ATOMIC_RELAXED)) {{
#else
    }} else if (W->failed) {{
#endif
      status = 0;              /* F failed elsewhere: the batch fails, the rest is skipped */
    }} else if (symdyn_range(W, &b, lo, hi, &bad, &badq)) {{
      status = -1;
#ifdef SYMDYN_THREADS
      __atomic_store_n(&W->failed, 1, __ATOMIC_RELAXED);
#else
      W->failed = 1;
#endif
    }}
#if defined(__SSE2__)
    _mm_sfence();              /* the streamed outputs are visible before they are reported */
#endif
    SYMDYN_LOCK(W);
    if (status < W->status) W->status = status;
    if (bad >= 0 && (W->bad < 0 || bad < W->bad)) W->bad = bad;
    if (badq >= 0 && (W->badq < 0 || badq < W->badq)) W->badq = badq;
    W->done += hi - lo;
#ifdef SYMDYN_THREADS
    if (W->threaded && W->done >= W->n) pthread_cond_signal(&W->cv);
#endif
    SYMDYN_UNLOCK(W);
  }}
  if (allocated > 0) symdyn_buffers_free(&b);
}}

/* drops a reference to W; the last one frees it */
static void symdyn_release(symdyn_work* W) {{
  int last;
  SYMDYN_LOCK(W);
  last = --W->refs == 0;
  SYMDYN_UNLOCK(W);
  if (!last) return;
#ifdef SYMDYN_THREADS
  if (W->threaded) {{
    pthread_mutex_destroy(&W->mu);
    pthread_cond_destroy(&W->cv);
  }}
#endif
  free(W);
}}

#ifdef SYMDYN_THREADS
static void* symdyn_helper(void* p) {{
  symdyn_work* W = (symdyn_work*)p;
  symdyn_run(W);
  symdyn_release(W);
  return 0;
}}
#endif

static int symdyn_batch(const symdyn_desc* d, const casadi_real* const* in,
                        casadi_real* const* out, long long n, int nthreads, int stream,
                        int simd, long long* bad) {{
  symdyn_work* W;
  const symdyn_vec* v;
  long long n_out_all = 0, chunk;
  double state_bytes;
  int k, status;
  if (bad) bad[0] = bad[1] = -1;
  if (n <= 0) return 0;
  if (nthreads < 1) nthreads = 1;
  if (nthreads > SYMDYN_MAX_THREADS) nthreads = SYMDYN_MAX_THREADS;
#ifndef SYMDYN_THREADS
  nthreads = 1;                /* no POSIX threads or no atomics: one thread */
#endif
  if ((long long)nthreads > n) nthreads = (int)n;
  for (k = 0; k < d->n_out; ++k) n_out_all += d->nout[k];
  state_bytes = (double)n_out_all * sizeof(casadi_real);
  if (stream < 0) stream = (double)n * state_bytes / nthreads > SYMDYN_STREAM_MIN_BYTES;
  /* one range for one thread; else chunks of ~SYMDYN_CHUNK_BYTES of outputs (few partial
   * lines at their ends), at least 8 a thread */
  v = simd ? symdyn_pick(d) : 0;
  if (v && n < v->w) v = 0;    /* fewer states than a block: one scalar call each costs less */
  chunk = n;
  if (nthreads > 1) {{
    long long most = (n + 8LL * nthreads - 1) / (8LL * nthreads);
    chunk = (long long)(SYMDYN_CHUNK_BYTES / (state_bytes > 1.0 ? state_bytes : 1.0)) + 1;
    if (chunk > most) chunk = most;
    if (v) chunk = (chunk + v->w - 1) / v->w * v->w;   /* whole vector blocks */
    if (chunk < 1) chunk = 1;
  }}
  W = (symdyn_work*)calloc(1, sizeof(symdyn_work));
  if (!W) return -2;
  W->d = d; W->v = v; W->in = in; W->out = out; W->n = n; W->chunk = chunk;
  W->bad = W->badq = -1; W->stream = stream != 0; W->refs = 1;
#ifdef SYMDYN_THREADS
  if (nthreads > 1 && pthread_mutex_init(&W->mu, 0) == 0) {{
    if (pthread_cond_init(&W->cv, 0) == 0) {{
      pthread_attr_t attr;
      int t, detached = pthread_attr_init(&attr) == 0
                        && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0;
      W->threaded = 1;
      for (t = 1; detached && t < nthreads; ++t) {{
        pthread_t tid;
        SYMDYN_LOCK(W);
        ++W->refs;
        SYMDYN_UNLOCK(W);
        if (pthread_create(&tid, &attr, symdyn_helper, W) != 0) {{
          SYMDYN_LOCK(W);
          --W->refs;           /* could not start it: the other threads do its share */
          SYMDYN_UNLOCK(W);
          break;
        }}
      }}
      if (detached) pthread_attr_destroy(&attr);
    }} else {{
      pthread_mutex_destroy(&W->mu);
    }}
  }}
#endif
  symdyn_run(W);
  SYMDYN_LOCK(W);
#ifdef SYMDYN_THREADS
  while (W->threaded && W->done < W->n) pthread_cond_wait(&W->cv, &W->mu);
#endif
  status = W->status;
  if (bad) {{ bad[0] = W->bad; bad[1] = W->badq; }}
  if (!status) status = W->badq >= 0 ? 2 : W->bad >= 0 ? 1 : 0;
  SYMDYN_UNLOCK(W);
  symdyn_release(W);
  return status;
}}

int {prefix}_symdyn_api_version(void) {{ return {api_version}; }}
/* the width of the vector variant a batch of F uses on this CPU (1: the scalar loop) */
static int symdyn_simd_width(const symdyn_desc* d) {{
  const symdyn_vec* v = symdyn_pick(d);
  return v ? v->w : 1;
}}
/* the owner value of a call context for the calling thread (0 where threads are unknown) */
void* {prefix}_symdyn_thread_id(void) {{ return SYMDYN_SELF(); }}
{quat_table}"""

_API_C_FUNC = r"""
/* {fname}: {signature} */
static const long long {fname}_nin[{n_in}] = {{{nin}}};
static const long long {fname}_nout[{n_out}] = {{{nout}}};
{vec_decls}static const symdyn_desc {fname}_desc = {{{fname}, {n_in}, {n_out}, {fname}_SZ_ARG, {fname}_SZ_RES,
  {fname}_SZ_IW, {fname}_SZ_W, {fname}_nin, {fname}_nout, {qin}, {nquat}, {quat}, {vec}, {n_vec}}};
int {fname}_call(void** ctx) {{ return symdyn_call(&{fname}_desc, ctx); }}
int {fname}_call_inputs({in_params}, void** ctx) {{
{in_sets}
  return symdyn_call(&{fname}_desc, ctx);
}}
int {fname}_batch(const casadi_real* const* in, casadi_real* const* out, long long n,
                  int nthreads, long long* bad) {{
  return symdyn_batch(&{fname}_desc, in, out, n, nthreads, -1, 1, bad);
}}
int {fname}_batch_write(const casadi_real* const* in, casadi_real* const* out, long long n,
                        int nthreads, int stream, long long* bad) {{
  return symdyn_batch(&{fname}_desc, in, out, n, nthreads, stream, 1, bad);
}}
int {fname}_batch_mode(const casadi_real* const* in, casadi_real* const* out, long long n,
                       int nthreads, int stream, int simd, long long* bad) {{
  return symdyn_batch(&{fname}_desc, in, out, n, nthreads, stream, simd, bad);
}}
int {fname}_symdyn_simd_width(void) {{ return symdyn_simd_width(&{fname}_desc); }}
long long {fname}_symdyn_size_in(int k) {{ return k >= 0 && k < {n_in} ? {fname}_nin[k] : -1; }}
long long {fname}_symdyn_size_out(int k) {{ return k >= 0 && k < {n_out} ? {fname}_nout[k] : -1; }}
"""

_API_H = r"""/* Generated by symdyn {version}: call and batch wrappers ({prefix}_api.c).
 * Model {model_repr}
 * Inputs are dense vectors (q: nq = {nq}, qd/qdd/tau: nv = {nv}); outputs are dense, C order
 * (row-major): M[i*nv + j], Gamma[(i*nv + j)*nv + k] with C[i][j] = sum_k Gamma[i][j][k] qd[k].
 * Spatial vectors are [angular; linear]; quaternions (x, y, z, w).
 *
 * int F(const casadi_real** arg, casadi_real** res, casadi_int* iw, casadi_real* w, int mem)
 *     CasADi's entry point (see F_work / F_SZ_* for the sizes of arg, res, iw and w).
 * int F_call(void** ctx)   ctx = {{arg[F_SZ_ARG], res[F_SZ_RES], iw, w, owner}} (owner: NULL,
 *     or {prefix}_symdyn_thread_id() of the only thread allowed to use ctx; -3 from any other
 *     thread, nothing done); returns 0, k+1 if
 *     input k holds NaN/inf, -100-j if quaternion j of q is not of unit norm (|n - 1| > 1e-6;
 *     quaternion offsets in q: {quat_offsets}) (nothing evaluated then), -1 on failure.
 * int F_call_inputs(in_0, ..., ctx)   the same with the inputs passed as arguments (they are
 *     stored into ctx[0..n_in-1]).
 * int F_batch(in, out, n, nthreads, bad)   n states stored contiguously per input/output;
 *     returns 0, 2 if some state had a non-unit quaternion (bad[1] = first such state), else 1
 *     if some state had NaN/inf inputs (bad[0] = first such state); such states get NaN
 *     outputs; -1 on failure, -2 out of memory. bad points to two long longs. Outputs of more
 *     than 1 MiB per thread are streamed (whole cache lines, non-temporal stores), smaller ones
 *     written in place.
 * int F_batch_write(in, out, n, nthreads, stream, bad)   the same; stream = 1: always stream
 *     the outputs, 0: write them in place (they stay in cache), -1: as F_batch.
 * int F_batch_mode(in, out, n, nthreads, stream, simd, bad)   the same; simd = 0: the scalar
 *     loop, 1: the widest vector variant this CPU runs (what F_batch does; W states per
 *     instruction, see symdyn/codegen/simd.py), the scalar loop where there is none and for
 *     batches of fewer than W states.
 * int F_symdyn_simd_width(void)   the states per instruction of F_batch on this CPU (1: scalar).
 * long long F_symdyn_size_in(int k), F_symdyn_size_out(int k)   the number of doubles of input
 *     / output k that the wrappers read / write (-1 when k is out of range).
 */
#ifndef {guard}
#define {guard}
{includes}
#ifdef __cplusplus
extern "C" {{
#endif
int {prefix}_symdyn_api_version(void);
void* {prefix}_symdyn_thread_id(void);
{decls}
#ifdef __cplusplus
}}
#endif
#endif
"""

_API_H_DECL = """/* {fname}: {signature} */
int {fname}_call(void** ctx);
int {fname}_call_inputs({in_params}, void** ctx);
int {fname}_batch(const casadi_real* const* in, casadi_real* const* out, long long n,
                  int nthreads, long long* bad);
int {fname}_batch_write(const casadi_real* const* in, casadi_real* const* out, long long n,
                        int nthreads, int stream, long long* bad);
int {fname}_batch_mode(const casadi_real* const* in, casadi_real* const* out, long long n,
                       int nthreads, int stream, int simd, long long* bad);
int {fname}_symdyn_simd_width(void);
long long {fname}_symdyn_size_in(int k);
long long {fname}_symdyn_size_out(int k);"""


def _signature(fd) -> str:
    ins = ", ".join(f"{n}[{s}]" for n, s in zip(fd["input_names"], fd["input_sizes"]))
    outs = ", ".join(f"{n}{list(s)}" for n, s in zip(fd["output_names"], fd["output_shapes"]))
    return f"({ins}) -> ({outs})"


def api_sources(prefix: str, functions: Sequence[dict], model, version: str,
                quaternions: Sequence[dict] = ()) -> tuple[str, str]:
    """(api.h, api.c) for the generated functions; ``functions`` are metadata dicts with keys
    fname, header, input_names, input_sizes, output_names, output_shapes; ``quaternions`` are
    ``{"offset", "body"}`` of the unit quaternions in q (checked before evaluation)."""
    offsets = [int(qd["offset"]) for qd in quaternions]
    includes = "\n".join(f'#include "{fd["header"]}"' for fd in functions)
    decls = "\n".join(_API_H_DECL.format(
        fname=fd["fname"], signature=_signature(fd),
        in_params=", ".join(f"const casadi_real* {n}" for n in fd["input_names"]))
        for fd in functions)
    guard = f"{prefix.upper()}_SYMDYN_API_H"
    header = _API_H.format(version=version, prefix=prefix, model_repr=_c_comment(repr(model)),
                           nq=model.nq, nv=model.nv, guard=guard, includes=includes, decls=decls,
                           quat_offsets=", ".join(map(str, offsets)) or "none")
    quat_table = (f"static const long long {prefix}_quat[{len(offsets)}] = "
                  f"{{{', '.join(map(str, offsets))}}};\n" if offsets else "")
    from .simd import TARGETS, io_source

    cpu_cases = "\n".join(
        f"      case {k}: known[{k}] = "
        + " && ".join(f'__builtin_cpu_supports("{c}")' for c in feats) + " ? 1 : -1; break;"
        for k, (_, _, feats, _) in enumerate(TARGETS.values()))
    used = [t for t in TARGETS if any(t in (fd.get("simd") or ()) for fd in functions)]
    body = [_API_C_HEAD.format(version=version, prefix=prefix, api_version=API_VERSION,
                               quat_table=quat_table, n_targets=len(TARGETS), cpu_cases=cpu_cases,
                               simd_io=io_source(used))]
    for fd in functions:
        nout = [int(np.prod(s)) for s in fd["output_shapes"]]
        f, targets = fd["fname"], list(fd.get("simd") or ())
        vec_decls = "".join(
            f"void {f}_{t}(const double* const*, double* const*, double*);\n"
            f"void {f}_{t}_prepare(double*);\nlong long {f}_{t}_sz_w(void);\n" for t in targets)
        if targets:
            vec_decls += (f"static const symdyn_vec {f}_vec[{len(targets)}] = {{"
                          + ", ".join(f"{{{f}_{t}, {f}_{t}_prepare, {f}_{t}_sz_w, "
                                      f"{TARGETS[t][0]}, {list(TARGETS).index(t)}, "
                                      f"{int(fd.get('form') == 'recursive')}, "
                                      f"symdyn_{t}_pack, symdyn_{t}_unpack}}"
                                      for t in targets) + "};\n")
        body.append(_API_C_FUNC.format(
            vec_decls=vec_decls, vec=f"{f}_vec" if targets else "0", n_vec=len(targets),
            fname=fd["fname"], signature=_signature(fd), n_in=len(fd["input_sizes"]),
            n_out=len(nout), nin=", ".join(map(str, fd["input_sizes"])),
            qin=fd["input_names"].index("q") if offsets and "q" in fd["input_names"] else -1,
            nquat=len(offsets) if offsets and "q" in fd["input_names"] else 0,
            quat=f"{prefix}_quat" if offsets and "q" in fd["input_names"] else "0",
            nout=", ".join(map(str, nout)),
            in_params=", ".join(f"const casadi_real* {n}" for n in fd["input_names"]),
            in_sets="\n".join(f"  ctx[{k}] = (void*){n};" for k, n in enumerate(fd["input_names"]))))
    return header, "".join(body)


def _c_comment(text: str) -> str:
    return text.replace("*/", "* /")


def _c_array(values) -> str:
    return ", ".join(repr(float(v)) for v in values)


def library_sources(prefix: str, functions: Sequence[dict]) -> list[str]:
    """The C sources of the library (not ``main.c``): each function's, its vector variants'
    (``fd["simd_source"]``) and its derivatives' when exported (``fd["derivatives"]["source"]``),
    and the wrapper ``<prefix>_api.c``."""
    out = []
    for fd in functions:
        out.append(fd["source"])
        if fd.get("simd_source"):
            out.append(fd["simd_source"])
        if fd.get("derivatives"):
            out.append(fd["derivatives"]["source"])
    return out + [f"{prefix}_api.c"]


def example_command(prefix: str, functions: Sequence[dict]) -> str:
    """The shell command, run in the build directory, that compiles ``main.c`` with the library's
    sources into ``./example`` (the sources named one by one: ``*.c`` would take ``main.c``
    twice)."""
    return (f"cc -O1 -o example main.c {' '.join(library_sources(prefix, functions))} "
            "-lm -lpthread")


def example_main(prefix: str, functions: Sequence[dict], inputs: dict[str, np.ndarray],
                 version: str) -> str:
    """main.c: calls every function once through CasADi's entry point at fixed example inputs and
    prints ``<algorithm> <output> <index> <value>`` lines (values with 17 digits; ``<algorithm>``
    is the function's key, e.g. ``frame_jacobian:panda_hand``). Its comment gives the command
    that builds it (:func:`example_command`)."""
    lines = [f"/* Generated by symdyn {version}: example use of the exported functions, no Python",
             " * needed. Build with the Makefile (make example) or:",
             f" *   {example_command(prefix, functions)}",
             " * Prints '<algorithm> <output> <index> <value>' lines. */",
             f'#include "{prefix}_api.h"', "#include <stdio.h>", "#include <stdlib.h>", ""]
    for name, vals in inputs.items():
        lines.append(f"static const casadi_real in_{name}[{max(1, len(vals))}] = "
                     f"{{{_c_array(vals)}}};")
    lines += ["", "int main(void) {", "  int status = 0;"]
    for fd in functions:
        f = fd["fname"]
        lines += ["  {",
                  f"    const casadi_real* arg[{f}_SZ_ARG + 1] = {{0}};",
                  f"    casadi_real* res[{f}_SZ_RES + 1] = {{0}};",
                  f"    casadi_int* iw = (casadi_int*)malloc(sizeof(casadi_int) * ({f}_SZ_IW + 1));",
                  f"    casadi_real* w = (casadi_real*)malloc(sizeof(casadi_real) * ({f}_SZ_W + 1));"]
        for k, n in enumerate(fd["input_names"]):
            lines.append(f"    arg[{k}] = in_{n};")
        for k, (n, s) in enumerate(zip(fd["output_names"], fd["output_shapes"])):
            lines.append(f"    static casadi_real out_{k}[{int(np.prod(s))}];")
            lines.append(f"    res[{k}] = out_{k};")
        lines.append(f"    if ({f}(arg, res, iw, w, 0)) {{ fprintf(stderr, \"{f} failed\\n\"); "
                     f"status = 1; }}")
        for k, (n, s) in enumerate(zip(fd["output_names"], fd["output_shapes"])):
            size = int(np.prod(s))
            lines.append(f"    for (int i = 0; i < {size}; ++i) "
                         f"printf(\"{fd.get('key', fd['algorithm'])} {n} %d %.17g\\n\", i, out_{k}[i]);")
        lines += ["    free(iw); free(w);", "  }"]
    lines += ["  return status;", "}", ""]
    return "\n".join(lines)


def makefile(prefix: str, sources: Sequence[str], libname: str) -> str:
    """A Makefile building the shared library and the example program."""
    srcs = " ".join(sources)
    return (f"# Generated by symdyn. make: lib{prefix}.so and ./example (no Python needed)\n"
            f"CC ?= cc\nCFLAGS ?= -O2\nSRCS = {srcs}\n\n"
            f"all: {libname} example\n\n"
            f"{libname}: $(SRCS)\n\t$(CC) $(CFLAGS) -fPIC -shared -o $@ $(SRCS) -lm -lpthread\n\n"
            f"example: main.c $(SRCS)\n\t$(CC) $(CFLAGS) -o $@ main.c $(SRCS) -lm -lpthread\n\n"
            f"clean:\n\trm -f {libname} example\n\n.PHONY: all clean\n")
