// tilepy/cpu_context.h -- switching between fiber stacks for the faithful CPU mode.
//
//   context_init(c, stack, size, entry)   c starts `entry` (which never returns) on `stack`
//   context_switch(from, to)              save the running context in `from`, resume `to`
//
// On x86-64 and AArch64 a switch is a dozen instructions (tp_fiber_switch below: push the
// callee-saved registers, swap stack pointers, pop); elsewhere (or with TP_FIBER_UCONTEXT
// defined) it falls back to swapcontext, which is correct but makes a system call per switch.
#pragma once

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(TP_FIBER_UCONTEXT)
#define TP_FIBER_ASM 1
extern "C" __attribute__((visibility("hidden"))) void tp_fiber_switch(void** save_sp, void* next_sp);
#if defined(__x86_64__)
// System V: rbx, rbp, r12-r15, the x87 control word and MXCSR are preserved across calls.
asm(R"(
  .text
  .weak tp_fiber_switch
  .hidden tp_fiber_switch
  .type tp_fiber_switch, @function
tp_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tp_fiber_switch, .-tp_fiber_switch
)");
#else
// AAPCS64: x19-x29, the link register x30 and d8-d15 are preserved across calls.
asm(R"(
  .text
  .weak tp_fiber_switch
  .hidden tp_fiber_switch
  .type tp_fiber_switch, %function
tp_fiber_switch:
  sub sp, sp, #176
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x2, sp
  str x2, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #176
  ret
  .size tp_fiber_switch, .-tp_fiber_switch
)");
#endif
#else
#include <ucontext.h>
#endif

namespace tp { namespace cpu {

#if defined(TP_FIBER_ASM)
struct Context { void* sp = nullptr; };

// A new stack whose saved registers are zero and whose return address is `entry`.
inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
#if defined(__x86_64__)
  uint64_t* p = (uint64_t*)top;
  *--p = 0;                              // entry's own return address: never used
  *--p = (uint64_t)entry;                // popped by `ret`
  for (int i = 0; i < 6; ++i) *--p = 0;  // rbp rbx r12 r13 r14 r15
  p -= 2;                                // x87 control word and MXCSR: the current ones
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::memcpy(p, &fpucw, 2);
  std::memcpy((char*)p + 8, &mxcsr, 4);
  c.sp = p;
#else
  uint64_t* p = (uint64_t*)(top - 176);
  std::memset(p, 0, 176);
  p[11] = (uint64_t)entry;               // x30, the link register `ret` jumps to
  c.sp = p;
#endif
}

inline void context_switch(Context& from, Context& to) { tp_fiber_switch(&from.sp, to.sp); }
#else
struct Context { ucontext_t uc; };

inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

inline void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

}}  // namespace tp::cpu
