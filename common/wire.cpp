#include "common/wire.h"

#include <algorithm>
#include <cstring>

namespace gridrt::wire {

const char* type_name(Type t) {
  switch (t) {
    case Type::kError: return "Error";
    case Type::kRelayRegister: return "RelayRegister";
    case Type::kRegistered: return "Registered";
    case Type::kSubmit: return "Submit";
    case Type::kJobAccepted: return "JobAccepted";
    case Type::kStartPart: return "StartPart";
    case Type::kProcHello: return "ProcHello";
    case Type::kMonitorHello: return "MonitorHello";
    case Type::kPartReady: return "PartReady";
    case Type::kTopology: return "Topology";
    case Type::kOutput: return "Output";
    case Type::kProcExit: return "ProcExit";
    case Type::kPartDone: return "PartDone";
    case Type::kKillJob: return "KillJob";
    case Type::kJobEnd: return "JobEnd";
    case Type::kLinkHello: return "LinkHello";
    case Type::kData: return "Data";
    case Type::kProcExitRank: return "ProcExitRank";
    case Type::kNotice: return "Notice";
    case Type::kCredit: return "Credit";
    case Type::kDirectHello: return "DirectHello";
    case Type::kConnectBack: return "ConnectBack";
    case Type::kDirectFailed: return "DirectFailed";
    case Type::kWanCount: return "WanCount";
    case Type::kClusterLost: return "ClusterLost";
    case Type::kFinalizing: return "Finalizing";
    case Type::kMatched: return "Matched";
    case Type::kRest: return "Rest";
    case Type::kHeartbeat: return "Heartbeat";
    case Type::kAttachJob: return "AttachJob";
    case Type::kReplayOutput: return "ReplayOutput";
    case Type::kStatus: return "Status";
    case Type::kLinkAck: return "LinkAck";
    case Type::kDirectResume: return "DirectResume";
    case Type::kFileWanted: return "FileWanted";
    case Type::kFileData: return "FileData";
  }
  return "unknown";
}

namespace {
void put(unsigned char*& p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) *p++ = static_cast<unsigned char>(v >> (8 * i));
}
std::uint64_t get(const unsigned char*& p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(*p++) << (8 * i);
  return v;
}
bool known_type(std::uint16_t t) { return t >= 1 && t <= static_cast<std::uint16_t>(Type::kFileData); }
}  // namespace

void encode_header(const Header& h, unsigned char out[kHeaderSize]) {
  unsigned char* p = out;
  put(p, h.magic, 4);
  put(p, h.version, 2);
  put(p, static_cast<std::uint16_t>(h.type), 2);
  put(p, h.flags, 4);
  put(p, h.length, 4);
  put(p, h.job, 8);
  put(p, static_cast<std::uint32_t>(h.src), 4);
  put(p, static_cast<std::uint32_t>(h.dst), 4);
  put(p, h.context, 4);
  put(p, static_cast<std::uint32_t>(h.tag), 4);
  put(p, h.seq, 8);
}

void add_flags(std::string& encoded, std::uint32_t flags) {
  constexpr std::size_t kFlagsAt = 8;  // (after magic, version and type: encode_header)
  for (std::size_t i = 0; i < 4; ++i) encoded.at(kFlagsAt + i) |= static_cast<char>((flags >> (8 * i)) & 0xff);
}

std::string encode(const Frame& f) {
  std::string out(kHeaderSize + f.body.size(), '\0');
  Header h = f.header;
  h.length = static_cast<std::uint32_t>(f.body.size());
  encode_header(h, reinterpret_cast<unsigned char*>(out.data()));
  std::memcpy(out.data() + kHeaderSize, f.body.data(), f.body.size());
  return out;
}

Frame make_frame(Type t, std::string body, std::uint64_t job) {
  Frame f;
  f.header.type = t;
  f.header.job = job;
  f.body = std::move(body);
  return f;
}

void Decoder::feed(const void* data, std::size_t n) {
  const char* from = static_cast<const char*>(data);
  while (n > 0) {
    const std::span<char> space = prepare(n);
    std::memcpy(space.data(), from, space.size());
    commit(space.size());
    from += space.size();
    n -= space.size();
  }
}

std::span<char> Decoder::prepare(std::size_t n) {
  if (direct_) return {direct_->body.data() + direct_filled_, std::min(n, direct_->body.size() - direct_filled_)};
  if (pos_ == end_) pos_ = end_ = 0;  // everything decoded: start over at the front
  if (pos_ > 0 && (pos_ > (1u << 20) || buf_.size() - end_ < n)) {
    // Move what is left to the front rather than grow without end.
    buf_.erase(0, pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (buf_.size() < end_ + n) buf_.resize(std::max(end_ + n, buf_.size() * 2));
  return {buf_.data() + end_, n};
}

void Decoder::commit(std::size_t n) {
  if (!direct_) {
    end_ += n;
    return;
  }
  direct_filled_ += n;
  if (direct_filled_ < direct_->body.size()) return;
  // Whole: next() gives it first; the bytes after it go to the buffer (where the next
  // frame's header is only read by next(), after this one was taken).
  ready_ = std::move(direct_);
  direct_.reset();
}

Decoder::Status Decoder::next(Frame& out) {
  if (!error_.empty()) return Status::kBad;
  if (ready_) {
    out = std::move(*ready_);
    ready_.reset();
    return Status::kFrame;
  }
  if (direct_) return Status::kNeedMore;
  if (end_ - pos_ < kHeaderSize) return Status::kNeedMore;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
  Header h;
  h.magic = static_cast<std::uint32_t>(get(p, 4));
  h.version = static_cast<std::uint16_t>(get(p, 2));
  const auto type = static_cast<std::uint16_t>(get(p, 2));
  h.flags = static_cast<std::uint32_t>(get(p, 4));
  h.length = static_cast<std::uint32_t>(get(p, 4));
  h.job = get(p, 8);
  h.src = static_cast<std::int32_t>(get(p, 4));
  h.dst = static_cast<std::int32_t>(get(p, 4));
  h.context = static_cast<std::uint32_t>(get(p, 4));
  h.tag = static_cast<std::int32_t>(get(p, 4));
  h.seq = get(p, 8);
  if (h.magic != kMagic) {
    error_ = "bad magic (not a gridrt peer, or garbage on the socket)";
  } else if (h.version != kVersion) {
    error_ = "protocol version " + std::to_string(h.version) + " not supported (this side speaks " + std::to_string(kVersion) + ")";
  } else if (!known_type(type)) {
    error_ = "unknown frame type " + std::to_string(type);
  } else if (h.length > max_body_) {
    error_ = "frame body of " + std::to_string(h.length) + " bytes exceeds the maximum of " + std::to_string(max_body_) +
             (max_body_ < kMaxBody ? " before the peer is authenticated" : "");
  }
  if (!error_.empty()) return Status::kBad;
  h.type = static_cast<Type>(type);
  if (end_ - pos_ < kHeaderSize + h.length) {
    if (h.length < kDirectBody) return Status::kNeedMore;
    // The rest of this body is read straight into it (prepare): what came of it so far is
    // its only copy.
    const std::size_t have = end_ - pos_ - kHeaderSize;
    direct_.emplace();
    direct_->header = h;
    direct_->body.resize(h.length);
    std::memcpy(direct_->body.data(), buf_.data() + pos_ + kHeaderSize, have);
    direct_filled_ = have;
    pos_ = end_;
    return Status::kNeedMore;
  }
  out.header = h;
  out.body.assign(buf_, pos_ + kHeaderSize, h.length);
  pos_ += kHeaderSize + h.length;
  return Status::kFrame;
}

Writer& Writer::u8(std::uint8_t v) {
  out_.push_back(static_cast<char>(v));
  return *this;
}
Writer& Writer::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  return *this;
}
Writer& Writer::u64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  return *this;
}
Writer& Writer::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s);
  return *this;
}
Writer& Writer::strs(const std::vector<std::string>& v) {
  u32(static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) str(s);
  return *this;
}
Writer& Writer::u32s(const std::vector<std::uint32_t>& v) {
  u32(static_cast<std::uint32_t>(v.size()));
  for (auto x : v) u32(x);
  return *this;
}

void Reader::need(std::size_t n) const {
  if (in_.size() - pos_ < n) throw BadBody("message body truncated");
}
std::uint8_t Reader::u8() {
  need(1);
  return static_cast<std::uint8_t>(in_[pos_++]);
}
std::uint32_t Reader::u32() {
  need(4);
  const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + pos_);
  pos_ += 4;
  return static_cast<std::uint32_t>(get(p, 4));
}
std::uint64_t Reader::u64() {
  need(8);
  const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + pos_);
  pos_ += 8;
  return get(p, 8);
}
std::string Reader::str() { return std::string(view()); }
std::string_view Reader::view() {
  const std::uint32_t n = u32();
  need(n);
  const std::string_view s = in_.substr(pos_, n);
  pos_ += n;
  return s;
}
std::vector<std::string> Reader::strs() {
  const std::uint32_t n = u32();
  need(std::size_t{n} * 4);  // every string has at least its length word
  std::vector<std::string> v;
  v.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) v.push_back(str());
  return v;
}
std::vector<std::uint32_t> Reader::u32s() {
  const std::uint32_t n = u32();
  need(std::size_t{n} * 4);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = u32();
  return v;
}
void Reader::end() const {
  if (pos_ != in_.size()) throw BadBody("message body has " + std::to_string(in_.size() - pos_) + " trailing bytes");
}

}  // namespace gridrt::wire
