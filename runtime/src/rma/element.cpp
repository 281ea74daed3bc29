#include "element.h"

#include <complex>
#include <cstring>
#include <type_traits>

namespace gridrt::rma {

namespace {

const char* category_name(Category c) {
  switch (c) {
    case Category::kSigned: return "signed integer";
    case Category::kUnsigned: return "unsigned integer";
    case Category::kFloat: return "floating point";
    case Category::kComplex: return "complex";
    case Category::kBool: return "C bool";
    case Category::kLogical: return "Fortran logical";
    case Category::kByte: return "byte";
    case Category::kPair: return "value-index pair";
  }
  return "?";
}

bool arithmetic(Category c) {
  return c == Category::kSigned || c == Category::kUnsigned || c == Category::kFloat || c == Category::kComplex;
}
bool integer(Category c) { return c == Category::kSigned || c == Category::kUnsigned; }

// Elements are read and written through memcpy: a window's memory need not be aligned for
// the element type (MPI lets any displacement be used).
template <typename T> T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T> void store(char* p, T v) { std::memcpy(p, &v, sizeof v); }

template <typename T> T combine(Op op, T a, T b) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>> ||
                std::is_same_v<T, std::complex<long double>>) {
    return op == Op::kSum ? a + b : a * b;  // (check() allows nothing else on complex)
  } else {
    switch (op) {
      case Op::kSum: return static_cast<T>(a + b);
      case Op::kProd: return static_cast<T>(a * b);
      case Op::kMax: return a < b ? b : a;
      case Op::kMin: return b < a ? b : a;
      case Op::kLand: return static_cast<T>((a != T{}) && (b != T{}));
      case Op::kLor: return static_cast<T>((a != T{}) || (b != T{}));
      case Op::kLxor: return static_cast<T>((a != T{}) != (b != T{}));
      default: break;
    }
    if constexpr (std::is_integral_v<T>) {
      switch (op) {
        case Op::kBand: return static_cast<T>(a & b);
        case Op::kBor: return static_cast<T>(a | b);
        case Op::kBxor: return static_cast<T>(a ^ b);
        default: break;
      }
    }
    return b;
  }
}

template <typename T> void combine_all(Op op, char* target, const char* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i, target += sizeof(T), in += sizeof(T)) store<T>(target, combine<T>(op, load<T>(target), load<T>(in)));
}

// A Fortran LOGICAL or C bool of `size` bytes: true is any non-zero value; results are 1 or 0.
template <typename T> void logical_all(Op op, char* target, const char* in, std::size_t n) {
  if constexpr (std::is_integral_v<T>)
    for (std::size_t i = 0; i < n; ++i, target += sizeof(T), in += sizeof(T)) {
      const bool a = load<T>(target) != 0, b = load<T>(in) != 0;
      const bool r = op == Op::kLand ? (a && b) : op == Op::kLor ? (a || b) : (a != b);
      store<T>(target, static_cast<T>(r ? 1 : 0));
    }
}

template <typename Fn> bool by_size(Category c, std::size_t size, Fn&& fn) {
  switch (c) {
    case Category::kSigned:
    case Category::kLogical:
      if (size == 1) return fn(std::int8_t{}), true;
      if (size == 2) return fn(std::int16_t{}), true;
      if (size == 4) return fn(std::int32_t{}), true;
      if (size == 8) return fn(std::int64_t{}), true;
      return false;
    case Category::kBool:
    case Category::kByte:
    case Category::kUnsigned:
      if (size == 1) return fn(std::uint8_t{}), true;
      if (size == 2) return fn(std::uint16_t{}), true;
      if (size == 4) return fn(std::uint32_t{}), true;
      if (size == 8) return fn(std::uint64_t{}), true;
      return false;
    case Category::kFloat:
      if (size == 4) return fn(float{}), true;
      if (size == 8) return fn(double{}), true;
      if (size == sizeof(long double)) return fn((long double){}), true;
      return false;
    case Category::kComplex:
      if (size == 8) return fn(std::complex<float>{}), true;
      if (size == 16) return fn(std::complex<double>{}), true;
      if (size == 2 * sizeof(long double)) return fn(std::complex<long double>{}), true;
      return false;
    case Category::kPair: return false;
  }
  return false;
}

// A value of a pair as a long double (every value type of MPI's pairs fits one exactly
// enough to compare: int, long, short, float, double, long double).
long double pair_part(Category c, std::size_t size, const char* p) {
  long double v = 0;
  by_size(c, size, [&](auto t) {
    if constexpr (std::is_arithmetic_v<decltype(t)>) v = static_cast<long double>(load<decltype(t)>(p));
  });
  return v;
}

void pair_all(Op op, const Kind& k, char* target, const char* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i, target += k.extent, in += k.size) {
    const long double tv = pair_part(k.value, k.value_size, target), iv = pair_part(k.value, k.value_size, in);
    const long double ti = pair_part(k.index, k.index_size, target + k.index_offset);
    const long double ii = pair_part(k.index, k.index_size, in + k.value_size);
    const bool take = op == Op::kMaxloc ? iv > tv : iv < tv;
    if (take) {
      std::memcpy(target, in, k.value_size);
      std::memcpy(target + k.index_offset, in + k.value_size, k.index_size);
    } else if (iv == tv && ii < ti) {
      std::memcpy(target + k.index_offset, in + k.value_size, k.index_size);
    }
  }
}

}  // namespace

std::string Kind::name() const {
  std::string n = std::string(category_name(category)) + " of " + std::to_string(size) + " bytes";
  return n;
}

const char* op_name(Op op) {
  static const char* names[] = {"MPI_SUM",  "MPI_PROD", "MPI_MAX",  "MPI_MIN",    "MPI_LAND",   "MPI_LOR",     "MPI_LXOR",
                                "MPI_BAND", "MPI_BOR",  "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC", "MPI_REPLACE", "MPI_NO_OP"};
  return names[static_cast<int>(op)];
}

bool valid_op(std::uint8_t v) { return v <= static_cast<std::uint8_t>(Op::kNoOp); }

std::string check(Op op, const Kind& k) {
  bool ok = false;
  switch (op) {
    case Op::kReplace:
    case Op::kNoOp: return "";
    case Op::kSum:
    case Op::kProd: ok = arithmetic(k.category); break;
    case Op::kMax:
    case Op::kMin: ok = integer(k.category) || k.category == Category::kFloat; break;
    case Op::kLand:
    case Op::kLor:
    case Op::kLxor: ok = integer(k.category) || k.category == Category::kLogical || k.category == Category::kBool; break;
    case Op::kBand:
    case Op::kBor:
    case Op::kBxor: ok = integer(k.category) || k.category == Category::kByte; break;
    case Op::kMaxloc:
    case Op::kMinloc: ok = k.category == Category::kPair; break;
  }
  if (!ok) return std::string(op_name(op)) + " is not defined on " + k.name() + " elements";
  if (k.category != Category::kPair && !by_size(k.category, k.size, [](auto) {}))
    return std::string(op_name(op)) + " on " + k.name() + " elements is not supported";
  return "";
}

void accumulate(Op op, const Kind& k, void* target, const char* in, std::size_t n) {
  char* t = static_cast<char*>(target);
  if (op == Op::kNoOp || n == 0) return;
  if (op == Op::kReplace) return unpack_elements(k, in, target, n);
  if (k.category == Category::kPair) return pair_all(op, k, t, in, n);
  if ((k.category == Category::kLogical || k.category == Category::kBool) && (op == Op::kLand || op == Op::kLor || op == Op::kLxor)) {
    by_size(Category::kUnsigned, k.size, [&](auto v) { logical_all<decltype(v)>(op, t, in, n); });
    return;
  }
  by_size(k.category, k.size, [&](auto v) { combine_all<decltype(v)>(op, t, in, n); });
}

void pack_elements(const Kind& k, const void* memory, char* out, std::size_t n) {
  const char* m = static_cast<const char*>(memory);
  if (k.extent == k.size) return static_cast<void>(n ? std::memcpy(out, m, n * k.size) : nullptr);
  for (std::size_t i = 0; i < n; ++i, m += k.extent, out += k.size) {  // a pair: its value, then its index
    std::memcpy(out, m, k.value_size);
    std::memcpy(out + k.value_size, m + k.index_offset, k.index_size);
  }
}

void unpack_elements(const Kind& k, const char* in, void* memory, std::size_t n) {
  char* m = static_cast<char*>(memory);
  if (k.extent == k.size) return static_cast<void>(n ? std::memcpy(m, in, n * k.size) : nullptr);
  for (std::size_t i = 0; i < n; ++i, m += k.extent, in += k.size) {
    std::memcpy(m, in, k.value_size);
    std::memcpy(m + k.index_offset, in + k.value_size, k.index_size);
  }
}

}  // namespace gridrt::rma
