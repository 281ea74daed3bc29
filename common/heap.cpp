#include "common/heap.h"

#include <malloc.h>

namespace gridrt {

void keep_freed_heap_for_reuse() {
  // (Setting any of these turns glibc's own adjustment of the mmap threshold off: all three
  // are set, so that none is left at a default meant to be adjusted.)
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  ::mallopt(M_TOP_PAD, 1 << 20);
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
}

}  // namespace gridrt
