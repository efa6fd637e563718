/* SPDX-License-Identifier: MIT */
/* try.h - early return on Error, for the reader's internals (not installed). */
#ifndef CORE_TIMELINE_READER_SRC_TRY_H
#define CORE_TIMELINE_READER_SRC_TRY_H

#define CT_CONCAT_INNER(a, b) a##b
#define CT_CONCAT(a, b) CT_CONCAT_INNER(a, b)

/* CT_TRY(name, expr): evaluates a Result<T>; on error returns the Error from
 * the enclosing function, else declares `name` holding the value. */
#define CT_TRY(name, expr)                                          \
  auto CT_CONCAT(ct_try_, __LINE__) = (expr);                       \
  if (!CT_CONCAT(ct_try_, __LINE__))                                \
    return std::move(CT_CONCAT(ct_try_, __LINE__)).error();         \
  auto name = std::move(*CT_CONCAT(ct_try_, __LINE__))

/* CT_TRY_VOID(expr): for Result<void>. */
#define CT_TRY_VOID(expr)                                           \
  do {                                                              \
    auto ct_try_v = (expr);                                         \
    if (!ct_try_v) return std::move(ct_try_v).error();              \
  } while (0)

#endif
