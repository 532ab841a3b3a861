#pragma once
// DDP_API marks what libddp exports. libddp is compiled with hidden visibility
// (CXX_VISIBILITY_PRESET hidden, VISIBILITY_INLINES_HIDDEN in src/CMakeLists.txt), so a class or
// function without it stays inside the library: internal code can change without breaking programs
// built against the installed headers. Classes that cross the boundary as types carry it too, not
// only their functions: exceptions (ddp::Error and its subclasses) and polymorphic bases
// (ddp::ProcessGroup, ddp::Store, ...) need one shared typeinfo for catch and dynamic_cast to work in
// the caller.
//
// The same definition serves building libddp and using it: with GCC and Clang "default" visibility
// both exports a definition and refers to an exported one.

#if defined(__GNUC__) || defined(__clang__)
#define DDP_API __attribute__((visibility("default")))
#else
#define DDP_API
#endif
