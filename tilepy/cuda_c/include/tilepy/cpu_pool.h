// tilepy/cpu_pool.h -- the CPU backend's worker threads: one pool per process, kept between
// launches (a multi-block launch used to start and join its worker threads: tens of microseconds).
//
// The pool is a library of its own (launch/cpu.py `pool_library`: this header compiled once per
// host compiler with TP_POOL_LIBRARY, cached like a kernel), loaded before the first kernel
// library; Python passes its `tp_cpu_pool_run` to every launch (Report::pool). A kernel library
// sees only `Body` here: compiling the pool into every kernel cost each CPU build about 0.3 CPU-s
// of its 1.3 (g++, fast mode, vector add, with the precompiled header). A library saved by
// tilepy.aot carries a pool of its own (built with TP_POOL_LIBRARY too): the machine that loads
// it may have no compiler.
//
// A launch posts a job asking for `helpers` threads and runs the job's body itself; helpers join
// while the job is posted. The body is a loop that takes blocks until none is left, so the
// launching thread finishes the job alone if no helper comes (a descheduled helper delays nothing
// it has not started); then it withdraws the job and waits only for the helpers inside it. Jobs
// of concurrent launches (other libraries, other Python threads) queue; idle helpers take the
// oldest.
//
// An idle helper spins for kSpin (back-to-back launches find it awake), then sleeps on a condition
// variable (no CPU use while idle) and exits after kIdleExit asleep. Helpers block asynchronous
// signals, so Ctrl-C reaches the launching thread. A thread the system refuses to start is skipped
// (fewer helpers). After fork() the child starts a pool of its own (pthread_atfork): the parent's
// helpers do not exist there, and its pool's lock may have been held.
#pragma once

namespace tp { namespace cpu { namespace pool {
using Body = void (*)(void*);
// The pool's entry: run fn(arg) on the calling thread and on up to `helpers` pool threads.
using Run = void (*)(int helpers, Body fn, void* arg);
}}}  // namespace tp::cpu::pool

#if defined(TP_POOL_LIBRARY)
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

namespace tp { namespace cpu { namespace pool {

constexpr int kMaxHelpers = 1023;                        // Python clamps workers to 1024
constexpr auto kSpin = std::chrono::microseconds(100);
constexpr auto kIdleExit = std::chrono::seconds(30);

struct Job {
  Body fn;
  void* arg;
  int wanted;                       // helpers it still takes (0: withdrawn or full)
  std::atomic<int> running{0};      // helpers inside fn (changed under the lock)
  Job* next = nullptr;
};

struct State {
  std::mutex m;
  std::condition_variable work, done;
  Job* jobs = nullptr;              // jobs still taking helpers, oldest first
  int threads = 0, idle = 0, sleeping = 0, wanted = 0;
  std::atomic<unsigned> posted{0};  // bumped by every job: what spinning helpers watch
};

// Internal linkage: a saved library's pool stays its own (used only if Python picked it).
// Never destroyed: helpers may still sleep on it while the process exits.
static std::atomic<State*> state_{nullptr};
static std::once_flag atfork_once_;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spin until `until()` or kSpin has passed; true if `until()` held.
template <class P> bool spin(const P& until) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (until()) return true;
      relax();
    }
  } while (std::chrono::steady_clock::now() < end);
  return until();
}

// The oldest job's next helper slot (lock held), or null.
inline Job* take(State& s) {
  Job* j = s.jobs;
  if (!j) return nullptr;
  j->running.fetch_add(1);
  --s.wanted;
  if (--j->wanted == 0) s.jobs = j->next;
  return j;
}

inline void withdraw(State& s, Job& j) {
  if (j.wanted == 0) return;
  for (Job** p = &s.jobs; *p; p = &(*p)->next)
    if (*p == &j) { *p = j.next; break; }
  s.wanted -= j.wanted;
  j.wanted = 0;
}

inline void helper(State* sp) {
  State& s = *sp;
  std::unique_lock<std::mutex> lk(s.m);
  for (;;) {
    if (Job* j = take(s)) {
      --s.idle;
      lk.unlock();
      j->fn(j->arg);
      lk.lock();
      ++s.idle;
      if (j->running.fetch_sub(1) == 1) s.done.notify_all();   // j may be gone after unlock
      continue;
    }
    const unsigned seen = s.posted.load();
    lk.unlock();
    spin([&] { return s.posted.load(std::memory_order_relaxed) != seen; });
    lk.lock();
    if (s.jobs) continue;
    ++s.sleeping;
    const bool woken = s.work.wait_for(lk, kIdleExit, [&] { return s.jobs != nullptr; });
    --s.sleeping;
    if (!woken) break;
  }
  --s.threads;
  --s.idle;
}

// Start helpers (lock held) while fewer are idle than the queued jobs take.
inline void grow(State& s) {
  sigset_t async, old;
  sigfillset(&async);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigdelset(&async, sig);
  bool masked = false;
  while (s.idle < s.wanted && s.threads < kMaxHelpers) {
    if (!masked) masked = pthread_sigmask(SIG_BLOCK, &async, &old) == 0;   // the new thread's mask
    try {
      std::thread(helper, &s).detach();
    } catch (const std::system_error&) {
      break;                                           // the system refuses: fewer helpers
    }
    ++s.threads;
    ++s.idle;
  }
  if (masked) pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

inline State& state() {
  if (State* p = state_.load(std::memory_order_acquire)) return *p;
  std::call_once(atfork_once_, [] { pthread_atfork(nullptr, nullptr, [] { state_ = nullptr; }); });
  State* fresh = new State;
  State* none = nullptr;
  if (state_.compare_exchange_strong(none, fresh)) return *fresh;
  delete fresh;                                        // another thread made it first
  return *none;
}
}}}  // namespace tp::cpu::pool

// Run fn(arg) on this thread and on up to `helpers` pool threads; fn must end by itself once the
// work is taken (a helper may join at any time until this thread's fn returns).
extern "C" [[gnu::used, gnu::visibility("default")]] void tp_cpu_pool_run(int helpers, tp::cpu::pool::Body fn, void* arg) {
  using namespace tp::cpu::pool;
  if (helpers <= 0) return fn(arg);
  State& s = state();
  Job j{fn, arg, helpers};
  {
    std::lock_guard<std::mutex> g(s.m);
    Job** tail = &s.jobs;
    while (*tail) tail = &(*tail)->next;
    *tail = &j;
    s.wanted += helpers;
    s.posted.fetch_add(1);
    grow(s);
    if (s.sleeping) helpers == 1 ? s.work.notify_one() : s.work.notify_all();
  }
  fn(arg);
  {
    std::lock_guard<std::mutex> g(s.m);
    withdraw(s, j);
  }
  if (spin([&] { return j.running.load() == 0; })) return;
  std::unique_lock<std::mutex> lk(s.m);
  s.done.wait(lk, [&] { return j.running.load() == 0; });
}
#endif  // TP_POOL_LIBRARY
