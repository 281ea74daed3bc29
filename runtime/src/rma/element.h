// The elements one-sided operations move and combine at a target, without MPI: the target
// side runs on the process's I/O thread, which must never call MPICH (the application's
// thread may be inside it, and the layer does not ask MPICH for MPI_THREAD_MULTIPLE). The
// origin names each element's kind (from the predefined MPI datatype it is made of) and
// the operation; the target applies them here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gridrt::rma {

// What an element is, as accumulate-type operations see it.
enum class Category : std::uint8_t {
  kSigned,  // C and Fortran integers
  kUnsigned,
  kFloat,    // float, double, long double (size 4, 8, or 16 for the x87 80-bit type)
  kComplex,  // pairs of floats (size 8, 16, 32)
  kBool,     // C's _Bool and C++ bool: any non-zero byte is true
  kLogical,  // Fortran LOGICAL (4 bytes, gfortran's .true. is 1)
  kByte,     // MPI_BYTE, MPI_CHAR, MPI_PACKED: bitwise operations and replacement only
  kPair,     // MPI_DOUBLE_INT and the others of MAXLOC/MINLOC: a value and an int index
};

struct Kind {
  Category category = Category::kByte;
  std::uint8_t size = 1;    // bytes of the element packed (a pair: value + index)
  std::uint8_t extent = 1;  // bytes it spans in memory (a pair: with its padding)
  // A pair's value and index (category and size of each) and where its index lies in memory.
  Category value = Category::kByte, index = Category::kByte;
  std::uint8_t value_size = 0, index_size = 0, index_offset = 0;

  bool operator==(const Kind& o) const {
    return category == o.category && size == o.size && extent == o.extent && value == o.value && index == o.index &&
           value_size == o.value_size && index_size == o.index_size && index_offset == o.index_offset;
  }
  bool operator!=(const Kind& o) const { return !(*this == o); }
  std::string name() const;
};

// The predefined operations one-sided communication allows (user-defined ones it does not).
enum class Op : std::uint8_t { kSum, kProd, kMax, kMin, kLand, kLor, kLxor, kBand, kBor, kBxor, kMaxloc, kMinloc, kReplace, kNoOp };
const char* op_name(Op op);
bool valid_op(std::uint8_t v);

// Whether `op` applies to elements of `kind` (MPI 4.0 §6.9.2's table); "" if so, else why not.
std::string check(Op op, const Kind& kind);

// Combines `n` packed elements of `kind` from `in` into memory at `target` (elements
// `kind.extent` apart): target = target op in. kReplace writes, kNoOp leaves it.
void accumulate(Op op, const Kind& kind, void* target, const char* in, std::size_t n);
// Copies n elements between memory (kind.extent apart) and their packed form.
void pack_elements(const Kind& kind, const void* memory, char* out, std::size_t n);
void unpack_elements(const Kind& kind, const char* in, void* memory, std::size_t n);

}  // namespace gridrt::rma
