#include "typemap.h"

#include <algorithm>

namespace gridrt::rma {

void TypeMap::append(const Run& r) {
  if (r.count == 0) return;
  const std::int64_t end = r.disp + static_cast<std::int64_t>(r.count) * r.kind.extent;
  const std::int64_t first = r.disp, last = end - r.kind.extent + r.kind.size;
  if (runs_.empty()) {
    lo_ = first;
    hi_ = last;
  } else {
    lo_ = std::min(lo_, first);
    hi_ = std::max(hi_, last);
  }
  packed_ += r.count * r.kind.size;
  elements_ += r.count;
  if (!runs_.empty()) {
    Run& back = runs_.back();
    if (back.kind == r.kind && back.disp + static_cast<std::int64_t>(back.count) * back.kind.extent == r.disp) {
      back.count += r.count;
      return;
    }
  }
  runs_.push_back(r);
}

TypeMap TypeMap::repeated(std::uint64_t n, std::int64_t extent) const {
  TypeMap out;
  for (std::uint64_t i = 0; i < n; ++i)
    for (const Run& r : runs_) out.append({r.disp + static_cast<std::int64_t>(i) * extent, r.count, r.kind});
  return out;
}

TypeMap TypeMap::shifted(std::int64_t bytes) const {
  TypeMap out;
  for (const Run& r : runs_) out.append({r.disp + bytes, r.count, r.kind});
  return out;
}

const Kind* TypeMap::only_kind() const {
  if (runs_.empty()) return nullptr;
  for (const Run& r : runs_)
    if (r.kind != runs_.front().kind) return nullptr;
  return &runs_.front().kind;
}

void TypeMap::gather(const char* base, char* out) const {
  for (const Run& r : runs_) {
    pack_elements(r.kind, base + r.disp, out, r.count);
    out += r.count * r.kind.size;
  }
}

void TypeMap::scatter(const char* in, char* base) const {
  for (const Run& r : runs_) {
    unpack_elements(r.kind, in, base + r.disp, r.count);
    in += r.count * r.kind.size;
  }
}

void TypeMap::accumulate(Op op, const char* in, char* base) const {
  for (const Run& r : runs_) {
    rma::accumulate(op, r.kind, base + r.disp, in, r.count);
    in += r.count * r.kind.size;
  }
}

void TypeMap::encode(wire::Writer& w) const {
  w.u32(static_cast<std::uint32_t>(runs_.size()));
  for (const Run& r : runs_) {
    w.u64(static_cast<std::uint64_t>(r.disp)).u64(r.count);
    const Kind& k = r.kind;
    w.u8(static_cast<std::uint8_t>(k.category)).u8(k.size).u8(k.extent);
    w.u8(static_cast<std::uint8_t>(k.value)).u8(k.value_size).u8(static_cast<std::uint8_t>(k.index)).u8(k.index_size).u8(k.index_offset);
  }
}

TypeMap TypeMap::decode(wire::Reader& r) {
  const std::uint32_t n = r.u32();
  TypeMap out;
  constexpr std::uint8_t kLastCategory = static_cast<std::uint8_t>(Category::kPair);
  for (std::uint32_t i = 0; i < n; ++i) {
    Run run;
    run.disp = static_cast<std::int64_t>(r.u64());
    run.count = r.u64();
    Kind& k = run.kind;
    const std::uint8_t c = r.u8();
    k.size = r.u8();
    k.extent = r.u8();
    const std::uint8_t v = r.u8();
    k.value_size = r.u8();
    const std::uint8_t x = r.u8();
    k.index_size = r.u8();
    k.index_offset = r.u8();
    if (c > kLastCategory || v > kLastCategory || x > kLastCategory || k.size == 0 || k.extent < k.size)
      throw wire::BadBody("a run of elements of no known kind");
    k.category = static_cast<Category>(c);
    k.value = static_cast<Category>(v);
    k.index = static_cast<Category>(x);
    if (k.category == Category::kPair &&
        (k.value_size + k.index_size != k.size || k.index_offset < k.value_size || k.index_offset + k.index_size > k.extent))
      throw wire::BadBody("a value-index pair that does not fit its element");
    // Displacements and counts far beyond any memory would overflow the range arithmetic.
    constexpr std::int64_t kFar = std::int64_t{1} << 56;
    if (run.disp > kFar || run.disp < -kFar || run.count > (std::uint64_t{1} << 48))
      throw wire::BadBody("a run of elements beyond any memory");
    out.append(run);
  }
  return out;
}

}  // namespace gridrt::rma
