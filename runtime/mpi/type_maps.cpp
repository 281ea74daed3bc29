// Target datatypes for one-sided operations on grid windows: the origin flattens the datatype
// it names for the target into runs of predefined elements (rma/typemap.h), reading MPI's own
// description of it (MPI_Type_get_envelope and _get_contents, MPI 4.0 §5.1.13), so that the
// target, which never calls MPI, lays it over its memory as MPI would.
#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <vector>

#include "windows.h"

namespace gridmpi {

using gridrt::rma::Category;
using gridrt::rma::Kind;
using gridrt::rma::TypeMap;

namespace {

int type_size(MPI_Datatype t) {
  int n = 0;
  PMPI_Type_size(t, &n);
  return n;
}

MPI_Aint type_extent(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(t, &lb, &extent);
  return extent;
}

template <typename V, typename I> struct PairOf {
  V value;
  I index;
};

template <typename V, typename I> Kind pair_kind(Category value, Category index) {
  Kind k;
  k.category = Category::kPair;
  k.value = value;
  k.index = index;
  k.value_size = sizeof(V);
  k.index_size = sizeof(I);
  k.size = static_cast<std::uint8_t>(sizeof(V) + sizeof(I));
  k.extent = sizeof(PairOf<V, I>);
  using Pair = PairOf<V, I>;
  k.index_offset = offsetof(Pair, index);
  return k;
}

// Every predefined datatype MPICH has here, with what it is to accumulate-type operations.
const std::map<MPI_Datatype, Kind>& predefined_kinds() {
  static const std::map<MPI_Datatype, Kind> kinds = [] {
    std::map<MPI_Datatype, Kind> m;
    auto plain = [&](MPI_Datatype t, Category c) {
      if (t == MPI_DATATYPE_NULL) return;
      const int size = type_size(t);
      if (size <= 0 || size > 255) return;
      Kind k;
      k.category = c;
      k.size = k.extent = static_cast<std::uint8_t>(size);
      m[t] = k;
    };
    for (MPI_Datatype t : {MPI_CHAR,   MPI_SIGNED_CHAR, MPI_SHORT,    MPI_INT,      MPI_LONG,     MPI_LONG_LONG_INT, MPI_LONG_LONG,
                           MPI_INT8_T, MPI_INT16_T,     MPI_INT32_T,  MPI_INT64_T,  MPI_AINT,     MPI_OFFSET,        MPI_COUNT,
                           MPI_WCHAR,  MPI_INTEGER,     MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8})
      plain(t, Category::kSigned);
    for (MPI_Datatype t : {MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_UINT8_T,
                           MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T})
      plain(t, Category::kUnsigned);
    for (MPI_Datatype t : {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL4, MPI_REAL8})
      plain(t, Category::kFloat);
    for (MPI_Datatype t :
         {MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_COMPLEX, MPI_DOUBLE_COMPLEX,
          MPI_COMPLEX8, MPI_COMPLEX16, MPI_CXX_FLOAT_COMPLEX, MPI_CXX_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX})
      plain(t, Category::kComplex);
    for (MPI_Datatype t : {MPI_C_BOOL, MPI_CXX_BOOL}) plain(t, Category::kBool);
    plain(MPI_LOGICAL, Category::kLogical);
    for (MPI_Datatype t : {MPI_BYTE, MPI_PACKED, MPI_CHARACTER}) plain(t, Category::kByte);
    m[MPI_FLOAT_INT] = pair_kind<float, int>(Category::kFloat, Category::kSigned);
    m[MPI_DOUBLE_INT] = pair_kind<double, int>(Category::kFloat, Category::kSigned);
    m[MPI_LONG_INT] = pair_kind<long, int>(Category::kSigned, Category::kSigned);
    m[MPI_SHORT_INT] = pair_kind<short, int>(Category::kSigned, Category::kSigned);
    m[MPI_2INT] = pair_kind<int, int>(Category::kSigned, Category::kSigned);
    m[MPI_LONG_DOUBLE_INT] = pair_kind<long double, int>(Category::kFloat, Category::kSigned);
    if (MPI_2REAL != MPI_DATATYPE_NULL) m[MPI_2REAL] = pair_kind<float, float>(Category::kFloat, Category::kFloat);
    if (MPI_2DOUBLE_PRECISION != MPI_DATATYPE_NULL)
      m[MPI_2DOUBLE_PRECISION] = pair_kind<double, double>(Category::kFloat, Category::kFloat);
    if (MPI_2INTEGER != MPI_DATATYPE_NULL) m[MPI_2INTEGER] = pair_kind<int, int>(Category::kSigned, Category::kSigned);
    return m;
  }();
  return kinds;
}

Kind named_kind(MPI_Datatype t) {
  const auto& kinds = predefined_kinds();
  if (auto it = kinds.find(t); it != kinds.end()) return it->second;
  // Another named type (MPI_REAL16, the Fortran size-specific ones MPICH makes on demand):
  // bytes, which puts, gets and MPI_REPLACE move as they are.
  const int size = type_size(t);
  if (size <= 0 || size > 255)
    throw gridrt::ArgumentError("a predefined datatype of " + std::to_string(size) + " bytes cannot be a one-sided target type",
                                MPI_ERR_TYPE);
  Kind k;
  k.size = k.extent = static_cast<std::uint8_t>(size);
  return k;
}

bool named(MPI_Datatype t) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  return combiner == MPI_COMBINER_NAMED;
}

// `block` (one element of `old`, n of them back to back) at `disp` bytes, appended to `out`.
void place(TypeMap& out, const TypeMap& element, MPI_Aint extent, std::int64_t n, std::int64_t disp) {
  const TypeMap placed = element.repeated(static_cast<std::uint64_t>(n), extent).shifted(disp);
  for (const auto& run : placed.runs()) out.append(run);
}

TypeMap flatten_one(MPI_Datatype t);

// A subarray (MPI 4.0 §5.1.3): the elements of `subsizes` from `starts` of an array of
// `sizes`, in C (last index fastest) or Fortran order.
TypeMap subarray(const int* v, MPI_Datatype old) {
  const int n = v[0];
  std::vector<int> sizes(v + 1, v + 1 + n), subsizes(v + 1 + n, v + 1 + 2 * n), starts(v + 1 + 2 * n, v + 1 + 3 * n);
  const bool c_order = v[1 + 3 * n] == MPI_ORDER_C;
  if (!c_order) {  // Fortran: the first index fastest; reversed, the same as C
    std::reverse(sizes.begin(), sizes.end());
    std::reverse(subsizes.begin(), subsizes.end());
    std::reverse(starts.begin(), starts.end());
  }
  const TypeMap element = flatten_one(old);
  const MPI_Aint extent = type_extent(old);
  std::vector<std::int64_t> stride(n, 1);
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * sizes[d + 1];
  TypeMap out;
  if (n == 0 || std::any_of(subsizes.begin(), subsizes.end(), [](int s) { return s == 0; })) return out;
  std::vector<int> at(n, 0);  // the index of a row (the last dimension runs in each)
  for (;;) {
    std::int64_t first = 0;
    for (int d = 0; d < n; ++d) first += (starts[d] + (d == n - 1 ? 0 : at[d])) * stride[d];
    place(out, element, extent, subsizes[n - 1], first * extent);
    int d = n - 2;
    for (; d >= 0; --d) {
      if (++at[d] < subsizes[d]) break;
      at[d] = 0;
    }
    if (d < 0) break;
  }
  return out;
}

// A distributed array (MPI 4.0 §5.1.4): the elements of a global array of `gsizes` that
// process `rank` of a `psizes` grid (ranks in row-major order, whatever the array's order)
// holds under each dimension's distribution, in the array's order (C: last index fastest).
// Per dimension of N elements over P processes, coordinate c holds: all of it (NONE); the
// block [c b, (c + 1) b) with b = the argument or ceil(N / P) (BLOCK); the indices j with
// (j / b) mod P = c, b = the argument or 1 (CYCLIC).
TypeMap darray(const int* v, MPI_Datatype old) {
  const int rank = v[1], n = v[2];
  const int *gsizes = v + 3, *distribs = v + 3 + n, *dargs = v + 3 + 2 * n, *psizes = v + 3 + 3 * n;
  const bool c_order = v[3 + 4 * n] == MPI_ORDER_C;
  std::vector<int> coord(static_cast<std::size_t>(n));
  for (int d = n - 1, r = rank; d >= 0; --d) {
    coord[d] = r % psizes[d];
    r /= psizes[d];
  }
  std::vector<std::vector<std::int64_t>> held(static_cast<std::size_t>(n));
  std::vector<std::int64_t> sizes(gsizes, gsizes + n);
  for (int d = 0; d < n; ++d) {
    const std::int64_t N = gsizes[d], P = psizes[d], c = coord[d];
    const bool dflt = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG;
    for (std::int64_t j = 0; j < N; ++j) {
      bool mine = true;
      if (distribs[d] == MPI_DISTRIBUTE_BLOCK) {
        const std::int64_t b = dflt ? (N + P - 1) / P : dargs[d];
        mine = j / b == c;
      } else if (distribs[d] == MPI_DISTRIBUTE_CYCLIC) {
        const std::int64_t b = dflt ? 1 : dargs[d];
        mine = (j / b) % P == c;
      }
      if (mine) held[d].push_back(j);
    }
  }
  if (!c_order) {  // Fortran: the first index fastest; reversed, the same as C
    std::reverse(held.begin(), held.end());
    std::reverse(sizes.begin(), sizes.end());
  }
  TypeMap out;
  if (n == 0 || std::any_of(held.begin(), held.end(), [](const auto& h) { return h.empty(); })) return out;
  std::vector<std::int64_t> stride(static_cast<std::size_t>(n), 1);
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * sizes[d + 1];
  const TypeMap element = flatten_one(old);
  const MPI_Aint extent = type_extent(old);
  const std::vector<std::int64_t>& row = held[static_cast<std::size_t>(n - 1)];
  std::vector<std::size_t> at(static_cast<std::size_t>(n), 0);  // the index of a row (the last dimension runs in each)
  for (;;) {
    std::int64_t first = 0;
    for (int d = 0; d < n - 1; ++d) first += held[d][at[d]] * stride[d];
    for (std::size_t i = 0; i < row.size();) {  // the row's runs of consecutive indices
      std::size_t k = i + 1;
      while (k < row.size() && row[k] == row[k - 1] + 1) ++k;
      place(out, element, extent, static_cast<std::int64_t>(k - i), (first + row[i]) * extent);
      i = k;
    }
    int d = n - 2;
    for (; d >= 0; --d) {
      if (++at[d] < held[d].size()) break;
      at[d] = 0;
    }
    if (d < 0) break;
  }
  return out;
}

TypeMap flatten_one(MPI_Datatype t) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  if (combiner == MPI_COMBINER_NAMED) return TypeMap(named_kind(t), 1);
  std::vector<int> ints(static_cast<std::size_t>(ni) + 1);
  std::vector<MPI_Aint> aints(static_cast<std::size_t>(na) + 1);
  std::vector<MPI_Datatype> types(static_cast<std::size_t>(nd) + 1);
  PMPI_Type_get_contents(t, ni, na, nd, ints.data(), aints.data(), types.data());
  struct FreeTypes {  // (derived types get_contents returns are new handles)
    std::vector<MPI_Datatype>& types;
    int n;
    ~FreeTypes() {
      for (int i = 0; i < n; ++i)
        if (!named(types[i])) PMPI_Type_free(&types[i]);
    }
  } free_types{types, nd};
  TypeMap out;
  const MPI_Datatype old = types[0];
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:  // (only its extent differs, which the caller reads)
      return flatten_one(old);
    case MPI_COMBINER_CONTIGUOUS: place(out, flatten_one(old), type_extent(old), ints[0], 0); return out;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
      const TypeMap e = flatten_one(old);
      const MPI_Aint extent = type_extent(old);
      const std::int64_t stride = combiner == MPI_COMBINER_VECTOR ? std::int64_t{ints[2]} * extent : aints[0];
      for (int i = 0; i < ints[0]; ++i) place(out, e, extent, ints[1], i * stride);
      return out;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED: {
      const TypeMap e = flatten_one(old);
      const MPI_Aint extent = type_extent(old);
      const int n = ints[0];
      for (int i = 0; i < n; ++i) {
        const std::int64_t disp = combiner == MPI_COMBINER_INDEXED ? std::int64_t{ints[1 + n + i]} * extent : aints[i];
        place(out, e, extent, ints[1 + i], disp);
      }
      return out;
    }
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
      const TypeMap e = flatten_one(old);
      const MPI_Aint extent = type_extent(old);
      for (int i = 0; i < ints[0]; ++i) {
        const std::int64_t disp = combiner == MPI_COMBINER_INDEXED_BLOCK ? std::int64_t{ints[2 + i]} * extent : aints[i];
        place(out, e, extent, ints[1], disp);
      }
      return out;
    }
    case MPI_COMBINER_STRUCT:
      for (int i = 0; i < ints[0]; ++i) place(out, flatten_one(types[i]), type_extent(types[i]), ints[1 + i], aints[i]);
      return out;
    case MPI_COMBINER_SUBARRAY: return subarray(ints.data(), old);
    case MPI_COMBINER_DARRAY: return darray(ints.data(), old);
    case MPI_COMBINER_F90_REAL:
    case MPI_COMBINER_F90_COMPLEX:
    case MPI_COMBINER_F90_INTEGER: {  // (MPI_Type_create_f90_*: a predefined type of the size it asked for)
      const int typeclass = combiner == MPI_COMBINER_F90_REAL      ? MPI_TYPECLASS_REAL
                            : combiner == MPI_COMBINER_F90_COMPLEX ? MPI_TYPECLASS_COMPLEX
                                                                   : MPI_TYPECLASS_INTEGER;
      MPI_Datatype same = MPI_DATATYPE_NULL;
      if (PMPI_Type_match_size(typeclass, type_size(t), &same) != MPI_SUCCESS)
        throw gridrt::ArgumentError("a Fortran parameterised type of no predefined size", MPI_ERR_TYPE);
      return TypeMap(named_kind(same), 1);
    }
    default:
      throw gridrt::ArgumentError("a datatype made by a constructor MPI does not define (combiner " + std::to_string(combiner) +
                                      ") cannot be a one-sided target type",
                                  MPI_ERR_TYPE);
  }
}

}  // namespace

TypeMap type_map(MPI_Datatype t, int count) {
  if (t == MPI_DATATYPE_NULL) throw gridrt::ArgumentError("MPI_DATATYPE_NULL is not a datatype", MPI_ERR_TYPE);
  if (count < 0) throw gridrt::ArgumentError("a negative count (" + std::to_string(count) + ")", MPI_ERR_COUNT);
  if (named(t)) return TypeMap(named_kind(t), static_cast<std::uint64_t>(count));
  return flatten_one(t).repeated(static_cast<std::uint64_t>(count), type_extent(t));
}

Kind element_kind(MPI_Datatype t) { return named_kind(t); }

}  // namespace gridmpi
