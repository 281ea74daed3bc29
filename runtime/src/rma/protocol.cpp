#include "protocol.h"

namespace gridrt::rma {

namespace {
wire::Writer begin(Message m) {
  wire::Writer w;
  w.u8(static_cast<std::uint8_t>(m));
  return w;
}
void location(wire::Writer& w, const Location& at) {
  w.u64(at.disp);
  at.map.encode(w);
}
}  // namespace

std::string put_head(const Location& at, std::size_t bytes) {
  wire::Writer w = begin(Message::kPut);
  location(w, at);
  return w.u32(static_cast<std::uint32_t>(bytes)).take();
}

std::string accumulate_head(Op op, const Location& at, std::size_t bytes) {
  wire::Writer w = begin(Message::kAccumulate);
  w.u8(static_cast<std::uint8_t>(op));
  location(w, at);
  return w.u32(static_cast<std::uint32_t>(bytes)).take();
}

std::string put_message(const Location& at, std::string_view data) { return put_head(at, data.size()).append(data); }

std::string get_message(std::uint64_t id, const Location& at) {
  wire::Writer w = begin(Message::kGet);
  w.u64(id);
  location(w, at);
  return w.take();
}

std::string accumulate_message(Op op, const Location& at, std::string_view data) {
  return accumulate_head(op, at, data.size()).append(data);
}

std::string get_accumulate_message(std::uint64_t id, Op op, const Location& at, std::string_view data) {
  wire::Writer w = begin(Message::kGetAccumulate);
  w.u64(id).u8(static_cast<std::uint8_t>(op));
  location(w, at);
  return w.str(data).take();
}

std::string compare_swap_message(std::uint64_t id, const Location& at, std::string_view compare, std::string_view data) {
  wire::Writer w = begin(Message::kCompareSwap);
  w.u64(id);
  location(w, at);
  return w.str(compare).str(data).take();
}

std::string lock_message(bool exclusive) { return begin(Message::kLock).u8(exclusive ? 1 : 0).take(); }

std::string sync_message(Message kind, std::uint64_t id) { return begin(kind).u64(id).take(); }

std::string signal_message(Message kind) { return begin(kind).take(); }

std::string fence_mark_message(std::uint64_t fence) { return begin(Message::kFenceMark).u64(fence).take(); }

std::string reply_message(std::uint64_t id, std::uint32_t error_class, std::string_view error, std::string_view data) {
  return begin(Message::kReply).u64(id).u32(error_class).str(error).str(data).take();
}

}  // namespace gridrt::rma
