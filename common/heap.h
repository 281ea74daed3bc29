// How a daemon's heap treats memory it frees, for the data path's churn.
#pragma once

namespace gridrt {

// A relay allocates and frees frame bodies of up to 64 KiB thousands of times a second.
// glibc's default gives the freed top of the heap back to the kernel as soon as more than
// 128 KiB of it is free (and serves blocks above 128 KiB by mmap), so that the next
// frames fault the same pages in again, each zeroed by the kernel: a relay streaming 1 MiB
// messages spent a tenth of its time in brk, page faults and their clearing
// (docs/benchmarks.md, "Where the relay path's time goes"). This keeps up to 64 MiB of
// freed heap for reuse and serves blocks below 4 MiB from the heap. The peak a relay uses
// (VmHWM) does not change; what it no longer uses is returned more lazily.
// Process-wide (mallopt): for daemons' mains, never for a library inside users' programs.
void keep_freed_heap_for_reuse();

}  // namespace gridrt
