// libFuzzer target: every message body decoder, and for a Submit what the broker does next —
// mapping the job onto a grid — so that no body a peer can send crashes, loops or
// over-allocates. A decoder either returns a whole message or throws wire::BadBody; the
// mapping either returns a topology that holds every process or throws InputError.
//
// Input: byte 0 picks the message type; the rest is its body.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/grid.h"
#include "common/messages.h"
#include "common/xml.h"

namespace {

// The broker's view of a grid of three clusters with 4, 2 and 1 free slots.
const std::vector<gridrt::ClusterOffer>& offers() {
  static const std::vector<gridrt::ClusterOffer> all = [] {
    std::vector<gridrt::ClusterOffer> o;
    const gridrt::Grid grid = gridrt::parse_grid("fuzz grid", gridrt::default_grid_xml(3, 4));
    const std::uint32_t free[] = {4, 2, 1};
    for (std::size_t i = 0; i < grid.clusters.size(); ++i) {
      o.push_back(gridrt::offer_of(grid.clusters[i], "127.0.0.1", static_cast<std::uint16_t>(7000 + i), i != 1));
      o.back().slots = free[i];
    }
    return o;
  }();
  return all;
}

void submit(std::string_view body) {
  const gridrt::JobSpec spec = gridrt::JobSpec::decode(body);
  if (spec.groups.empty() || spec.total_processes() == 0 || spec.total_processes() > gridrt::kMaxJobProcesses) std::abort();
  try {
    const gridrt::Topology t = gridrt::map_job(spec, offers());
    if (t.size() != spec.total_processes()) std::abort();
  } catch (const gridrt::InputError&) {
    // does not fit: refused with the figures, as the broker refuses it
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gridrt;
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 10) {
      case 0: submit(body); break;
      case 1: RelayRegistration::decode(body); break;
      case 2: PartStart::decode(body); break;
      case 3: ProcHello::decode(body); break;
      case 4: PartReady::decode(body); break;
      case 5: PartDone::decode(body); break;
      case 6: JobEnd::decode(body); break;
      case 7: {
        wire::Reader r(body);
        Topology::decode(r);
        break;
      }
      case 8: GridStatus::decode(body); break;
      case 9: LinkHello::decode(body); break;
    }
  } catch (const wire::BadBody&) {
    // refused, with a reason: the peer is dropped
  }
  return 0;
}
