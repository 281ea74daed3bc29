// How a daemon's heap treats memory it frees, for the data path's churn.
#pragma once

namespace gridrt {

// A relay allocates and frees frame bodies of up to 64 KiB thousands of times a second.
// glibc's default gives the freed top of the heap back to the kernel as soon as more than
// 128 KiB of it is free (and serves blocks above 128 KiB by mmap), so that the next
// frames fault the same pages in again, each zeroed by the kernel: a relay streaming 1 MiB
// messages spent about a sixth of its time in brk, page faults, their clearing and malloc
// (docs/benchmarks.md, "Frames written by the thread that sends them, and a relay's heap
// kept"). This keeps up to 64 MiB of freed heap for reuse and serves blocks below 4 MiB
// from the heap. The peak a relay uses (VmHWM) stayed within its run-to-run spread (64
// streams: 61.8-68.8 MiB with it, 61.8-68.8 without); what it no longer uses is returned
// more lazily.
// Process-wide (mallopt): for daemons' mains, never for a library inside users' programs.
void keep_freed_heap_for_reuse();

}  // namespace gridrt
