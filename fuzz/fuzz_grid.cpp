// libFuzzer target: the grid description parser (read by the broker, the relays and gridrun).
// It returns a grid or throws InputError naming the place; nothing else.
#include <cstdint>
#include <string>

#include "common/grid.h"
#include "common/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gridrt;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const Grid grid = parse_grid("fuzz-grid.xml", text);
    (void)grid.total_slots();
  } catch (const InputError&) {}
  return 0;
}
