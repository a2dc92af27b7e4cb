// tilepy/cpu_stack.h -- stacks big enough for a kernel's tiles on the CPU.
//
// A tile is a local array of the kernel function (fast mode: all of it on one thread: a tile of
// 65536 doubles is 512 KiB), and a kernel keeps every tile it computed in its frame, so its
// frames can outgrow a thread's stack (8 MiB for Python's main thread, less for others) or a
// fiber's. Python measures the library's frames when it builds it (g++ -fstack-usage:
// launch/cpu.py) and tells the library once (`tp_cpu_stack`). Then:
//   fast mode       a worker whose own stack has less room than that runs its blocks on a stack
//                   mapped for it (kept for the thread's life, grown when a launch needs more);
//   faithful mode   every fiber's stack is at least that big (cpu_fiber.h).
// Stacks are mapped MAP_NORESERVE with a guard page below: only the pages touched are memory,
// and an overflow is a fault at the guard, never a write into other memory.
#pragma once
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#include "tilepy/cpu_context.h"

namespace tp { namespace cpu {

TP_VAR(size_t stack_need, = 0);                // bytes: the library's frames and a margin
constexpr size_t kStackMargin = 256 * 1024;     // libc, printf, the launch's own frames

inline size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }
inline size_t round_to_page(size_t n) { return (n + page_size() - 1) / page_size() * page_size(); }

// Room left on this thread's own stack (0 if the system does not say).
inline size_t stack_left() {
  static thread_local char* lowest = nullptr;
  static thread_local bool known = false;
  if (!known) {
    known = true;
    pthread_attr_t a;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      if (pthread_attr_getstack(&a, &addr, &size) == 0) lowest = (char*)addr;
      pthread_attr_destroy(&a);
    }
  }
  char here;
  return lowest && &here > lowest ? (size_t)(&here - lowest) : 0;
}

// A mapping with a guard page below `size` bytes of stack.
struct MappedStack {
  char* base = nullptr;                         // the guard page; the stack starts a page above
  size_t size = 0;
  bool map(size_t bytes) {
    release();
    const size_t n = round_to_page(bytes);
    void* p = mmap(nullptr, n + page_size(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    mprotect(p, page_size(), PROT_NONE);
    base = (char*)p;
    size = n;
    return true;
  }
  char* stack() const { return base + page_size(); }
  void release() {
    if (base) munmap(base, size + page_size());
    base = nullptr;
    size = 0;
  }
  ~MappedStack() { release(); }
};

struct StackCall {
  void (*run)(const void*);
  const void* arg;
  Context back, there;
};
TP_TLS_VAR(StackCall* stack_call, = nullptr);

inline void stack_entry() {
  StackCall* c = stack_call;
  c->run(c->arg);
  context_switch(c->there, c->back);            // never resumed: the next call starts afresh
}

// Run `body` with `stack_need` bytes of stack: on this thread's stack when it has the room, on
// the thread's mapped stack otherwise. False (body not run) when no such stack can be mapped.
template <class F> bool on_stack(const F& body) {
  if (stack_need <= kStackMargin || stack_left() > stack_need + kStackMargin) {
    body();
    return true;
  }
  static thread_local MappedStack mapped;
  if (mapped.size < stack_need && !mapped.map(stack_need)) return false;
  StackCall c{[](const void* b) { (*(const F*)b)(); }, &body, {}, {}};
  StackCall* outer = stack_call;
  stack_call = &c;
  context_init(c.there, mapped.stack(), mapped.size, stack_entry);
  context_switch(c.back, c.there);
  stack_call = outer;
  return true;
}

}}  // namespace tp::cpu

// Python sets the library's stack need once, after loading it (launch/cpu.py `library`).
extern "C" [[gnu::used]] inline void tp_cpu_stack(size_t bytes) { tp::cpu::stack_need = bytes; }
