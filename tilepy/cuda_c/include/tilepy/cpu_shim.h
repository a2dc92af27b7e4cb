// tilepy/cpu_shim.h -- compile tilepy's CUDA C++ with a host C++ compiler.
//
// Two modes, chosen when the library is built (tilepy/launch/cpu.py):
//   fast      (TP_NT == 1): one thread per block, __syncthreads() is a no-op, blocks are spread
//             over worker threads. Warp-level operations cannot run (a compile error says so).
//   faithful  (TP_FAITHFUL, TP_NT = the block's real thread count): every thread of a block is a
//             fiber with deterministic scheduling (tilepy/cpu_fiber.h); __syncthreads() is a real
//             barrier, warp-level operations are emulated from the PTX ISA (tilepy/cpu_warp.h).
// In both modes `__shared__` variables are thread_local storage of the OS worker running the
// block (a worker runs one block at a time, all its fibers on that one OS thread; a block finds
// what the worker's previous block left there, as undefined as on a GPU), and `extern __shared__`
// arrays (rewritten by cpu.py into `tp::cpu::dynamic_smem()`) point at the worker's dynamic
// shared memory, which every block finds filled with 0xff bytes (NaN, -1). CUDA's built-in index
// variables read a thread-local context; the half types are 2-byte structs converted with
// correctly rounded host code.
//
// A launch's state (its lock, error, extents, signal, grid) is `static`: each kernel library has
// its own. (C++ `inline` variables are STB_GNU_UNIQUE symbols with GCC, which the dynamic linker
// merges across libraries even with RTLD_LOCAL: every launch in the process would share one
// lock.) Launches of one library are serialized; launches of different libraries run at once.
//
// The launch machinery (the block loop, fibers and scheduler, the launch lock, the error
// reports: `launch_blocks` and what it calls) does not depend on the kernel. A library is built
// either as one translation unit (the default) or split (TP_SPLIT, launch/cpu.py
// `support_object`): the machinery is compiled once per compiler and flags into an object
// (this header with TP_SPLIT and TP_SUPPORT_TU) that every kernel library of those flags links;
// the kernel's translation unit then only declares it. Split, the state above is hidden
// (visibility) extern variables defined in the support object: still one copy per library, since
// each library links its own copy of the object. The same source either way: the same behavior.
#pragma once
#include <pthread.h>

// <cmath> of C++17 declares the mathematical special functions (std::beta, std::riemann_zeta,
// ...): inline functions calling templates, which every translation unit instantiates at its
// end, precompiled header or not (117 functions, 0.03 CPU-s of every compile with g++ 12). No
// tilepy header uses them, nor can CUDA device code: libstdc++'s guard of <bits/specfun.h> keeps
// them out (<math.h> exports them only on request, __STDCPP_WANT_MATH_SPEC_FUNCS__; other
// standard libraries ignore the macro).
#if !defined(_GLIBCXX_BITS_SPECFUN_H)
#define _GLIBCXX_BITS_SPECFUN_H 1
#endif
#include <atomic>
#include <csignal>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <vector>

// TP_VAR(declaration, initializer): a launch-state variable of this library (above);
// TP_TLS_VAR the same per thread. TP_SUPPORT_BODY: this translation unit defines the machinery.
#define TP_HIDDEN __attribute__((visibility("hidden")))
// The library's own thread-local variables, reached as a `static thread_local` one is (the
// module's TLS block once per function): GCC gives an extern one the general-dynamic model (a
// __tls_get_addr call per variable) though it is in this library: tutorial 3's faithful matmul
// made 12 such calls, 10 built whole or with this.
#define TP_TLS_LOCAL __attribute__((tls_model("local-dynamic")))
#if !defined(TP_SPLIT)
#define TP_VAR(decl, init) static decl init
#define TP_TLS_VAR(decl, init) static thread_local decl init
#define TP_SUPPORT_BODY 1
#elif defined(TP_SUPPORT_TU)
#define TP_VAR(decl, init) TP_HIDDEN decl init
#define TP_TLS_VAR(decl, init) TP_HIDDEN TP_TLS_LOCAL __thread decl init
#define TP_SUPPORT_BODY 1
#else
#define TP_VAR(decl, init) extern TP_HIDDEN decl
#define TP_TLS_VAR(decl, init) extern TP_HIDDEN TP_TLS_LOCAL __thread decl
#define TP_SUPPORT_BODY 0
#endif
// A function of the machinery: defined where TP_SUPPORT_BODY, declared elsewhere. Besides
// `launch_blocks`, the kernel-facing functions that do not depend on the kernel are such
// functions (`#if TP_SUPPORT_BODY` definition `#else` declaration `#endif`): the error reports
// (set_error, fail, bad_view_access, bad_address, the stored-poison report), the warp
// collectives' completions and cp.async: a split library compiles their code once per flags,
// not once per kernel (a fifth of a faithful kernel's compile with the PCH: 0.1-0.4 CPU-s).
#if defined(TP_SPLIT)
#define TP_SUPPORT TP_HIDDEN
#else
#define TP_SUPPORT inline
#endif
// The launch lock and the error text are the machinery's alone (LaunchScope, set_error): a split
// kernel's translation unit neither sees them nor parses their headers (with the precompiled
// header, <mutex>'s and <chrono>'s templates were instantiated again at the end of every
// kernel's compile; <string>'s inline functions, std::stoi and the like, 0.04-0.05 CPU-s of
// every kernel's: a split kernel's code builds no std::string, its error texts are built here,
// but for the sm_90a class's emulation, cpu_tma.h and cpu_wgmma.h).
#if TP_SUPPORT_BODY
#include <chrono>
#include <mutex>
#endif
#if TP_SUPPORT_BODY || TP_WGMMA
#include <string>
#endif

#include "tilepy/cpu_pool.h"
#include "tilepy/cpu_stack.h"

#if defined(TP_FAITHFUL)
#if TP_NT < 1 || TP_NT > 1024
#error "a CUDA thread block has 1 to 1024 threads (TP_NT)"
#endif
#elif TP_NT != 1
#error "the CPU fast mode runs one thread per block: compile with -DTP_NT=1 (or -DTP_FAITHFUL)"
#endif

// ---------------------------------------------------------------------------- CUDA keywords
// A kernel binds to its own library's definition, never to a same-named function elsewhere
// in the process (emitted kernels' symbols are also prefixed: cuda_c/names.py).
#define __global__ __attribute__((visibility("hidden")))
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
#define __restrict__ __restrict
#define __constant__
#define __grid_constant__

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The builders of error reports (strings for a launch that has already failed) are compiled out of
// line and unoptimized: at -O2 GCC inlined std::string's code into each of them, about 0.8 of the
// 2.5 CPU-s a faithful-mode library took to build (a vector add, with the precompiled header).
#if defined(__clang__)
#define TP_REPORT [[gnu::cold, gnu::noinline]]
#else
#define TP_REPORT [[gnu::cold, gnu::noinline, gnu::optimize("O0")]]
#endif

namespace tp { namespace cpu {
struct Fiber;
struct CpAsync { void* dst; const void* src; int bytes, src_bytes; };
// A warpgroup MMA in flight (cpu_wgmma.h): descriptors, the thread's accumulators, what they held.
struct WgmmaOp {
  uint64_t da, db;
  float* d;
  int n, kind, trans_b;
  bool acc, chained;
  float c[128];
  // A from registers: the thread's fragment registers (to check they are left alone while the
  // MMA runs) and its rows of the warp's A, gathered from the warp when it was issued
  const uint32_t* a_regs = nullptr;
  uint32_t a_held[4] = {};
  float a[2][16] = {};
};

// What one CUDA thread sees: its indices, and (faithful mode) its fiber and pending cp.async.
struct Ctx {
  dim3 tid{0, 0, 0};
  dim3 bid{0, 0, 0};
  int lin = 0, lane = 0, warp = 0;       // linear thread index in the block, lane, warp
  Fiber* fiber = nullptr;
  std::vector<CpAsync> cp_pending;       // issued, not yet committed
  std::vector<std::vector<CpAsync>> cp_groups;   // committed groups, oldest first
  // sm_90a (cpu_wgmma.h): MMAs issued and not committed, committed groups, a wgmma.fence since
  // the registers were handed back; landed cp.async copies not yet behind a fence.proxy.async
  std::vector<WgmmaOp> wg_pending;
  std::vector<std::vector<WgmmaOp>> wg_groups;
  bool wg_fenced = false;
  bool wg_wrote_a = false;               // A fragment registers written since the last wgmma.fence
  std::vector<uint32_t> unfenced;
  // cpu_tma.h: the mbarrier phase parity the thread blocks on (faithful mode), and the line
  uint64_t* mbar = nullptr;
  uint32_t mbar_parity = 0;
  int mbar_line = 0;
};
TP_TLS_VAR(Ctx* cur, = nullptr);  // faithful mode: rewritten by the scheduler on each switch
TP_VAR(dim3 grid_dim, );               // of the running launch (this library's are serialized)
TP_VAR(dim3 block_dim, );
#if TP_SUPPORT_BODY
TP_VAR(std::timed_mutex launch_mutex, );
#endif

inline dim3 index3(long i, dim3 g) {
  return dim3(unsigned(i % g.x), unsigned((i / g.x) % g.y), unsigned(i / ((long)g.x * g.y)));
}

// Dynamic shared memory: one buffer per OS thread, allocated on first use and kept for the
// thread's life (so a pointer to it taken once per thread stays valid).
constexpr size_t kMaxDynamicSmem = 227 * 1024;
struct alignas(128) DynSmem { unsigned char bytes[kMaxDynamicSmem]; };
inline unsigned char* dynamic_smem() {
  static thread_local std::unique_ptr<DynSmem> buf;
  if (!buf) buf.reset(new DynSmem);
  return buf->bytes;
}

// The first error of a launch (copied into its Report), and the user's line it happened at
// when known (`file` empty otherwise).
TP_VAR(std::atomic<bool> failed, {false});
#if TP_SUPPORT_BODY
TP_VAR(std::mutex error_mutex, );
TP_VAR(std::string error_text, );
TP_VAR(std::string error_file, );
TP_VAR(int error_line, = 0);
TP_REPORT TP_SUPPORT void set_error(const std::string& msg, const char* file = "", int line = 0) {
  std::lock_guard<std::mutex> g(error_mutex);
  if (failed.exchange(true)) return;
  error_text = msg;
  error_file = file;
  error_line = line;
}
inline void clear_error() {
  std::lock_guard<std::mutex> g(error_mutex);
  failed = false;
  error_text.clear();
  error_file.clear();
  error_line = 0;
}
#elif TP_WGMMA
TP_REPORT TP_SUPPORT void set_error(const std::string& msg, const char* file = "", int line = 0);
#endif

// ---------------------------------------------------------------------------- element addresses
// Element-space accesses (gather, scatter, atomics through tiles of pointers) are checked against
// the address ranges of the launch's array arguments, whatever check_bounds says: on a GPU a wild
// index is undefined behavior, on the CPU it would corrupt or kill the Python process. The host
// entry computes the ranges (`extent`); hand-written kernels have none (nextents < 0: unchecked).
//
// A pointer is checked against the array it was computed from, not any array: `offset_ptr` (the
// CPU's `ptr + offset`) finds the argument its base points into (the one it is the base pointer
// of first) and, when the result leaves that argument, tags it with the argument (bits 48-62,
// above every user-space address): a tagged pointer is outside every range, so its access is
// refused and reported with both arrays named; a later offset that comes back into the argument
// drops the tag. Pointers of no argument (hand-written kernels, overlapping views beyond the
// first) keep the union check.
struct Extent { uintptr_t lo, hi, base; const char* name; };
TP_VAR(const Extent* extents, = nullptr);
TP_VAR(int nextents, = -1);
constexpr int kTagShift = 48;
constexpr uintptr_t kAddrMask = (uintptr_t(1) << kTagShift) - 1;

template <class I>
inline Extent extent_of(const void* p, size_t elem, const I* shape, const I* strides, size_t rank,
                        const char* name) {
  long long lo = 0, hi = 0;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] <= 0) return {0, 0, 0, name};
    const long long step = (long long)(shape[i] - 1) * strides[i];
    (step < 0 ? lo : hi) += step;
  }
  return {(uintptr_t)p + lo * (long long)elem, (uintptr_t)p + (hi + 1) * (long long)elem,
          (uintptr_t)p, name};
}
inline Extent extent(const void* p, size_t elem, std::initializer_list<long long> shape,
                     std::initializer_list<long long> strides, const char* name) {
  return extent_of(p, elem, shape.begin(), strides.begin(), shape.size(), name);
}

inline bool inside(const Extent& e, uintptr_t a, size_t n) { return a >= e.lo && a + n <= e.hi; }

inline bool address_ok(const void* p, size_t n) {
  const uintptr_t a = (uintptr_t)p;
  for (int i = 0; i < nextents; ++i)
    if (inside(extents[i], a, n)) return true;
  return nextents < 0;
}

// The argument a pointer belongs to: its tag, else the argument it is the base pointer of, else
// the first one it points into; -1 for none.
inline int home_of(uintptr_t a) {
  if (a >> kTagShift) return (int)(a >> kTagShift) - 1;
  int found = -1;
  for (int i = 0; i < nextents; ++i) {
    if (extents[i].base == a && extents[i].hi > extents[i].lo) return i;
    if (found < 0 && inside(extents[i], a, 1)) found = i;
  }
  return found;
}

template <class T> inline T* offset_ptr(T* p, int64_t o) {
  if (nextents <= 0) return p + o;
  const uintptr_t a = (uintptr_t)p;
  const int home = home_of(a);
  const uintptr_t r = (a & kAddrMask) + (uintptr_t)(o * (int64_t)sizeof(T));
  if (home < 0 || home >= nextents || inside(extents[home], r, 1)) return (T*)r;
  return (T*)((r & kAddrMask) | (uintptr_t)(home + 1) << kTagShift);
}

// Where an element-space access was written: the user's line, through the #line directives
// (a default argument or member initializer evaluates __builtin_LINE() at the call site).
struct Caller { const char* file; int line; };
inline Caller caller(const char* f = __builtin_FILE(), int l = __builtin_LINE()) { return {f, l}; }

// A parameter the host's buffer may hold less aligned than its type (a 64-byte aligned tensor map).
template <class T> inline T param_copy(const void* p) {
  T t;
  std::memcpy((void*)&t, p, sizeof t);
  return t;
}

// A tensor map as the CPU backend encodes it, and a cp.async.bulk.tensor copy (cpu_tma.h).
constexpr uint32_t kTensorMapMagic = 0x4d545054;   // "TPTM"
struct MapFields {
  uint32_t magic;
  uint8_t rank, dtype, swizzle, oob;
  uint64_t base;
  uint32_t dims[5];
  uint32_t pad;
  uint64_t strides[4];
  uint16_t box[5];
  uint8_t estrides[5], interleave, l2;
};
static_assert(sizeof(MapFields) <= 128 && offsetof(MapFields, strides) == 40 &&
              offsetof(MapFields, box) == 72, "the CPU tensor map layout (launch/tensor_map.py)");

struct BulkCopy {
  MapFields m;
  int32_t c[5];
  unsigned char* dst;   // shared memory: a load's destination, a store's source
  uint64_t* bar;        // a load's mbarrier; nullptr: a TMA store
  uint32_t bytes;
  int thread;
  Caller at;
  int group = -1;       // a store's bulk group (its thread's commit count), -1 until committed
};

#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT void bad_address(const void* p, size_t n, const Caller& at) {
  const uintptr_t a = (uintptr_t)p;
  const int home = (a >> kTagShift) ? (int)(a >> kTagShift) - 1 : -1;
  char msg[512];
  if (home >= 0 && home < nextents) {
    const uintptr_t r = a & kAddrMask;
    const char* other = nullptr;
    for (int i = 0; i < nextents && !other; ++i)
      if (inside(extents[i], r, n)) other = extents[i].name;
    char where[160] = "";
    if (other) std::snprintf(where, sizeof where, " (it lands inside array argument '%s')", other);
    std::snprintf(msg, sizeof msg, "an element address (%p, %zu bytes) is outside array argument "
                  "'%s', the array it was computed from%s: a gather, scatter or atomic index is "
                  "out of bounds (check_bounds=False skips the mask, not the CPU backend's check)",
                  (void*)r, n, extents[home].name, where);
  } else {
    std::snprintf(msg, sizeof msg, "an element address (%p, %zu bytes) is outside every array "
                  "argument: a gather, scatter or atomic index is out of bounds (check_bounds=False "
                  "skips the mask, not the CPU backend's check)", p, n);
  }
  set_error(msg, at.file, at.line);
}
#else
TP_REPORT TP_SUPPORT void bad_address(const void* p, size_t n, const Caller& at);
#endif

#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT void alloca_failed(size_t bytes, const Caller& at) {
  char msg[160];
  std::snprintf(msg, sizeof msg, "alloca ... global of %zu bytes: the allocation cannot be made "
                "(out of memory; on a GPU the kernel traps here)", bytes);
  set_error(msg, at.file, at.line);
}
#else
TP_REPORT TP_SUPPORT void alloca_failed(size_t bytes, const Caller& at);
#endif

inline bool check_address(const void* p, size_t n, const Caller& at) {
  if (__builtin_expect(address_ok(p, n), 1)) return true;
  bad_address(p, n, at);
  return false;
}

// ---------------------------------------------------------------------------- one launch
// What a launch tells Python (launch/cpu.py: Report). It is filled before the launch lock is
// released, so concurrent launches of one library never see each other's assertions or errors.
struct Report {
  int watch_signals;       // in: stop at SIGINT (Ctrl-C) between blocks (the main thread's launches)
  int signal;              // out: the signal that stopped the launch early, 0 if it ran to the end
  int asserts;             // out: tile assertions that failed in this launch
  int nextents;            // in (host entry): the array arguments' address ranges, -1: unchecked
  const Extent* extents;
  const void* pool;        // in: the process's worker pool, a tp_cpu_pool_run (null: none)
  int error_line;          // out: the first error, and the user's line it happened at (if known)
  char error_file[1024];
  char error[1024];
};
TP_VAR(std::atomic<int> assert_failures, {0});
TP_VAR(unsigned launch_serial, = 0); // counts this library's launches (poison.h's integers)
TP_VAR(std::atomic<int> stop_signal, {0}); // lock-free: safe to store from a signal handler
TP_VAR(std::atomic<int> wait_signal, {0}); // SIGINT while waiting for the launch lock

// Workers take no new block once this is true: a signal arrived or the launch failed.
inline bool stopping() {
  return stop_signal.load(std::memory_order_relaxed) != 0 || failed.load(std::memory_order_relaxed);
}

#if TP_SUPPORT_BODY
inline void on_signal(int sig) { stop_signal.store(sig, std::memory_order_relaxed); }
inline void on_wait_signal(int sig) { wait_signal.store(sig, std::memory_order_relaxed); }

// A forked child has only the thread that forked: a launch of this library running in another
// thread of the parent left its lock held. The child starts with the locks free.
inline void reset_after_fork() {
  new (&launch_mutex) std::timed_mutex();
  new (&error_mutex) std::mutex();
}
static const int fork_reset_registered = pthread_atfork(nullptr, nullptr, reset_after_fork);

// Take the launch lock. The main thread's launches (`watch`) waiting behind another thread's
// launch of this library stop at SIGINT (Ctrl-C) at once: false, with the signal in `sig`.
inline bool lock_launch(bool watch, int& sig) {
  if (launch_mutex.try_lock()) return true;
  struct sigaction sa{}, old{};
  if (watch) {
    wait_signal = 0;
    sa.sa_handler = on_wait_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    if (old.sa_handler == SIG_IGN) {
      sigaction(SIGINT, &old, nullptr);
      watch = false;
    }
  }
  bool locked = false;
  while (!(locked = launch_mutex.try_lock_for(std::chrono::milliseconds(2))))
    if (watch && (sig = wait_signal.load()) != 0) break;
  if (watch) sigaction(SIGINT, &old, nullptr);
  return locked;
}

// Holds the launch lock (launches of one library are serialized), resets the per-launch state,
// and fills the Report before the lock is released; `ok()` is false when a signal came while it
// waited for the lock (the launch does not run; the Report has the signal). `watch(n)`: a
// launch of the main thread whose workers run more than one block each stops at SIGINT between
// blocks (a handler that records the signal, for the launch only; Python re-raises it
// afterwards). An ignored SIGINT stays so.
class LaunchScope {
  Report* report_;
  bool locked_ = false;
  bool watching_ = false;
  struct sigaction old_{};

 public:
  explicit LaunchScope(Report* r) : report_(r) {
    int sig = 0;
    locked_ = lock_launch(r->watch_signals, sig);
    if (!locked_) {
      r->signal = sig;
      r->asserts = 0;
      r->error[0] = r->error_file[0] = 0;
      return;
    }
    clear_error();
    extents = r->extents;
    nextents = r->nextents;
    assert_failures = 0;
    stop_signal = 0;
    ++launch_serial;
  }
  void watch(long nblocks, int workers) {
    if (!report_->watch_signals || nblocks <= workers) return;
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
    watching_ = old_.sa_handler != SIG_IGN;
    if (!watching_) sigaction(SIGINT, &old_, nullptr);
  }
  // Run `body` on `workers` threads, this one included (cpu_pool.h: fewer when the system
  // refuses more threads, or when some are late and this one took every block; this thread
  // alone when the process has no pool library).
  template <class F> void run_workers(int workers, const F& body) const {
    if (workers <= 1 || !report_->pool) return body();
    ((pool::Run)report_->pool)(workers - 1, [](void* b) { (*(const F*)b)(); }, (void*)&body);
  }
  bool ok() const { return locked_; }
  ~LaunchScope() {
    if (!locked_) return;
    if (watching_) sigaction(SIGINT, &old_, nullptr);
    report_->signal = stop_signal.load();
    report_->asserts = assert_failures.load();
    std::snprintf(report_->error, sizeof report_->error, "%s", error_text.c_str());
    std::snprintf(report_->error_file, sizeof report_->error_file, "%s", error_file.c_str());
    report_->error_line = error_line;
    launch_mutex.unlock();
  }
};
#endif  // TP_SUPPORT_BODY

}}  // namespace tp::cpu

#define threadIdx (tp::cpu::cur->tid)
#define blockIdx (tp::cpu::cur->bid)
#define blockDim (tp::cpu::block_dim)
#define gridDim (tp::cpu::grid_dim)
#define warpSize 32

// ---------------------------------------------------------------------------- math
using std::signbit;
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
static inline int __float_as_int(float f) { int x; std::memcpy(&x, &f, 4); return x; }
static inline float __uint_as_float(unsigned x) { float f; std::memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned x; std::memcpy(&x, &f, 4); return x; }
static inline long long __double_as_longlong(double f) { long long x; std::memcpy(&x, &f, 8); return x; }

// ---------------------------------------------------------------------------- half types
// f16 and bf16 storage with round-to-nearest-even conversions from float (as __float2half_rn).
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };

#ifndef __FLT16_MAX__
#error "the CPU backend needs a host compiler with _Float16 (GCC >= 12 or Clang >= 15)"
#endif
// _Float16 conversions are IEEE correctly rounded (to nearest even), like __float2half_rn.
static inline float __half2float(__half h) { _Float16 f; std::memcpy(&f, &h.x, 2); return (float)f; }
static inline __half __float2half_rn(float x) {
  const _Float16 f = (_Float16)x;
  __half h; std::memcpy(&h.x, &f, 2); return h;
}
static inline __half __float2half(float x) { return __float2half_rn(x); }

static inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t bits = (uint32_t)b.x << 16;
  float f; std::memcpy(&f, &bits, 4); return f;
}

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  __nv_bfloat16 b;
  if ((x & 0x7fffffffu) > 0x7f800000u) { b.x = (uint16_t)((x >> 16) | 0x40u); return b; }  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  b.x = (uint16_t)(x >> 16);
  return b;
}
static inline __nv_bfloat16 __float2bfloat16(float x) { return __float2bfloat16_rn(x); }

// ---------------------------------------------------------------------------- launch
#if defined(TP_FAITHFUL)
#include "tilepy/cpu_fiber.h"
#else
#include "tilepy/cpu_fast.h"
static inline void __syncthreads() {}

namespace tp { namespace cpu {
#if TP_SUPPORT_BODY
TP_REPORT inline void set_error_fast_mode_block(const char* name) {
  set_error(std::string("kernel '") + name + "' was built for the fast CPU mode (one thread per "
            "block) but launched with more threads per block");
}
TP_REPORT inline void set_error_no_stack(const char* name) {
  set_error(std::string("kernel '") + name + "': cannot map " + std::to_string(stack_need >> 20) +
            " MiB of stack for its tiles (use smaller tiles)");
}

// Run every block of `grid` (one thread each) on `workers` OS threads.
TP_SUPPORT int launch_blocks(const char* name, dim3 grid, dim3 block, size_t smem, int workers,
                             Report* report, void (*entry)(const void*), const void* kernel) {
  LaunchScope scope(report);
  if (!scope.ok()) return -3;
  if (block.x * block.y * block.z != 1) {
    set_error_fast_mode_block(name);
    return -1;
  }
  grid_dim = grid;
  block_dim = block;
  const long nblocks = (long)grid.x * grid.y * grid.z;
  if (workers < 1) workers = 1;
  if (workers > nblocks) workers = (int)(nblocks > 0 ? nblocks : 1);
  scope.watch(nblocks, workers);
  std::atomic<long> next{0};
  const long chunk = blocks_per_chunk(nblocks, workers);
  auto blocks = [&] {
    Ctx ctx;
    cur = &ctx;
    unsigned char* dyn = smem ? dynamic_smem() : nullptr;
    for (long b0; !stopping() && (b0 = next.fetch_add(chunk)) < nblocks;) {   // a chunk of blocks
      const long b1 = nblocks - b0 < chunk ? nblocks : b0 + chunk;
      for (long b = b0; b < b1 && !stopping(); ++b) {   // a chunk may be long: check per block
        ctx.bid = index3(b, grid);
        if (dyn) std::memset(dyn, 0xff, smem);   // shared memory starts undefined: poison it
        entry(kernel);
      }
    }
    cur = nullptr;
  };
  auto worker = [&] {
    if (!on_stack(blocks)) set_error_no_stack(name);
  };
  scope.run_workers(workers, worker);
  return failed.load() ? -2 : 0;
}
#endif
}}  // namespace tp::cpu
#endif

namespace tp { namespace cpu {
// A launch: lock, checks, every block of `grid` on `workers` OS threads (faithful mode: each
// block's threads as fibers), the Report filled. The kernel-independent part, `launch_blocks`
// (cpu_fiber.h, or above), runs `entry(kernel)` for each block (thread); it is defined here or,
// in a split build, in the library's support object.
TP_SUPPORT int launch_blocks(const char* name, dim3 grid, dim3 block, size_t smem, int workers,
                             Report* report, void (*entry)(const void*), const void* kernel);

template <class K>
int launch(const char* name, dim3 grid, dim3 block, size_t smem, int workers, Report* report,
           const K& kernel) {
  return launch_blocks(name, grid, block, smem, workers, report,
                       [](const void* k) { (*(const K*)k)(); }, &kernel);
}
}}  // namespace tp::cpu
