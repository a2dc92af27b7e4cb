// tilepy/cpu_tma.h -- sm_90a's tensor memory accelerator and mbarriers on the CPU, behind tma.h.
//
// The tensor map. On a GPU a CUtensorMap is the driver's opaque encoding; a CPU build reads the
// one the CPU backend's host code encodes instead (launch/tensor_map.py `cpu_tensor_map`, the
// fake driver's cuTensorMapEncodeTiled), with the same fields: this layout, little-endian:
//   0 u32 magic 'TPTM' | 4 u8 rank | 5 u8 data type (CUtensorMapDataType) | 6 u8 swizzle
//   (CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B) | 7 u8 OOB fill (0: zeros) | 8 u64 base
//   | 16 u32 dims[5] (innermost first) | 40 u64 strides[4] (bytes, of dims 1..) | 72 u16 box[5]
//   | 82 u8 element strides[5] | 87 u8 interleave | 88 u8 L2 promotion.
//
// cp.async.bulk.tensor: the box at the coordinates (innermost first, signed) is copied to
// shared memory row-major (dim 0 fastest), elements outside the tensor as zeros, the 16-byte
// chunks of each row XORed with the row's 128-byte line as the swizzle mode says (Swizzle<B, 4,
// 3> on the address bits, as wgmma's descriptors read them); its bytes count as transactions
// on the mbarrier (complete_tx).
//
// mbarrier: its 8 bytes hold the state here too: pending transaction bytes (signed, bits 0-20),
// pending arrivals (21-32), expected arrivals (33-44), the phase number mod 256 (45-52) and a
// tag (53-63), so memory that was never initialized (shared memory starts as 0xff bytes) is no
// mbarrier. A phase completes when its arrivals and its transaction bytes are both in; then
// the next one starts. try_wait.parity p succeeds once the phase before the current one has
// parity p (PTX ISA: the current phase is incomplete, the one before it complete).
//
// Faithful mode: a copy completes as late as allowed -- when a thread waits on its mbarrier's
// phase and would otherwise block, or a thread is already blocked there -- and until then its
// destination bytes are marked: wgmma reading them is reported (the mbarrier was waited on with
// the wrong parity: a wait for the previous phase passes at once). A wait that can never
// complete is a deadlock (cpu_fiber.h reports what every thread waits for); a thread that exits
// with copies into shared memory in flight is reported. Fast mode (one thread): a copy
// completes when issued; a wait that cannot succeed is reported instead of spinning forever.
//
// The TMA store (cp.async.bulk.tensor shared -> global, bulk groups): the box is read from shared
// memory as the load writes it (the same swizzle) and its elements inside the tensor written;
// those outside are not (clipped). Faithful mode: it runs as late as allowed, at the
// cp.async.bulk.wait_group.read of its thread that retires its group; until then its source
// chunks are marked, and a thread's write of them (smem_write) or a TMA load into them is
// reported, as is its issue while a chunk holds a thread's write not yet behind that thread's
// fence.proxy.async (cpu_wgmma.h's tracking of cp.async), a cp.async of any thread still to land
// in its chunks when it is issued or runs, or landing there while it is in flight, and a thread
// exiting with one in flight.
// Fast mode: a store runs when issued.
#pragma once

namespace tp {   // (the GPU's is 64-byte aligned; by value on the CPU, 8 is enough)
struct TensorMap { uint64_t opaque[16]; };
}

namespace tp { namespace cpu {

inline int map_elem_bytes(int dtype) {
  static const int size[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return dtype >= 0 && dtype < 13 ? size[dtype] : 0;
}

// ---------------------------------------------------------------------------- mbarrier words
constexpr uint64_t kMbarTag = 0x5a5;
inline bool mbar_valid(uint64_t s) { return (s >> 53) == kMbarTag; }
inline int32_t mbar_tx(uint64_t s) { return (int32_t)((uint32_t)(s << 11) >> 11 ^ 0x100000u) - 0x100000; }
inline int mbar_pending(uint64_t s) { return (int)(s >> 21 & 0xfff); }
inline int mbar_expected(uint64_t s) { return (int)(s >> 33 & 0xfff); }
inline int mbar_phase(uint64_t s) { return (int)(s >> 45 & 0xff); }
inline uint64_t mbar_word(int32_t tx, int pending, int expected, int phase) {
  return ((uint64_t)(uint32_t)tx & 0x1fffff) | (uint64_t)pending << 21 | (uint64_t)expected << 33 |
         (uint64_t)(phase & 0xff) << 45 | kMbarTag << 53;
}

#if TP_SUPPORT_BODY || TP_WGMMA
TP_REPORT inline std::string mbar_name(const uint64_t* bar) {
  const long off = (const unsigned char*)bar - dynamic_smem();
  return off >= 0 && off < (long)kMaxDynamicSmem
             ? "the mbarrier at dynamic shared byte " + std::to_string(off)
             : "the mbarrier at " + std::to_string((uintptr_t)bar % 4096) + " (mod 4096) of static "
               "shared memory";
}
#endif

#if defined(TP_SPLIT) && !TP_WGMMA
// A split kernel's translation unit of another class (and the support object) has no use for
// the emulation: it is not compiled there (its std::string and std::vector code was instantiated
// at the end of every kernel's compile). The sm_90a class (TP_WGMMA) and libraries built whole
// have it below.
#define TP_SM90A_ONLY_ERROR                                                                      \
  __attribute__((error("TMA and mbarriers on the CPU need the sm_90a class: define TP_WGMMA 1 "  \
                       "before including tilepy/runtime.h")))
TP_SM90A_ONLY_ERROR void mbar_update(uint64_t* bar, int arrivals, int32_t tx, const char* what,
                                     const Caller& at);
TP_SM90A_ONLY_ERROR void mbar_init(uint64_t* bar, int count, const Caller& at);
TP_SM90A_ONLY_ERROR void mbar_inval(uint64_t* bar);
TP_SM90A_ONLY_ERROR void mbar_wait(uint64_t* bar, uint32_t parity, const Caller& at);
TP_SM90A_ONLY_ERROR void bulk_copy(const TensorMap& map, unsigned char* dst, uint64_t* bar,
                                   const int32_t* c, int rank, const Caller& at);
TP_SM90A_ONLY_ERROR void bulk_store(const TensorMap& map, const unsigned char* src,
                                    const int32_t* c, int rank, const Caller& at);
TP_SM90A_ONLY_ERROR void bulk_commit();
TP_SM90A_ONLY_ERROR void bulk_wait_read(int n, const Caller& at);
TP_SM90A_ONLY_ERROR void smem_written(void* dst, int bytes, const Caller& at);
#undef TP_SM90A_ONLY_ERROR
#else
// An error of the emulation, at the user's line: the faithful mode ends the block (never
// returns); the fast mode records it and returns false (the caller skips the operation).
TP_REPORT inline bool tma_fail(const std::string& msg, const Caller& at);

inline uint64_t mbar_state(const uint64_t* bar, const char* what, const Caller& at) {
  const uint64_t s = (uintptr_t)bar % 8 ? 0 : *bar;
  if (!mbar_valid(s))
    tma_fail(std::string(what) + " on " + mbar_name(bar) + ", which mbarrier.init did not "
             "initialize (or mbarrier.inval invalidated), or not 8-byte aligned", at);
  return s;
}

inline void mbar_phase_done(uint64_t* bar);   // below: wakes the threads waiting for the phase

// Arrivals and transactions: the phase completes when both are in.
inline void mbar_update(uint64_t* bar, int arrivals, int32_t tx, const char* what, const Caller& at) {
  const uint64_t s = mbar_state(bar, what, at);
  if (!mbar_valid(s)) return;
  const int pending = mbar_pending(s) - arrivals;
  if (pending < 0) {
    tma_fail(std::string(what) + " on " + mbar_name(bar) + ": more arrivals than its phase "
             "expects (" + std::to_string(mbar_expected(s)) + ")", at);
    return;
  }
  const int32_t left = mbar_tx(s) + tx;
  if (pending == 0 && left == 0) {
    *bar = mbar_word(0, mbar_expected(s), mbar_expected(s), mbar_phase(s) + 1);
    mbar_phase_done(bar);
  } else {
    *bar = mbar_word(left, pending, mbar_expected(s), mbar_phase(s));
  }
}

inline void mbar_init(uint64_t* bar, int count, const Caller& at) {
  if ((uintptr_t)bar % 8 || count < 1 || count > 4095)
    tma_fail("mbarrier.init with arrival count " + std::to_string(count) + " or an address that "
             "is not 8-byte aligned", at);
  else
    *bar = mbar_word(0, count, count, 0);
}
inline void mbar_inval(uint64_t* bar) { *bar = 0; }

// ---------------------------------------------------------------------------- the copy

inline bool map_ok(const MapFields& m, const Caller& at) {
  if (m.magic == kTensorMapMagic && m.rank >= 1 && m.rank <= 5 && map_elem_bytes(m.dtype))
    return true;
  return tma_fail("cp.async.bulk.tensor: the tensor map was not encoded for this CPU build "
             "(cuTensorMapEncodeTiled's map; a zero map is passed where the kernel's class "
             "does not use TMA)", at);
}

inline uint32_t box_bytes(const MapFields& m) {
  uint32_t n = (uint32_t)map_elem_bytes(m.dtype);
  for (int d = 0; d < m.rank; ++d) n *= m.box[d];
  return n;
}

// The global bytes a tensor map spans must lie in its array (faithful: the launch's extents).
inline bool check_map_extent(const MapFields& m, const Caller& at) {
  if (nextents < 0) return true;
  uint64_t hi = (uint64_t)map_elem_bytes(m.dtype) * m.dims[0];
  for (int d = 1; d < m.rank; ++d) hi += (uint64_t)(m.dims[d] - 1) * m.strides[d - 1];
  return address_ok((const void*)m.base, hi) ||
         tma_fail("cp.async.bulk.tensor: the tensor map spans " + std::to_string(hi) + " bytes "
                  "from its base, outside every array argument", at);
}

// A load (bar set): the box into shared memory, zeros outside the tensor; a store (bar nullptr):
// from shared memory into the tensor, elements outside it not written.
inline void bulk_copy_run(const BulkCopy& k) {
  const MapFields& m = k.m;
  const int eb = map_elem_bytes(m.dtype), R = m.rank;
  const int swb = m.swizzle == 3 ? 128 : m.swizzle == 2 ? 64 : m.swizzle == 1 ? 32 : 0;
  uint32_t n[5] = {1, 1, 1, 1, 1};
  for (int d = 0; d < R; ++d) n[d] = m.box[d];
  unsigned char* const smem = dynamic_smem();
  const uintptr_t origin = (uintptr_t)(k.dst - smem);   // the swizzle reads shared addresses
  for (uint32_t i4 = 0; i4 < n[4]; ++i4)
    for (uint32_t i3 = 0; i3 < n[3]; ++i3)
      for (uint32_t i2 = 0; i2 < n[2]; ++i2)
        for (uint32_t i1 = 0; i1 < n[1]; ++i1)
          for (uint32_t i0 = 0; i0 < n[0]; ++i0) {
            const uint32_t i[5] = {i0, i1, i2, i3, i4};
            bool in = true;
            uint64_t off = 0;
            for (int d = 0; d < R; ++d) {
              const int64_t g = (int64_t)k.c[d] + i[d];
              in &= g >= 0 && g < (int64_t)m.dims[d];
              off += d ? (uint64_t)g * m.strides[d - 1] : (uint64_t)g * eb;
            }
            const uint64_t lin = (((((uint64_t)i4 * n[3] + i3) * n[2] + i2) * n[1] + i1) * n[0] + i0) * eb;
            uintptr_t a = origin + lin;
            if (swb) a ^= ((a >> 7) & (uintptr_t)(swb / 16 - 1)) << 4;
            if (!k.bar) {
              if (in) std::memcpy((void*)(m.base + off), smem + a, eb);
            } else if (in) {
              std::memcpy(smem + a, (const void*)(m.base + off), eb);
            } else {
              std::memset(smem + a, 0, eb);
            }
          }
}

// The copy is well formed: its map (rank), shared memory (128-byte aligned, in the block's
// dynamic shared memory) and the global bytes its map spans.
inline bool bulk_copy_check(const BulkCopy& k, int rank, const Caller& at) {
  if (!map_ok(k.m, at)) return false;
  if (k.m.rank != rank)
    return tma_fail("cp.async.bulk.tensor." + std::to_string(rank) + "d with a tensor map of rank " +
                    std::to_string(k.m.rank), at);
  const long off = k.dst - dynamic_smem();
  if ((uintptr_t)k.dst % 128 || off < 0 || off + (long)k.bytes > (long)kMaxDynamicSmem)
    return tma_fail(std::string("cp.async.bulk.tensor: the shared-memory ") +
                    (k.bar ? "destination" : "source") + " (byte " +
                    std::to_string(off) + ", " + std::to_string(k.bytes) + " bytes) is not 128-byte "
                    "aligned inside the block's dynamic shared memory", at);
  return check_map_extent(k.m, at);
}

inline BulkCopy bulk_copy_of(const TensorMap& map, unsigned char* dst, uint64_t* bar,
                             const int32_t* c, int rank, int thread, const Caller& at) {
  BulkCopy k{*(const MapFields*)&map, {}, dst, bar, 0, thread, at};
  for (int d = 0; d < rank && d < 5; ++d) k.c[d] = c[d];
  k.bytes = box_bytes(k.m);
  return k;
}
#endif  // TP_SPLIT && !TP_WGMMA

}}  // namespace tp::cpu

#if defined(TP_FAITHFUL)
namespace tp { namespace cpu {

#if TP_SUPPORT_BODY || TP_WGMMA
inline std::vector<BulkCopy>& inflight() { return worker->tma_inflight; }
#endif

#if TP_SUPPORT_BODY
// What the scheduler reports (cpu_fiber.h: deadlock_report, lane_exit).
TP_REPORT inline std::string mbar_wait_report(const Ctx& c) {
  const uint64_t s = *c.mbar;
  std::string out = "wait on " + mbar_name(c.mbar) + " for phase parity " +
                    std::to_string(c.mbar_parity);
  if (c.mbar_line) out += " (line " + std::to_string(c.mbar_line) + ")";
  if (!mbar_valid(s)) return out + ", no longer an mbarrier";
  return out + "; its phase " + std::to_string(mbar_phase(s)) + " awaits " +
         std::to_string(mbar_pending(s)) + " arrival(s) and " + std::to_string(mbar_tx(s)) +
         " transaction byte(s)";
}

inline void tma_check_exit() {
  for (const BulkCopy& k : inflight())
    if (k.thread == cur->lin && !k.bar)
      fail("the thread exits with a TMA store (cp.async.bulk.tensor from shared memory) in "
           "flight: no cp.async.bulk.wait_group.read retired its bulk group, and the block's "
           "shared memory ends with it", k.at);
    else if (k.thread == cur->lin)
      fail("the thread exits with a cp.async.bulk.tensor into shared memory in flight (no "
           "thread waited on " + mbar_name(k.bar) + " for it)", k.at);
}
#endif

#if !defined(TP_SPLIT) || TP_WGMMA
TP_REPORT inline bool tma_fail(const std::string& msg, const Caller& at) { fail(msg, at); }

// The mark of shared-memory chunks that a TMA store in flight reads.
inline const uint64_t* store_mark() {
  static const uint64_t mark = 0;
  return &mark;
}

// Shared-memory chunks (16 bytes) of copies in flight: a load's destination, the mbarrier it
// completes on; a store's source, store_mark().
inline void mark_inflight(const BulkCopy& k, bool on) {
  auto& own = worker->tma_owner;
  if (own.empty()) own.assign(kMaxDynamicSmem / 16, nullptr);
  const long off = k.dst - dynamic_smem();
  for (long c = off / 16; c <= (off + (long)k.bytes - 1) / 16; ++c)
    own[c] = !on ? nullptr : k.bar ? k.bar : store_mark();
}

// The TMA store in flight that reads shared-memory chunk c (there is one where it is marked).
inline const BulkCopy* store_of(long c) {
  for (const BulkCopy& k : inflight()) {
    const long off = k.dst - dynamic_smem();
    if (!k.bar && c >= off / 16 && c <= (off + (long)k.bytes - 1) / 16) return &k;
  }
  return nullptr;
}
inline int store_line(long c) { const BulkCopy* k = store_of(c); return k ? k->at.line : 0; }

// A cp.async of any thread that has not landed (its group not waited for) into [off, off +
// bytes) of shared memory: its thread and shared-memory offset, or thread -1.
inline int cp_async_pending_in(long off, long bytes, long& where) {
  unsigned char* const smem = dynamic_smem();
  for (int t = 0; t < worker->nthreads; ++t) {
    const Ctx& c = worker->fibers[t].ctx;
    auto in = [&](const CpAsync& k) {
      where = (unsigned char*)k.dst - smem;
      return where < off + bytes && off < where + k.bytes;
    };
    for (const CpAsync& k : c.cp_pending)
      if (in(k)) return t;
    for (const auto& g : c.cp_groups)
      for (const CpAsync& k : g)
        if (in(k)) return t;
  }
  return -1;
}

// TMA store k reads its shared memory (issued, or run at its wait_group.read): no cp.async may
// still write it.
inline void check_store_source(const BulkCopy& k, const char* when, const Caller& at) {
  long where = 0;
  const int t = cp_async_pending_in(k.dst - dynamic_smem(), k.bytes, where);
  if (t >= 0)
    fail(std::string("a TMA store (cp.async.bulk.tensor") + when + ") reads shared-memory bytes "
         "at offset " + std::to_string(where) + " that a cp.async of thread " + std::to_string(t) +
         " has not written yet: no cp.async.wait_group of that thread landed it first", at);
}

// A cp.async lands in [off, off + bytes) (cpu_warp.h cp_async_wait, through proxy_landed): no
// TMA store may still read it (reported at the store's line: the wait names none).
inline void check_cp_async_landing(long off, int bytes) {
  const auto& own = worker->tma_owner;
  if (own.empty()) return;
  for (long c = off / 16; c <= (off + bytes - 1) / 16; ++c)
    if (own[c] == store_mark())
      fail("a cp.async of thread " + std::to_string(cur->lin) + " lands in shared-memory bytes "
           "at offset " + std::to_string(c * 16) + " that this TMA store (cp.async.bulk.tensor) "
           "still reads: no cp.async.bulk.wait_group.read has retired its bulk group",
           store_of(c)->at);
}

// [off, off + bytes) of shared memory is written (by `what`): no TMA store may still read it.
inline void check_store_read(long off, long bytes, const char* what, const Caller& at) {
  const auto& own = worker->tma_owner;
  if (own.empty()) return;
  for (long c = off / 16; c <= (off + bytes - 1) / 16; ++c)
    if (own[c] == store_mark())
      fail(std::string(what) + " shared-memory bytes at offset " + std::to_string(c * 16) +
           " that a TMA store (cp.async.bulk.tensor, line " + std::to_string(store_line(c)) +
           ") still reads: no cp.async.bulk.wait_group.read has retired its bulk group", at);
}

// Complete every copy in flight on `bar` (its transactions come in: the phase may complete).
inline void bulk_complete(uint64_t* bar) {
  auto& v = inflight();
  for (size_t i = 0; i < v.size();) {
    if (v[i].bar != bar) { ++i; continue; }
    const BulkCopy k = v[i];
    v.erase(v.begin() + (long)i);
    bulk_copy_run(k);
    mark_inflight(k, false);
    mbar_update(bar, 0, -(int32_t)k.bytes, "cp.async.bulk.tensor's complete_tx", k.at);
  }
}

inline bool blocked_on(const uint64_t* bar) {
  for (int t = 0; t < worker->nthreads; ++t)
    if (worker->fibers[t].state == State::at_mbarrier && worker->fibers[t].ctx.mbar == bar) return true;
  return false;
}

inline void mbar_phase_done(uint64_t* bar) {
  const int phase = mbar_phase(*bar);
  for (int t = 0; t < worker->nthreads; ++t) {
    Fiber& f = worker->fibers[t];
    if (f.state == State::at_mbarrier && f.ctx.mbar == bar && (phase & 1) != (int)f.ctx.mbar_parity)
      f.state = State::runnable;
  }
}

inline void bulk_copy(const TensorMap& map, unsigned char* dst, uint64_t* bar, const int32_t* c,
                      int rank, const Caller& at) {
  const BulkCopy k = bulk_copy_of(map, dst, bar, c, rank, cur->lin, at);
  bulk_copy_check(k, rank, at);
  mbar_state(bar, "cp.async.bulk.tensor", at);
  check_store_read(k.dst - dynamic_smem(), k.bytes, "a cp.async.bulk.tensor load writes", at);
  inflight().push_back(k);
  mark_inflight(k, true);
  if (blocked_on(bar)) bulk_complete(bar);     // a thread waits for it already: it lands now
}

// The wgmma emulation reads operand byte `off`: not while a copy into it is in flight.
inline void check_landed(uint32_t off, const char* which, const Caller& at) {
  const auto& own = worker->tma_owner;
  if (own.empty() || !own[off / 16] || own[off / 16] == store_mark()) return;
  fail(std::string("wgmma.mma_async reads ") + which + " operand bytes at shared-memory offset " +
       std::to_string(off) + " that a cp.async.bulk.tensor has not written yet: no thread waited "
       "for the phase of " + mbar_name(own[off / 16]) + " that completes it (a try_wait.parity "
       "on the wrong parity passes at once: the phase of a stage's n-th fill has parity n % 2)", at);
}

inline void mbar_wait(uint64_t* bar, uint32_t parity, const Caller& at) {
  if ((mbar_phase(mbar_state(bar, "mbarrier.try_wait.parity", at)) & 1) != (int)parity) return;
  bulk_complete(bar);                           // as late as allowed: now or never
  if ((mbar_phase(*bar) & 1) != (int)parity) return;
  cur->mbar = bar;
  cur->mbar_parity = parity;
  cur->mbar_line = at.line;
  cur->fiber->state = State::at_mbarrier;
  suspend();
  cur->mbar = nullptr;
}

// A TMA store: its shared memory must hold no thread's write that the writer has not fenced
// for the async proxy; it runs at the wait that retires its group.
inline void bulk_store(const TensorMap& map, const unsigned char* src, const int32_t* c, int rank,
                       const Caller& at) {
  const BulkCopy k = bulk_copy_of(map, const_cast<unsigned char*>(src), nullptr, c, rank, cur->lin, at);
  bulk_copy_check(k, rank, at);
  const long off = k.dst - dynamic_smem();
  const auto& proxy = worker->proxy_owner;
  const auto& own = worker->tma_owner;
  for (long ch = off / 16; ch <= (off + (long)k.bytes - 1) / 16; ++ch) {
    if (!proxy.empty() && proxy[ch] >= 0)
      fail("a TMA store (cp.async.bulk.tensor) reads shared-memory bytes at offset " +
           std::to_string(ch * 16) + " that thread " + std::to_string(proxy[ch]) + " wrote, and "
           "that thread has not executed fence.proxy.async since (the async proxy may not see "
           "them)", at);
    if (!own.empty() && own[ch] && own[ch] != store_mark())
      fail("a TMA store (cp.async.bulk.tensor) reads shared-memory bytes at offset " +
           std::to_string(ch * 16) + " that a cp.async.bulk.tensor load has not written yet", at);
  }
  check_store_source(k, "", at);
  inflight().push_back(k);
  mark_inflight(k, true);
}

// cp.async.bulk.commit_group: the thread's stores not yet in a group make its next one.
inline void bulk_commit() {
  int next = 0;
  for (const BulkCopy& k : inflight())
    if (!k.bar && k.thread == cur->lin && k.group >= next) next = k.group + 1;
  for (BulkCopy& k : inflight())
    if (!k.bar && k.thread == cur->lin && k.group < 0) k.group = next;
}

// cp.async.bulk.wait_group.read n: all but the thread's newest n groups run now, in issue order.
inline void bulk_wait_read(int n, const Caller& at) {
  auto& v = inflight();
  int newest = -1;
  for (const BulkCopy& k : v)
    if (!k.bar && k.thread == cur->lin && k.group > newest) newest = k.group;
  for (size_t i = 0; i < v.size();) {
    const BulkCopy k = v[i];
    if (k.bar || k.thread != cur->lin || k.group < 0 || k.group > newest - n) { ++i; continue; }
    check_store_source(k, ", run at this wait", at);
    v.erase(v.begin() + (long)i);
    mark_inflight(k, false);
    for (const BulkCopy& o : v)   // (another store in flight reading the same chunks keeps them)
      if (!o.bar) mark_inflight(o, true);
    bulk_copy_run(k);
  }
}

// A thread writes shared memory that the async proxy reads next (tma.h smem_write).
inline void smem_written(void* dst, int bytes, const Caller& at) {
  check_store_read((unsigned char*)dst - dynamic_smem(), bytes, "a thread writes", at);
  proxy_landed(dst, bytes);
}
#endif  // !TP_SPLIT || TP_WGMMA

}}  // namespace tp::cpu
#elif !defined(TP_SPLIT) || TP_WGMMA
namespace tp { namespace cpu {

TP_REPORT inline bool tma_fail(const std::string& msg, const Caller& at) {
  set_error(msg, at.file, at.line);
  return false;
}
inline void mbar_phase_done(uint64_t*) {}

inline void bulk_copy(const TensorMap& map, unsigned char* dst, uint64_t* bar, const int32_t* c,
                      int rank, const Caller& at) {
  const BulkCopy k = bulk_copy_of(map, dst, bar, c, rank, 0, at);
  if (!bulk_copy_check(k, rank, at)) return;
  bulk_copy_run(k);
  mbar_update(bar, 0, -(int32_t)k.bytes, "cp.async.bulk.tensor's complete_tx", at);
}

// A TMA store runs when issued (one thread: nothing reads or writes its memory meanwhile).
inline void bulk_store(const TensorMap& map, const unsigned char* src, const int32_t* c, int rank,
                       const Caller& at) {
  const BulkCopy k = bulk_copy_of(map, const_cast<unsigned char*>(src), nullptr, c, rank, 0, at);
  if (bulk_copy_check(k, rank, at)) bulk_copy_run(k);
}
inline void bulk_commit() {}
inline void bulk_wait_read(int, const Caller&) {}

inline void mbar_wait(uint64_t* bar, uint32_t parity, const Caller& at) {
  const uint64_t s = mbar_state(bar, "mbarrier.try_wait.parity", at);
  if ((mbar_phase(s) & 1) == (int)parity)
    tma_fail("deadlock: the wait on " + mbar_name(bar) + " for phase parity " +
             std::to_string(parity) + " can never complete: its phase " +
             std::to_string(mbar_phase(s)) + " awaits " + std::to_string(mbar_pending(s)) +
             " arrival(s) and " + std::to_string(mbar_tx(s)) + " transaction byte(s)", at);
}

}}  // namespace tp::cpu
#endif
