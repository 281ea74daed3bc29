// A target datatype as the target applies it: MPI has the origin name the target's datatype,
// which the target must lay over its window exactly as MPI would. The origin flattens it
// (with MPI's type envelope and contents, on its own thread) into runs of elements of one
// predefined kind at byte displacements, in type-map order, and sends that along; the target
// walks the runs against the operation's packed data with plain copies (element.h), never
// calling MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/wire.h"
#include "element.h"

namespace gridrt::rma {

// `count` elements of `kind`, `kind.extent` apart, from byte `disp` of the target's base.
struct Run {
  std::int64_t disp = 0;
  std::uint64_t count = 0;
  Kind kind;
};

class TypeMap {
 public:
  TypeMap() = default;
  // One run of n elements of `kind` at disp 0 (a predefined datatype, n of it).
  TypeMap(const Kind& kind, std::uint64_t n) { append({0, n, kind}); }

  // Appends a run (in type-map order), joining it to the last one where it continues it.
  void append(const Run& r);
  // This map `n` times, each `extent` bytes after the one before (MPI's count of a datatype).
  TypeMap repeated(std::uint64_t n, std::int64_t extent) const;
  // This map moved by `bytes`.
  TypeMap shifted(std::int64_t bytes) const;

  const std::vector<Run>& runs() const { return runs_; }
  std::uint64_t packed() const { return packed_; }  // bytes of all its elements, packed
  std::uint64_t elements() const { return elements_; }
  // The bytes it touches lie in [lo, hi) from the base (lo = hi = 0 when empty).
  std::int64_t lo() const { return lo_; }
  std::int64_t hi() const { return hi_; }
  // Every element of one kind (accumulate's rule: the target's datatype is made of one
  // predefined type); null otherwise.
  const Kind* only_kind() const;

  // Between memory at `base` and packed bytes; `op` combines packed bytes into memory.
  void gather(const char* base, char* out) const;
  void scatter(const char* in, char* base) const;
  void accumulate(Op op, const char* in, char* base) const;

  void encode(wire::Writer& w) const;
  static TypeMap decode(wire::Reader& r);  // throws wire::BadBody on a malformed map

 private:
  std::vector<Run> runs_;
  std::uint64_t packed_ = 0, elements_ = 0;
  std::int64_t lo_ = 0, hi_ = 0;
};

}  // namespace gridrt::rma
