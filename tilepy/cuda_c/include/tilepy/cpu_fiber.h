// tilepy/cpu_fiber.h -- the faithful CPU mode: every thread of a block is a fiber.
//
// A worker (one OS thread) runs one block at a time: TP_NT fibers on their own stacks, switched
// cooperatively (tilepy/cpu_context.h) to and from the worker's scheduler. A fiber runs until it
// waits -- at __syncthreads(), in a warp-level operation -- or exits; it is never preempted, so
// a thread that spins on shared memory waiting for another thread hangs the launch.
//
// Scheduling is deterministic and chosen to expose missing barriers: warps are visited in order
// (and their lanes), reversed every other round and in every other block, and a warp's fibers
// are resumed until all of them wait, so one warp runs as far ahead of the others as the barriers
// allow, first the lowest warp, in the next block the highest. The last thread to reach a
// barrier continues first. A round in which no fiber can run while some have not exited is a deadlock,
// reported with what every thread waits at (e.g. a __syncthreads() inside a divergent branch).
//
// Warp-level operations are collectives over the lanes of a mask: each lane deposits its
// operands in its slot and waits; the last lane to arrive computes every participant's result
// (tilepy/cpu_warp.h) and releases them. Errors (undefined behavior that is detected, such as a
// lane calling a shuffle with a mask without itself) end the launch with a message for Python.
#pragma once
#include <algorithm>
#if TP_SUPPORT_BODY || TP_WGMMA   // (cpu_shim.h: std::string in a split kernel's code)
#include <string>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include "tilepy/cpu_context.h"

namespace tp { namespace cpu {

enum class State : uint8_t { runnable, at_barrier, in_warp_op, at_mbarrier, done };

struct Warp;
typedef void (*CompleteFn)(Warp&, uint32_t lanes);

// One lane's part in a warp-level operation.
struct Slot {
  uint32_t kind = 0;              // the operation with its qualifiers (0: none)
  uint32_t mask = 0;              // participating lanes
  bool aligned = false;           // needs all 32 lanes (mma.sync, ldmatrix: .aligned)
  const char* name = "";
  CompleteFn complete = nullptr;
  int32_t arg0 = 0, arg1 = 0;     // per-lane scalars (shuffle source, width, ...)
  const void* ptr = nullptr;      // per-lane address (ldmatrix row)
  uint32_t in[12];                // per-lane operand registers
  uint32_t out[4];                // per-lane result registers
};

struct Warp {
  uint32_t waiting = 0;           // lanes parked in a warp-level operation
  uint32_t exited = 0;            // lanes that returned (or do not exist in a partial warp)
  int index = 0;
  Slot slot[32];
};

struct Fiber {
  Ctx ctx;
  Context context;
  State state = State::runnable;
};

struct Worker {
  const char* kernel = "";
  void (*entry)(const void*) = nullptr;
  const void* closure = nullptr;
  int nthreads = TP_NT, nwarps = (TP_NT + 31) / 32;
  std::unique_ptr<Fiber[]> fibers;   // TP_NT and (TP_NT + 31) / 32 (launch_blocks: their
  std::unique_ptr<Warp[]> warps;     // construction is the machinery's, not every kernel's)
  char* stacks = nullptr;
  size_t stack_bytes = 0, stride = 0;
  Context scheduler;
  int running = -1;
  int bar_arrived = 0;
  long block = 0;
  bool aborted = false;
  std::vector<int> proxy_owner;   // cpu_wgmma.h: per 16 bytes of dynamic shared memory, the
                                  // thread whose landed cp.async awaits its fence.proxy.async
  std::vector<BulkCopy> tma_inflight;   // cpu_tma.h: cp.async.bulk.tensor copies in flight, and
  std::vector<const uint64_t*> tma_owner;   // per 16 bytes of dynamic shared memory the
                                            // mbarrier of the copy in flight into it
};
TP_TLS_VAR(Worker* worker, = nullptr);

constexpr size_t kFiberStack = 256 * 1024;

#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT std::string dim_str(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

TP_REPORT TP_SUPPORT std::string where_str(const Worker& w) {
  return "kernel '" + std::string(w.kernel) + "', block " + dim_str(index3(w.block, grid_dim));
}

// End the launch: detected undefined behavior or a deadlock. Called on a fiber's stack, it
// jumps back to the scheduler, which abandons the block.
[[noreturn]] TP_REPORT TP_SUPPORT void fail(const std::string& msg, const Caller& at = {"", 0}) {
  Worker* w = worker;
  set_error(where_str(*w) + ", thread " + dim_str(cur->tid) + ": " + msg, at.file, at.line);
  w->aborted = true;
  context_switch(cur->fiber->context, w->scheduler);   // never resumed
  __builtin_unreachable();
}
#elif TP_WGMMA
[[noreturn]] TP_REPORT TP_SUPPORT void fail(const std::string& msg, const Caller& at = {"", 0});
#endif

// ---------------------------------------------------------------------------- global memory
// Every global access of the view ops (load, store, atomic_red, the cp.async copies of
// load_async: runtime.h check_view) is checked against the bytes its view spans (`e`): an
// access outside ends the launch with a TileLaunchError naming the array (the argument whose
// base pointer the view's is) and the kernel's line. On a GPU it would be an illegal address,
// or another array's data.
#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT void bad_view_access(const void* base, const Extent& e,
                                                         uintptr_t a, size_t n, const char* what,
                                                         const Caller& at) {
  std::string array = "its array";      // a hand-written kernel's arguments have no names
  for (int i = 0; i < nextents; ++i)
    if (extents[i].base == (uintptr_t)base) {
      array = std::string("array '") + extents[i].name + "'";
      break;
    }
  char msg[400];
  std::snprintf(msg, sizeof msg, "%s of %zu bytes at byte %lld from the start of %s, outside "
                "its %lld bytes: a tile or element index outside the array (on a GPU an illegal "
                "address, or another array's data)", what, n, (long long)(a - (uintptr_t)base),
                array.c_str(), (long long)(e.hi - e.lo));
  fail(msg, at);
}
#else
TP_REPORT TP_SUPPORT void bad_view_access(const void* base, const Extent& e,
                                                         uintptr_t a, size_t n, const char* what,
                                                         const Caller& at);
#endif

#if TP_SUPPORT_BODY
TP_REPORT TP_SUPPORT std::string hex(uint32_t x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}
#endif

inline void suspend() { context_switch(cur->fiber->context, worker->scheduler); }

// ---------------------------------------------------------------------------- barriers
inline void block_barrier() {
  Worker* w = worker;
  if (++w->bar_arrived == w->nthreads) {      // threads that exited never arrive
    w->bar_arrived = 0;
    for (int t = 0; t < w->nthreads; ++t)
      if (w->fibers[t].state == State::at_barrier) w->fibers[t].state = State::runnable;
    return;                                   // the last to arrive continues first
  }
  cur->fiber->state = State::at_barrier;
  suspend();
}

// ---------------------------------------------------------------------------- warp collectives
inline Fiber& lane_fiber(Worker& w, int warp, int lane) { return w.fibers[warp * 32 + lane]; }

// Completes the operation lane `lane` waits in, if every lane it needs has arrived at it.
#if TP_SUPPORT_BODY
TP_SUPPORT bool try_complete(Warp& W, int lane) {
  const Slot& s = W.slot[lane];
  const uint32_t mask = s.mask;
  if (s.aligned && (W.exited & mask))
    fail(std::string(s.name) + ": lane " + std::to_string(__builtin_ctz(W.exited & mask)) +
         " of warp " + std::to_string(W.index) + " has exited or does not exist; all 32 lanes "
         "of the warp must execute it");
  const uint32_t need = mask & ~W.exited;
  if ((W.waiting & need) != need) return false;
  for (uint32_t m = need; m; m &= m - 1) {
    const Slot& o = W.slot[__builtin_ctz(m)];
    if (o.kind != s.kind || o.mask != mask) return false;   // that lane waits in another op
  }
  s.complete(W, need);
  W.waiting &= ~need;
  Worker& w = *worker;
  for (uint32_t m = need; m; m &= m - 1) {
    const int j = __builtin_ctz(m);
    W.slot[j].kind = 0;
    Fiber& f = lane_fiber(w, W.index, j);
    if (f.state == State::in_warp_op) f.state = State::runnable;
  }
  return true;
}
#else
TP_SUPPORT bool try_complete(Warp& W, int lane);
#endif

// The calling lane takes part in a warp-level operation: its slot has been filled with its
// operands; returns when the operation completed, with the lane's results in its slot.
inline Slot& warp_slot() { return worker->warps[cur->warp].slot[cur->lane]; }

#if TP_SUPPORT_BODY
TP_SUPPORT void warp_collective(uint32_t kind, const char* name, uint32_t mask, bool aligned,
                            CompleteFn complete) {
  Warp& W = worker->warps[cur->warp];
  const int lane = cur->lane;
  if (!(mask >> lane & 1u))
    fail(std::string(name) + ": the calling lane " + std::to_string(lane) + " is not in its mask " +
         hex(mask) + " (undefined behavior)");
  Slot& s = W.slot[lane];
  s.kind = kind;
  s.mask = mask;
  s.aligned = aligned;
  s.name = name;
  s.complete = complete;
  W.waiting |= 1u << lane;
  if (try_complete(W, lane)) return;
  cur->fiber->state = State::in_warp_op;
  suspend();
}
#else
TP_SUPPORT void warp_collective(uint32_t kind, const char* name, uint32_t mask, bool aligned,
                            CompleteFn complete);
#endif

// The scheduler and the launch: only launch_blocks runs them, so a split kernel's translation unit
// does not see them (their std::string and std::vector code was instantiated again at the end
// of every faithful kernel's compile).
#if TP_SUPPORT_BODY
inline void tma_check_exit();                     // cpu_tma.h
TP_REPORT inline std::string mbar_wait_report(const Ctx& c);

// A lane exits: operations that waited only for lanes still running may now complete.
inline void lane_exit(Fiber* f) {
  Worker& w = *worker;
  if (!f->ctx.wg_groups.empty() || !f->ctx.wg_pending.empty())
    fail("the thread exits with wgmma.mma_async operations in flight (no wgmma.wait_group "
         "retired them)");
  tma_check_exit();
  f->state = State::done;
  Warp& W = w.warps[f->ctx.warp];
  W.exited |= 1u << f->ctx.lane;
  for (uint32_t m = W.waiting; m; m &= m - 1) {
    const int j = __builtin_ctz(m);
    if (W.waiting >> j & 1u) try_complete(W, j);
  }
}

// ---------------------------------------------------------------------------- scheduler
inline void fiber_main() {
  Worker* w = worker;
  Fiber* self = &w->fibers[w->running];
  for (;;) {
    w->entry(w->closure);
    lane_exit(self);
    context_switch(self->context, w->scheduler);       // resumed for the next block
  }
}

inline void init_fibers(Worker& w) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  // At least the library's frames (cpu_stack.h), with a guard page below every stack.
  w.stack_bytes = round_to_page(stack_need > kFiberStack ? stack_need : kFiberStack);
  w.stride = w.stack_bytes + page;
  void* p = mmap(nullptr, w.stride * w.nthreads, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) { set_error("cannot allocate fiber stacks"); w.aborted = true; return; }
  w.stacks = (char*)p;
  for (int t = 0; t < w.nthreads; ++t) {
    mprotect(w.stacks + t * w.stride, page, PROT_NONE);
    Fiber& f = w.fibers[t];
    f.ctx.fiber = &f;
    f.ctx.lin = t;
    f.ctx.lane = t % 32;
    f.ctx.warp = t / 32;
    f.ctx.tid = index3(t, block_dim);
    context_init(f.context, w.stacks + t * w.stride + page, w.stack_bytes, fiber_main);
  }
  for (int i = 0; i < w.nwarps; ++i) w.warps[i].index = i;
}

inline void free_fibers(Worker& w) {
  if (w.stacks) munmap(w.stacks, w.stride * w.nthreads);
  w.stacks = nullptr;
}

inline void resume(Worker& w, int t) {
  Fiber& f = w.fibers[t];
  w.running = t;
  cur = &f.ctx;
  context_switch(w.scheduler, f.context);
  cur = nullptr;
}

inline void reset_block(Worker& w, long b, size_t smem) {
  w.block = b;
  w.bar_arrived = 0;
  const dim3 bid = index3(b, grid_dim);
  for (int t = 0; t < w.nthreads; ++t) {
    Fiber& f = w.fibers[t];
    f.state = State::runnable;
    f.ctx.bid = bid;
    f.ctx.cp_pending.clear();
    f.ctx.cp_groups.clear();
    f.ctx.wg_pending.clear();
    f.ctx.wg_groups.clear();
    f.ctx.wg_fenced = false;
    f.ctx.wg_wrote_a = false;
    f.ctx.unfenced.clear();
  }
  for (int i = 0; i < w.nwarps; ++i) {
    Warp& W = w.warps[i];
    const int lanes = w.nthreads - i * 32 < 32 ? w.nthreads - i * 32 : 32;
    W.waiting = 0;
    W.exited = lanes == 32 ? 0u : ~((1u << lanes) - 1u);
    for (Slot& s : W.slot) s.kind = 0;
  }
  if (smem) std::memset(dynamic_smem(), 0xff, smem);   // shared memory starts undefined: poison
  if (!w.proxy_owner.empty()) std::fill(w.proxy_owner.begin(), w.proxy_owner.end(), -1);
  w.tma_inflight.clear();
  if (!w.tma_owner.empty()) std::fill(w.tma_owner.begin(), w.tma_owner.end(), nullptr);
}

// What every thread that has not exited waits at, as ranges of consecutive threads.
TP_REPORT inline std::string deadlock_report(const Worker& w) {
  auto what = [&](int t) -> std::string {
    const Fiber& f = w.fibers[t];
    if (f.state == State::done) return "have exited";
    if (f.state == State::at_barrier) return "wait at __syncthreads()";
    if (f.state == State::at_mbarrier) return mbar_wait_report(f.ctx);
    const Slot& s = w.warps[f.ctx.warp].slot[f.ctx.lane];
    return std::string("wait in ") + s.name + " (mask " + hex(s.mask) + ")";
  };
  std::string out;
  int exited = 0;
  for (int t = 0; t < w.nthreads;) {
    const std::string d = what(t);
    int e = t + 1;
    while (e < w.nthreads && what(e) == d) ++e;
    if (d == "have exited") exited += e - t;
    out += (out.empty() ? "" : "; ") + std::string("threads ") + std::to_string(t) + "-" +
           std::to_string(e - 1) + " " + d;
    t = e;
  }
  out += exited ? " (a __syncthreads() or warp-level operation that not all threads reach, e.g. "
                  "in a divergent branch)"
                : " (threads wait in operations that cannot complete)";
  return out;
}

inline void run_block(Worker& w, long b, size_t smem) {
  reset_block(w, b, smem);
  int alive = w.nthreads;
  for (unsigned round = 0; alive > 0; ++round) {
    bool ran_round = false;
    const bool reverse = (round + (unsigned)b) & 1;   // odd blocks start with the last warp
    for (int wi = 0; wi < w.nwarps; ++wi) {
      const int wp = reverse ? w.nwarps - 1 - wi : wi;
      const int t0 = wp * 32, n = (t0 + 32 < w.nthreads ? t0 + 32 : w.nthreads) - t0;
      for (bool ran = true; ran;) {
        ran = false;
        for (int i = 0; i < n; ++i) {
          const int t = t0 + (reverse ? n - 1 - i : i);
          if (w.fibers[t].state != State::runnable) continue;
          resume(w, t);
          if (w.aborted) return;
          ran = ran_round = true;
          if (w.fibers[t].state == State::done) --alive;
        }
      }
    }
    if (!ran_round) {
      set_error(where_str(w) + ": deadlock: " + deadlock_report(w));
      w.aborted = true;
      return;
    }
  }
}

// ---------------------------------------------------------------------------- launch
// Dynamic shared memory past the launch's `smem` bytes (every worker has kMaxDynamicSmem) holds
// a fixed pattern, checked when the worker has run its blocks: a kernel that writes there was
// launched with less than it uses (on a GPU an illegal address). Reads of bytes never written
// are not seen.
constexpr size_t kCanaryBlock = 4096;
inline const unsigned char* smem_canary() {
  static const auto block = [] {
    std::unique_ptr<unsigned char[]> b(new unsigned char[kCanaryBlock]);
    for (size_t i = 0; i < kCanaryBlock; ++i) b[i] = (unsigned char)(0x5b + 0x9d * (i % 251));
    return b;
  }();
  return block.get();
}
inline void fill_smem_canary(unsigned char* dyn, size_t smem) {
  for (size_t o = smem; o < kMaxDynamicSmem; o += kCanaryBlock)
    std::memcpy(dyn + o, smem_canary(), std::min(kCanaryBlock, kMaxDynamicSmem - o));
}
// The first byte past `smem` that a block changed, or kMaxDynamicSmem.
inline size_t smem_overrun(const unsigned char* dyn, size_t smem) {
  for (size_t o = smem; o < kMaxDynamicSmem; o += kCanaryBlock) {
    const size_t n = std::min(kCanaryBlock, kMaxDynamicSmem - o);
    if (std::memcmp(dyn + o, smem_canary(), n) == 0) continue;
    for (size_t i = 0; i < n; ++i)
      if (dyn[o + i] != smem_canary()[i]) return o + i;
  }
  return kMaxDynamicSmem;
}
TP_REPORT inline void check_smem(const Worker& w, const unsigned char* dyn, size_t smem) {
  const size_t at = smem_overrun(dyn, smem);
  if (at == kMaxDynamicSmem) return;
  set_error("kernel '" + std::string(w.kernel) + "': a thread wrote dynamic shared memory at "
            "byte " + std::to_string(at) + ", past the " + std::to_string(smem) + " bytes the "
            "launch gave (shmem_size; on a GPU an illegal address): launch with the kernel's "
            "smem_bytes");
}

TP_SUPPORT int launch_blocks(const char* name, dim3 grid, dim3 block, size_t smem, int workers,
                             Report* report, void (*entry)(const void*), const void* kernel) {
  LaunchScope scope(report);
  if (!scope.ok()) return -3;
  if ((long)block.x * block.y * block.z != TP_NT) {
    set_error(std::string("kernel '") + name + "' was built for " + std::to_string(TP_NT) +
              " threads per block but launched with block " + dim_str(block));
    return -1;
  }
  if (smem > kMaxDynamicSmem) {
    set_error(std::string("kernel '") + name + "': " + std::to_string(smem) + " bytes of dynamic "
              "shared memory requested; at most " + std::to_string(kMaxDynamicSmem) + " are supported");
    return -1;
  }
  grid_dim = grid;
  block_dim = block;
  const long nblocks = (long)grid.x * grid.y * grid.z;
  if (workers < 1) workers = 1;
  if (workers > nblocks) workers = (int)(nblocks > 0 ? nblocks : 1);
  scope.watch(nblocks, workers);
  std::atomic<long> next{0};
  auto body = [&] {
    Worker w;
    w.fibers.reset(new Fiber[TP_NT]);
    w.warps.reset(new Warp[(TP_NT + 31) / 32]);
    w.kernel = name;
    w.closure = kernel;
    w.entry = entry;
    worker = &w;
    init_fibers(w);
    unsigned char* const dyn = dynamic_smem();
    fill_smem_canary(dyn, smem);
    for (long b; !stopping() && (b = next.fetch_add(1)) < nblocks;) {
      run_block(w, b, smem);
      if (w.aborted) break;
    }
    check_smem(w, dyn, smem);
    free_fibers(w);
    worker = nullptr;
    cur = nullptr;
  };
  scope.run_workers(workers, body);
  return failed.load() ? -2 : 0;
}
#endif  // TP_SUPPORT_BODY

}}  // namespace tp::cpu

static inline void __syncthreads() { tp::cpu::block_barrier(); }
