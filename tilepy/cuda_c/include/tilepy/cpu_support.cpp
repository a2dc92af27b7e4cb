// tilepy/cpu_support.cpp -- a split CPU library's support object (launch/cpu.py
// `support_object`): the launch machinery of cpu_shim.h and cpu_fiber.h, compiled once per
// compiler and flags, with -DTP_SPLIT -DTP_SUPPORT_TU, and linked into every kernel library
// built with those flags (whose own translation unit has -DTP_SPLIT: it declares the machinery).
#include "tilepy/runtime.h"
