// tilepy/cpu_wgmma.h -- sm_90a's warpgroup MMA and the async proxy on the CPU, behind wgmma.h.
//
// Faithful mode. wgmma.mma_async: every thread of a warpgroup computes its own accumulator
// fragment (PTX ISA "Matrix Fragments for wgmma.m64nNk16": warp w of the group holds rows
// 16w..16w+15, in the mma.m16n8 accumulator layout repeated for every 8 columns) from the two
// matrix descriptors, decoded as the ISA's "Matrix Descriptor Format" and "Canonical Layouts"
// say: start address, leading and stride byte offsets, the swizzle mode applied to the address
// bits (Swizzle<B, 4, 3>: bits 4.. XOR bits 7..). Products are exact; each k16 step is summed in
// double and rounded once to f32, as the mma.sync emulation does.
//
// A in registers (wgmma's register A operand, .f16/.bf16): the thread's four .f16x2 registers
// are its part of its warp's 16 rows of A (PTX ISA "Register Fragments", wgmma .m64nNk16 matrix
// A: warp w of the group holds rows 16w..16w+15 in the mma.m16n8k16 A layout: register j holds
// row groupID + 8 (j % 2), columns 2 threadID_in_group + 8 (j / 2), +1). The warp's lanes
// meet at the issue (the instruction is .sync.aligned) and each takes its rows of A from its
// quad; the registers must then hold the same values until the MMA retires (checked at the wait).
//
// Completion is as late as the ISA allows: an issued MMA runs at the wgmma.wait_group that
// retires its group, reading shared memory then, and its accumulator registers hold NaN until
// then (reading them early gives wrong values, not lucky ones); an MMA issued on registers that
// an MMA in flight writes takes that MMA's result (the hardware chains them), the registers
// holding each retired link's result meanwhile: a read through tp::wgmma_read while any MMA of
// the chain is in flight is an error.
//
// Undefined behavior reported as an error: a read of accumulator registers (tp::wgmma_read) that
// an MMA in flight still writes (a wgmma.wait_group that left its group running); an MMA issued
// without a wgmma.fence since its thread last got registers back from wgmma.wait_group (or
// ever), or since it wrote an A fragment register (tp::wgmma_wrote_a); A fragment registers
// that change while their MMA is in flight; an operand byte that a cp.async landed in and the
// copying thread has not passed a fence.proxy.async since (the async proxy may not see it), or
// that a cp.async.bulk.tensor in flight is still to write (cpu_tma.h); a thread that exits with
// MMAs in flight; a block whose threads are not whole warpgroups. A descriptor with a non-zero base offset is refused (not
// emulated).
//
// Fast mode (one thread per block) cannot run these: they are declared with an error attribute.
#pragma once

namespace tp { namespace cpu {

// The MMA's entry points, declared with attribute ATTR where they cannot be compiled (below).
#define TP_WGMMA_DECLARE(ATTR)                                                                  \
  ATTR void wgmma_commit();                                                                     \
  ATTR void wgmma_wait(int n, const Caller& at);                                                \
  ATTR void wgmma_read(const void* p, size_t bytes, const Caller& at);                          \
  ATTR void wgmma_async(float* d, int n, int kind, int trans_b, uint64_t a, uint64_t b, int acc); \
  ATTR void wgmma_async_ra(float* d, int n, int kind, int trans_b, const uint32_t* a, uint64_t b, \
                           int acc);

#if !defined(TP_FAITHFUL)
#define TP_FAST_ONLY_ERROR                                                                       \
  __attribute__((error("warpgroup MMA needs the faithful CPU mode (TILEPY_CPU_MODE=faithful); the " \
                       "fast mode runs one thread per block")))
TP_WGMMA_DECLARE(TP_FAST_ONLY_ERROR)
TP_FAST_ONLY_ERROR void wgmma_fence();
TP_FAST_ONLY_ERROR void wgmma_wrote_a();
#undef TP_FAST_ONLY_ERROR
#else

inline void wgmma_fence() { cur->wg_fenced = true; cur->wg_wrote_a = false; }

// The thread wrote registers a later MMA reads as its A fragment: a wgmma.fence must come between.
inline void wgmma_wrote_a() { cur->wg_fenced = false; cur->wg_wrote_a = true; }

#if defined(TP_SPLIT) && !TP_WGMMA
// A split kernel's translation unit of another class (and the support object) has no use for
// the emulation: it is not compiled there (its std::vector code was instantiated at the end of
// every faithful kernel's compile, 0.1 CPU-s). The sm_90a class (TP_WGMMA) and libraries built
// whole have it below.
#define TP_SM90A_ONLY_ERROR                                                                      \
  __attribute__((error("warpgroup MMA on the CPU needs the sm_90a class: define TP_WGMMA 1 "     \
                       "before including tilepy/runtime.h")))
TP_WGMMA_DECLARE(TP_SM90A_ONLY_ERROR)
TP_SM90A_ONLY_ERROR void proxy_fence();
#undef TP_SM90A_ONLY_ERROR
#else

constexpr int kProxyChunk = 16;   // the async proxy's visibility is tracked per 16 bytes
inline void check_landed(uint32_t off, const char* which, const Caller& at);   // cpu_tma.h: TMA copies in flight
inline void check_cp_async_landing(long off, int bytes);   // cpu_tma.h: TMA stores in flight

// A cp.async copy landed (cpu_warp.h, in the sm_90a class): its bytes are the thread's until
// it passes a fence.proxy.async.
inline void proxy_landed(void* dst, int bytes) {
  const long off = (unsigned char*)dst - dynamic_smem();
  if (off < 0 || off + bytes > (long)kMaxDynamicSmem) return;   // not dynamic shared memory
  check_cp_async_landing(off, bytes);
  auto& own = worker->proxy_owner;
  if (own.empty()) own.assign(kMaxDynamicSmem / kProxyChunk, -1);
  for (long c = off / kProxyChunk; c <= (off + bytes - 1) / kProxyChunk; ++c) own[c] = cur->lin;
  cur->unfenced.push_back((uint32_t)off);
}

inline void proxy_fence() {
  auto& own = worker->proxy_owner;
  for (uint32_t off : cur->unfenced)
    if (own[off / kProxyChunk] == cur->lin) own[off / kProxyChunk] = -1;
  cur->unfenced.clear();
}

// The shared-memory offset of element (mn, k) of a descriptor's matrix (mn: its row of A or
// column of B; k < 16); MN-major: the matrix is stored with mn contiguous.
inline uint32_t wgmma_addr(uint64_t desc, bool mn_major, int mn, int k, const char* which,
                           const Caller& at) {
  const uint32_t start = (uint32_t)(desc & 0x3fff) << 4, lbo = (uint32_t)((desc >> 16) & 0x3fff) << 4,
                 sbo = (uint32_t)((desc >> 32) & 0x3fff) << 4;
  const int mode = (int)(desc >> 62), swb = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  if ((desc >> 49) & 7)
    fail(std::string("wgmma.mma_async: the ") + which + " descriptor has a non-zero matrix base "
         "offset, which this emulation does not decode", at);
  uint32_t a;
  if (swb == 0 && !mn_major) a = start + (mn % 8) * 16 + (mn / 8) * sbo + (k % 8) * 2 + (k / 8) * lbo;
  else if (swb == 0) a = start + (mn % 8) * 2 + (mn / 8) * sbo + (k % 8) * 16 + (k / 8) * lbo;
  else if (!mn_major) a = start + (mn / 8) * sbo + (mn % 8) * swb + k * 2;
  else a = start + (mn / (swb / 2)) * lbo + (k / 8) * sbo + (k % 8) * swb + (mn % (swb / 2)) * 2;
  if (swb) a ^= ((a >> 7) & (uint32_t)(swb / 16 - 1)) << 4;
  if (a + 2 > kMaxDynamicSmem)
    fail(std::string("wgmma.mma_async: the ") + which + " operand reads shared-memory offset " +
         std::to_string(a) + ", outside the block's shared memory", at);
  const auto& own = worker->proxy_owner;
  if (!own.empty() && own[a / kProxyChunk] >= 0)
    fail(std::string("wgmma.mma_async reads ") + which + " operand bytes at shared-memory offset " +
         std::to_string(a) + " that thread " + std::to_string(own[a / kProxyChunk]) + " wrote (a "
         "cp.async that landed, or a store), and that thread has not executed fence.proxy.async "
         "since (the async proxy may not see them)", at);
  check_landed(a, which, at);
  return a;
}

inline float wgmma_value(int kind, uint32_t off) {
  uint16_t x;
  std::memcpy(&x, dynamic_smem() + off, 2);
  return kind == 1 ? half_value(x) : bf16_value(x);
}

inline void wgmma_run(WgmmaOp& op, const Caller& at) {
  const int tg = cur->lin % 128, l = tg % 32, r0 = 16 * (tg / 32) + l / 4;
  float A[2][16];
  if (op.a_regs && std::memcmp(op.a_regs, op.a_held, sizeof op.a_held))
    fail("the A fragment registers of a wgmma.mma_async changed while it was in flight (the "
         "MMA reads them until a wgmma.wait_group retires its group)", at);
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 16; ++k)
      A[h][k] = op.a_regs ? op.a[h][k] : wgmma_value(op.kind, wgmma_addr(op.da, false, r0 + 8 * h, k, "A", at));
  for (int j = 0; j < op.n / 8; ++j)
    for (int e = 0; e < 2; ++e) {
      const int col = 8 * j + 2 * (l % 4) + e;
      float B[16];
      for (int k = 0; k < 16; ++k) B[k] = wgmma_value(op.kind, wgmma_addr(op.db, op.trans_b, col, k, "B", at));
      for (int h = 0; h < 2; ++h) {
        const int i = 4 * j + 2 * h + e;
        double s = !op.acc ? 0.0 : op.chained ? op.d[i] : op.c[i];
        for (int k = 0; k < 16; ++k) s += (double)(A[h][k] * B[k]);
        op.d[i] = (float)s;
      }
    }
}

inline void wgmma_issue(WgmmaOp& op) {
  if (worker->nthreads % 128)
    fail("wgmma.mma_async: the block has " + std::to_string(worker->nthreads) + " threads, not "
         "whole warpgroups of 128");
  if (!cur->wg_fenced)
    fail(cur->wg_wrote_a ? "wgmma.mma_async without a wgmma.fence since the thread wrote the "
                           "registers of an A fragment (the fence orders them before the MMA)"
                         : "wgmma.mma_async without a wgmma.fence since the thread's registers "
                           "were last handed back by wgmma.wait_group (or written before the "
                           "first MMA)");
  for (const auto& g : cur->wg_groups)
    for (const WgmmaOp& o : g) op.chained |= o.d == op.d;
  for (const WgmmaOp& o : cur->wg_pending) op.chained |= o.d == op.d;
  if (!op.chained)   // (chained: the registers stay the chain's, whose ops write them in turn)
    for (int i = 0; i < op.n / 2; ++i) {
      op.c[i] = op.d[i];
      op.d[i] = f32_from_bits(0x7fc00000u);   // undefined until the wait: poison
    }
  cur->wg_pending.push_back(op);
}

inline void wgmma_async(float* d, int n, int kind, int trans_b, uint64_t a, uint64_t b, int acc) {
  WgmmaOp op{a, b, d, n, kind, trans_b, acc != 0, false, {}};
  wgmma_issue(op);
}

// The warp collective of a register-A wgmma (above cpu_warp.h's kinds), with its n and kind.
constexpr uint32_t kWgmmaA = 1u << 20;

// The warp's A fragments met (kWgmmaA): lane l gets rows l / 4 and l / 4 + 8 of its warp's A.
inline void wgmma_a_complete(Warp& W, uint32_t) {
  uint32_t pairs[16][8];   // [row][k / 2]: the .f16x2 / .bf16x2 of columns k, k + 1
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < 4; ++j) pairs[l / 4 + 8 * (j % 2)][l % 4 + 4 * (j / 2)] = W.slot[l].in[j];
  for (int l = 0; l < 32; ++l) {
    float* out = (float*)const_cast<void*>(W.slot[l].ptr);
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 16; ++k) {
        const uint32_t x = pairs[l / 4 + 8 * h][k / 2] >> (16 * (k % 2)) & 0xffffu;
        out[16 * h + k] = W.slot[l].arg0 == 1 ? half_value(x) : bf16_value(x);
      }
  }
}

inline void wgmma_async_ra(float* d, int n, int kind, int trans_b, const uint32_t* a, uint64_t b,
                           int acc) {
  WgmmaOp op{0, b, d, n, kind, trans_b, acc != 0, false, {}};
  op.a_regs = a;
  std::memcpy(op.a_held, a, sizeof op.a_held);
  Slot& s = warp_slot();
  for (int j = 0; j < 4; ++j) s.in[j] = a[j];
  s.arg0 = kind;
  s.ptr = &op.a[0][0];
  warp_collective(kWgmmaA | (uint32_t)n << 4 | (uint32_t)kind, "wgmma.mma_async (A in registers)",
                  0xffffffffu, true, wgmma_a_complete);
  wgmma_issue(op);
}

inline void wgmma_commit() {
  cur->wg_groups.push_back(std::move(cur->wg_pending));
  cur->wg_pending.clear();
}

// Wait until at most n committed groups are in flight: the older ones run now, in issue order.
inline void wgmma_wait(int n, const Caller& at) {
  auto& g = cur->wg_groups;
  const size_t done = g.size() > (size_t)n ? g.size() - (size_t)n : 0;
  for (size_t i = 0; i < done; ++i)
    for (WgmmaOp& op : g[i]) wgmma_run(op, at);
  g.erase(g.begin(), g.begin() + (long)done);
  cur->wg_fenced = false;
}

// The thread reads registers [p, p + bytes): none may be an accumulator an MMA in flight writes.
inline void wgmma_read(const void* p, size_t bytes, const Caller& at) {
  const char *lo = (const char*)p, *hi = lo + bytes;
  auto writes = [&](const WgmmaOp& o) {
    const char* d = (const char*)o.d;
    return d < hi && d + o.n / 2 * sizeof(float) > lo;
  };
  for (const auto& g : cur->wg_groups)
    for (const WgmmaOp& o : g)
      if (writes(o))
        fail("reading the accumulator of a wgmma.mma_async still in flight: its group was "
             "committed and no wgmma.wait_group has retired it yet (wait_group N leaves the "
             "newest N groups running; the registers are undefined until then)", at);
  for (const WgmmaOp& o : cur->wg_pending)
    if (writes(o))
      fail("reading the accumulator of a wgmma.mma_async not yet committed (no "
           "wgmma.commit_group and wgmma.wait_group retired it; the registers are undefined)", at);
}

// A thread exits: MMAs still in flight would write registers no one reads (cpu_fiber.h).
inline void wgmma_check_exit() {
  if (!cur->wg_groups.empty() || !cur->wg_pending.empty())
    fail("the thread exits with wgmma.mma_async operations in flight (no wgmma.wait_group "
         "retired them)");
}
#endif  // TP_SPLIT && !TP_WGMMA
#endif  // TP_FAITHFUL
#undef TP_WGMMA_DECLARE

}}  // namespace tp::cpu
