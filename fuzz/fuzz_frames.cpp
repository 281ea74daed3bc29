// libFuzzer target: the frame decoder, fed a peer's bytes as a socket delivers them — in
// pieces of any size — under the limit of an unauthenticated peer or the full one. Every
// frame it yields must be whole; whatever it is fed, it must say kFrame, kNeedMore or kBad.
//
// Input: byte 0 bit 0 = the stranger's limit; byte 1 = piece size - 1; the rest = the stream.
#include <cstdint>
#include <cstdlib>

#include "common/admission.h"
#include "common/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gridrt;
  if (size < 2) return 0;
  wire::Decoder decoder;
  const std::uint32_t limit = (data[0] & 1) ? limits::kUntrustedBody : wire::kMaxBody;
  decoder.set_max_body(limit);
  const std::size_t piece = std::size_t{data[1]} + 1;
  data += 2;
  size -= 2;
  wire::Frame frame;
  for (std::size_t off = 0; off < size; off += piece) {
    const std::size_t n = std::min(piece, size - off);
    // Half the pieces through the zero-copy path the links use, half through feed().
    if ((off / piece) % 2) {
      // (The space may be smaller: the rest of a large body goes straight into it.)
      for (std::size_t done = 0; done < n;) {
        const std::span<char> space = decoder.prepare(n - done);
        std::copy(data + off + done, data + off + done + space.size(), space.data());
        decoder.commit(space.size());
        done += space.size();
      }
    } else {
      decoder.feed(data + off, n);
    }
    for (;;) {
      const auto st = decoder.next(frame);
      if (st == wire::Decoder::Status::kNeedMore) break;
      if (st == wire::Decoder::Status::kBad) {
        if (decoder.error().empty()) std::abort();  // a refusal must say why
        return 0;
      }
      if (frame.body.size() != frame.header.length || frame.body.size() > limit) std::abort();
      // What decodes must encode to the same bytes.
      if (wire::encode(frame).size() != wire::kHeaderSize + frame.body.size()) std::abort();
    }
  }
  return 0;
}
