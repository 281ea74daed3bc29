#include "protocol.h"

#include <cstring>

namespace gridrt::queue {

namespace {
enum Kind : std::uint8_t { kUp = 0x51, kTasks = 0x52, kFinish = 0x53 };

class Writer {
 public:
  explicit Writer(Kind k) { out_.push_back(static_cast<char>(k)); }
  template <typename T> void number(T v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    out_.append(b, sizeof v);
  }
  void item(std::uint64_t id, const std::vector<char>& data) {
    number(id);
    number(static_cast<std::uint32_t>(data.size()));
    out_.append(data.data(), data.size());
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t n, Kind expected_a, Kind expected_b = kUp) : p_(data), end_(data + n) {
    if (n < 1) throw ProtocolError("empty queue message");
    kind_ = static_cast<Kind>(static_cast<std::uint8_t>(*p_++));
    if (kind_ != expected_a && kind_ != expected_b)
      throw ProtocolError("not a queue message of this direction (kind byte " + std::to_string(static_cast<int>(kind_)) + ")");
  }
  Kind kind() const { return kind_; }
  template <typename T> T number(const char* what) {
    T v;
    need(sizeof v, what);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  // `count` items of id, length, bytes.
  template <typename Item> std::vector<Item> items(const char* what) {
    const auto count = number<std::uint32_t>(what);
    // Every item takes at least kItemCost bytes: a count the rest cannot hold is garbage,
    // refused before anything is reserved for it.
    if (count > static_cast<std::size_t>(end_ - p_) / kItemCost) throw ProtocolError(std::string("bad count of ") + what);
    std::vector<Item> out(count);
    for (auto& it : out) {
      it.id = number<std::uint64_t>(what);
      const auto len = number<std::uint32_t>(what);
      need(len, what);
      auto& bytes = payload(it);
      bytes.assign(p_, p_ + len);
      p_ += len;
    }
    return out;
  }
  void end() const {
    if (p_ != end_) throw ProtocolError(std::to_string(end_ - p_) + " stray bytes after a queue message");
  }

 private:
  static std::vector<char>& payload(Task& t) { return t.payload; }
  static std::vector<char>& payload(Result& r) { return r.data; }
  void need(std::size_t n, const char* what) const {
    if (static_cast<std::size_t>(end_ - p_) < n) throw ProtocolError(std::string("queue message cut short in ") + what);
  }
  const char* p_;
  const char* end_;
  Kind kind_ = kUp;
};
}  // namespace

std::string encode(const UpMessage& m) {
  Writer w(kUp);
  w.number(m.producers_done);
  w.number(m.want);
  w.number(static_cast<std::uint32_t>(m.puts.size()));
  for (const auto& t : m.puts) w.item(t.id, t.payload);
  w.number(static_cast<std::uint32_t>(m.results.size()));
  for (const auto& r : m.results) w.item(r.id, r.data);
  return w.take();
}

std::string encode(const DownMessage& m) {
  if (m.finish) {
    Writer w(kFinish);
    w.number(static_cast<std::uint32_t>(m.lost.size()));
    for (auto c : m.lost) w.number(c);
    return w.take();
  }
  Writer w(kTasks);
  w.number(static_cast<std::uint32_t>(m.tasks.size()));
  for (const auto& t : m.tasks) w.item(t.id, t.payload);
  return w.take();
}

UpMessage decode_up(const char* data, std::size_t n) {
  Reader r(data, n, kUp);
  UpMessage m;
  m.producers_done = r.number<std::uint32_t>("producers");
  m.want = r.number<std::uint32_t>("want");
  m.puts = r.items<Task>("puts");
  m.results = r.items<Result>("results");
  r.end();
  return m;
}

DownMessage decode_down(const char* data, std::size_t n) {
  Reader r(data, n, kTasks, kFinish);
  DownMessage m;
  if (r.kind() == kFinish) {
    m.finish = true;
    const auto n = r.number<std::uint32_t>("lost clusters");
    for (std::uint32_t i = 0; i < n; ++i) m.lost.push_back(r.number<std::uint32_t>("lost clusters"));
  } else {
    m.tasks = r.items<Task>("tasks");
    if (m.tasks.empty()) throw ProtocolError("a queue answer with no task");
  }
  r.end();
  return m;
}

}  // namespace gridrt::queue
