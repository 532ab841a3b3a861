// The kernels must vectorize: at -O2 GCC 12 only vectorizes loops it needs no epilogue for, and
// a scalar float sum costs more than the loopback copy it overlaps with.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include "ddp/gloo/reduce_functions.h"

#include <ddp/errors.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace ddp::gloo_backend {
namespace {

// `out` is `a`, `b` or a distinct buffer, never a partial overlap: element i is read before it is
// written, so the loops are safe to vectorize without alias checks.
template <typename T, typename Op>
void apply(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
}

// Half types: compute in float, round once per element.
template <typename T, typename Op>
void apply_half(void* out, const void* a, const void* b, size_t n) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
  for (size_t i = 0; i < n; ++i) o[i] = T(op(static_cast<float>(x[i]), static_cast<float>(y[i])));
}

struct Sum {
  template <typename T>
  T operator()(T x, T y) const { return x + y; }
};
// min/max propagate NaN, as torch.minimum/maximum do: a NaN in y is taken, one in x is kept (every
// comparison with it is false). GCC compiles these to the same vector selects as an if/return.
template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}
struct Min {
  template <typename T>
  T operator()(T x, T y) const { return is_nan(y) || y < x ? y : x; }
};
struct Max {
  template <typename T>
  T operator()(T x, T y) const { return is_nan(y) || x < y ? y : x; }
};

template <typename T, template <typename, typename> class Apply>
ReduceFn pick(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return &Apply<T, Sum>::call;
    case ReduceOp::kMin:
      return &Apply<T, Min>::call;
    case ReduceOp::kMax:
      return &Apply<T, Max>::call;
  }
  return nullptr;
}

template <typename T, typename Op>
struct Plain {
  static void call(void* out, const void* a, const void* b, size_t n) { apply<T, Op>(out, a, b, n); }
};
template <typename T, typename Op>
struct Half {
  static void call(void* out, const void* a, const void* b, size_t n) { apply_half<T, Op>(out, a, b, n); }
};

}  // namespace

bool is_reducible(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
      return true;
    default:
      return false;
  }
}

ReduceFn reduce_function(c10::ScalarType dtype, ReduceOp op, const char* what) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return pick<float, Plain>(op);
    case c10::ScalarType::Double:
      return pick<double, Plain>(op);
    case c10::ScalarType::Int:
      return pick<int32_t, Plain>(op);
    case c10::ScalarType::Long:
      return pick<int64_t, Plain>(op);
    case c10::ScalarType::Half:
      return pick<c10::Half, Half>(op);
    case c10::ScalarType::BFloat16:
      return pick<c10::BFloat16, Half>(op);
    default:
      throw ConfigError(std::string(what) + ": dtype " + c10::toString(dtype) +
                        " cannot be reduced by the gloo process group (supported: float32, float64, "
                        "float16, bfloat16, int32, int64)");
  }
}

}  // namespace ddp::gloo_backend
