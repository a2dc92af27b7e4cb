// tilepy/ordered.h -- loads and stores with a memory ordering other than weak (load_view_tko /
// store_view_tko / load_ptr_tko / store_ptr_tko `relaxed`, `acquire`, `release`: cuTile's
// ct.load/ct.store memory_order), the PTX memory model's fence-based patterns:
//
//   * every element access is a strong (relaxed) one: a volatile access on the GPU (PTX treats
//     ld/st.volatile as relaxed at system scope, at least as strong as any scope asked), a
//     relaxed __atomic access on the CPU;
//   * acquire: the loads, then a fence of the op's scope and a block barrier (the block's other
//     threads' later accesses come after the acquire); release: a block barrier and a fence,
//     then the stores (every earlier access of the block's threads comes before them).
//
// Orders as atomics: 0 relaxed, 1 acquire, 2 release; scopes: 0 tile block, 1 device, 2 system.
#pragma once

#ifndef TP_ORDERED     // 0: left out (launch/nvrtc.py, for a kernel that does not use it)
#define TP_ORDERED 1
#endif
#if TP_ORDERED

namespace tp {

template <class T> struct strong_bits {     // the unsigned integer of T's size
  typedef typename cond<sizeof(T) == 1, uint8_t,
                        typename bits_of<sizeof(T) == 1 ? 2 : sizeof(T)>::type>::type type;
};

template <class T> TP_DEV T strong_load(const T* p) {
  typedef typename strong_bits<T>::type U;
#ifdef TP_GPU
  const U b = *(const volatile U*)p;
#else
  const U b = __atomic_load_n((const U*)p, __ATOMIC_RELAXED);
#endif
  if constexpr (same<T, bool>::value) {
    return b != 0;                                  // i1 is a byte; nonzero reads as 1
  } else {
    T r;
    memcpy(&r, &b, sizeof(T));
    return r;
  }
}

template <class T> TP_DEV void strong_store(T* p, T x) {
  typedef typename strong_bits<T>::type U;
  U b;
  if constexpr (same<T, bool>::value) b = x ? 1 : 0; else memcpy(&b, &x, sizeof(T));
#ifdef TP_GPU
  *(volatile U*)p = b;
#else
  __atomic_store_n((U*)p, b, __ATOMIC_RELAXED);
#endif
}

// the fences of acquire (after the loads) and release (before the stores)
template <int Order, int Scope> TP_DEV void acquire_fence() {
  if constexpr (Order == 1) {
#ifdef TP_GPU
    fence<Scope>();
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
    __syncthreads();
  }
}
template <int Order, int Scope> TP_DEV void release_fence() {
  if constexpr (Order == 2) {
    __syncthreads();
#ifdef TP_GPU
    fence<Scope>();
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
  }
}

template <class S, class DM, class L, int Order, int Scope, class T, int R>
TP_DEV Tile<T, S::numel, L> load_ordered(const View<T, R>& v, const int64_t (&idx)[R],
                                         T pad TP_VIEW_AT) {
  Tile<T, S::numel, L> r;
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) {
    if (!L::valid(s)) continue;
    const int64_t off = part_offset<S, DM>(v, idx, L::elem(s));
    r.v[s] = off >= 0 ? strong_load(TP_VADDR(v, off, 1, "a load")) : pad;
  }
  acquire_fence<Order, Scope>();
  return r;
}

template <class S, class DM, int Order, int Scope, class T, int R>
TP_DEV T load_scalar_ordered(const View<T, R>& v, const int64_t (&idx)[R], T pad TP_VIEW_AT) {
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  const T r = off >= 0 ? strong_load(TP_VADDR(v, off, 1, "a load")) : pad;
  acquire_fence<Order, Scope>();
  return r;
}

template <class S, class DM, int Order, int Scope, class T, int R, class L>
TP_DEV void store_ordered(const View<T, R>& v, const int64_t (&idx)[R],
                          const Tile<T, S::numel, L>& x TP_VIEW_AT) {
  release_fence<Order, Scope>();
  TP_UNROLL
  for (int s = 0; s < L::K; ++s) {
    if (!L::owner(s)) continue;
    const int64_t off = part_offset<S, DM>(v, idx, L::elem(s));
    if (off >= 0) strong_store(TP_VADDR(v, off, 1, "a store"), x.v[s]);
  }
}

template <class S, class DM, int Order, int Scope, class T, int R>
TP_DEV void store_scalar_ordered(const View<T, R>& v, const int64_t (&idx)[R], T x TP_VIEW_AT) {
  release_fence<Order, Scope>();
  if (tid() != 0) return;
  const int64_t off = part_offset<S, DM>(v, idx, 0);
  if (off >= 0) strong_store(TP_VADDR(v, off, 1, "a store"), x);
}

// through pointer tiles: runtime.h's load_ptr and store_ptr with strong accesses
struct strong_access {
  template <class T> static TP_DEV T load(const T* p) { return strong_load(p); }
  template <class T> static TP_DEV void store(T* p, T v) { strong_store(p, v); }
};
namespace op { typedef load_ptr_as<strong_access> load_ptr_strong; }

}  // namespace tp
#endif  // TP_ORDERED
