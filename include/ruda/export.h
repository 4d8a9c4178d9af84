/* ruda/export.h: which declarations the shared library exports.
 *
 * libruda.so is built with hidden visibility: only what the public headers
 * declare between RUDA_BEGIN_DECLS and RUDA_END_DECLS is exported, so the
 * internal ruda__* functions stay private to the library. The pair also
 * opens and closes the `extern "C"` block for C++ callers.
 *
 * RUDA_API marks a single declaration outside such a block. Both expand to
 * nothing special for compilers without GCC-style visibility.
 *
 * RUDA__COLD marks the functions that make errors: a branch that calls one
 * is compiled as the unlikely side, and its code moves out of the line of
 * the hot path. RUDA__HOT marks the library's functions on the path of
 * every small call (read, launch, sync, reserve, release): the compiler
 * puts them in .text.hot, which the linker lays out together, so a call
 * made after the program did other work touches a few pages of code
 * instead of twenty (docs/design/architecture.md). GCC and Clang; nothing
 * elsewhere.
 */
#ifndef RUDA_EXPORT_H
#define RUDA_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RUDA_API __attribute__((visibility("default")))
#define RUDA__VISIBILITY_PUSH _Pragma("GCC visibility push(default)")
#define RUDA__VISIBILITY_POP _Pragma("GCC visibility pop")
#define RUDA__COLD __attribute__((cold))
#define RUDA__HOT __attribute__((hot))
#else
#define RUDA_API
#define RUDA__VISIBILITY_PUSH
#define RUDA__VISIBILITY_POP
#define RUDA__COLD
#define RUDA__HOT
#endif

#ifdef __cplusplus
#define RUDA_BEGIN_DECLS extern "C" { RUDA__VISIBILITY_PUSH
#define RUDA_END_DECLS RUDA__VISIBILITY_POP }
#else
#define RUDA_BEGIN_DECLS RUDA__VISIBILITY_PUSH
#define RUDA_END_DECLS RUDA__VISIBILITY_POP
#endif

#endif /* RUDA_EXPORT_H */
