// Datatypes as the runtime moves them: how `count` elements of an MPI datatype lie in
// memory, packing them for the wire (MPI_Pack, or a plain copy when they lie back to back),
// and buffers laid out as a datatype for partial results. Shared by the channels (data
// crossing clusters travels packed) and the collectives.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gridrt/gridrt.hpp"

namespace gridrt::detail {

// How `count` elements of `type` lie in memory and how many bytes they pack into.
struct Layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  int size = 0;             // bytes of data in one element
  std::size_t packed = 0;   // bytes of all `count` elements, packed
  bool contiguous = false;  // the elements lie back to back from the buffer's start, no gaps

  Layout(MPI_Datatype t, int n) : type(t) {
    if (t == MPI_DATATYPE_NULL) throw ArgumentError("gridrt: MPI_DATATYPE_NULL is not a datatype to move", MPI_ERR_TYPE);
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &true_lb, &true_extent);
    MPI_Type_size(t, &size);
    set_count(n);
  }
  // `n` elements of the same datatype: MPI is asked nothing more about the type (the blocks
  // and slices of one call all share it).
  Layout(const Layout& same_type, int n) : Layout(same_type) { set_count(n); }
  std::size_t span() const { return count == 0 ? 0 : static_cast<std::size_t>(true_extent + (count - 1) * extent); }

 private:
  void set_count(int n) {
    if (n < 0) throw ArgumentError("gridrt: a negative count (" + std::to_string(n) + ")", MPI_ERR_COUNT);
    count = n;
    contiguous = lb == 0 && true_lb == 0 && size == extent && true_extent == extent;
    if (contiguous) {
      packed = static_cast<std::size_t>(size) * static_cast<std::size_t>(n);
    } else {
      int bytes = 0;
      MPI_Pack_size(n, type, MPI_COMM_SELF, &bytes);
      packed = static_cast<std::size_t>(bytes);
    }
  }
};

// `count` elements of `type` at `buf`, as MPI_Pack and MPI_Unpack can take them. MPICH
// 4.0.2 refuses a null buffer there ("Null pointer in parameter inbuf"), and MPI_BOTTOM is
// null, though MPI lets a datatype of absolute addresses describe data from MPI_BOTTOM: such
// data is taken as one element of a type holding the `count` elements one byte lower, from
// address 1. The same bytes, a buffer that is not null.
class PackableBuffer {
 public:
  PackableBuffer(const void* buf, int count, MPI_Datatype type) : buf_(const_cast<void*>(buf)), count_(count), type_(type) {
    if (buf != MPI_BOTTOM || count == 0) return;
    MPI_Aint one_lower = -1;
    MPI_Type_create_hindexed(1, &count, &one_lower, type, &shifted_);
    MPI_Type_commit(&shifted_);
    buf_ = reinterpret_cast<void*>(std::uintptr_t{1});
    count_ = 1;
    type_ = shifted_;
  }
  ~PackableBuffer() {
    if (shifted_ != MPI_DATATYPE_NULL) MPI_Type_free(&shifted_);
  }
  PackableBuffer(const PackableBuffer&) = delete;
  PackableBuffer& operator=(const PackableBuffer&) = delete;

  int pack(void* out, int out_size, int* position, MPI_Comm comm) const {
    return MPI_Pack(buf_, count_, type_, out, out_size, position, comm);
  }
  int unpack(const void* in, int in_size, int* position, MPI_Comm comm) const {
    return MPI_Unpack(in, in_size, position, buf_, count_, type_, comm);
  }

 private:
  void* buf_;
  int count_;
  MPI_Datatype type_;
  MPI_Datatype shifted_ = MPI_DATATYPE_NULL;
};

inline void pack(const Layout& l, const void* buf, char* out) {
  if (l.contiguous) {
    if (l.packed) std::memcpy(out, buf, l.packed);
    return;
  }
  int pos = 0;
  PackableBuffer(buf, l.count, l.type).pack(out, static_cast<int>(l.packed), &pos, MPI_COMM_SELF);
}
inline void unpack(const Layout& l, const char* in, void* buf) {
  if (l.contiguous) {
    if (l.packed) std::memcpy(buf, in, l.packed);
    return;
  }
  int pos = 0;
  PackableBuffer(buf, l.count, l.type).unpack(in, static_cast<int>(l.packed), &pos, MPI_COMM_SELF);
}
inline std::vector<char> packed_copy(const Layout& l, const void* buf) {
  std::vector<char> out(l.packed);
  pack(l, buf, out.data());
  return out;
}

// Where a layout's elements arrive packed (MPICH's scatter of bytes into them): straight
// into `buf` where the layout has no gaps, else into a buffer of its own that arrived()
// unpacks into `buf`. Copying and zeroing such buffers took 27% of a scatter's time inside a
// cluster.
class PackedArrival {
 public:
  PackedArrival(const Layout& l, void* buf) : l_(l), buf_(buf), own_(l.contiguous ? 0 : l.packed) {}
  char* data() { return l_.contiguous ? static_cast<char*>(buf_) : own_.data(); }
  void arrived() {
    if (!l_.contiguous && l_.packed > 0) unpack(l_, own_.data(), buf_);
  }

 private:
  const Layout& l_;
  void* buf_;
  std::vector<char> own_;
};

// A buffer laid out as `count` elements of the datatype (for partial results).
class Scratch {
 public:
  explicit Scratch(const Layout& l) : mem_(l.span()), base_(mem_.data() - l.true_lb) {}
  void* get() { return base_; }

 private:
  std::vector<char> mem_;
  char* base_;
};

inline void copy_elements(const Layout& l, const void* from, void* to) {
  if (from == to) return;
  if (l.contiguous) {
    if (l.packed) std::memcpy(to, from, l.packed);
    return;
  }
  const std::vector<char> p = packed_copy(l, from);
  unpack(l, p.data(), to);
}

}  // namespace gridrt::detail
