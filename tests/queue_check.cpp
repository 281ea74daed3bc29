// Run as a job by test_end_to_end: the task queue's promises, checked from both ends.
//
// The super-master puts --tasks tasks (or every rank puts its share: --every-rank-puts);
// each task sleeps a duration drawn from its id (up to --max-us), spawns two children while
// its depth is below --spawn-depth, and returns a value computed from its payload and the
// ids of its children. The super-master checks that every result arrived exactly once, was
// right, and that the ids it learned of (the roots and every child a result names) are
// exactly the results it has; every process prints how many tasks it ran, so that the test
// can check that their sum is the number of tasks (none run twice, none skipped).
//
// --pad B adds B bytes to every task and result (a pattern from the task's seed, checked
// on arrival), so that chunks and batches of results fill the queue's messages.
// --progress K: every process says when it has run K tasks (a test then breaks something
// while the queue is at work). --die-in-finalize R: rank R dies (SIGKILL) a second after the
// queue ended, while the others wait in gridrt::finalize. --finalize-in-scope: gridrt::finalize
// is called while the queue and a communicator split from the world still exist (their
// destructors run after it, which must do no harm).
//
//   queue_check [--tasks N] [--spawn-depth D] [--max-us U] [--levels cluster|site|single]
//               [--every-rank-puts] [--bosses-idle] [--die-rank R --die-after K] [--pad B]
//               [--progress K] [--die-in-finalize R] [--finalize-in-scope]
#include "common/program_help.h"
#include <gridrt/queue.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace {

struct Job {
  std::uint64_t seed = 0;
  std::uint32_t depth = 0;
};
struct Answer {
  std::uint64_t seed = 0;   // the task's, echoed
  std::uint64_t value = 0;  // computed from it
  std::uint64_t children[2] = {0, 0};
  std::uint32_t spawned = 0;
  std::int32_t ran_on = -1;
};

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// A Job or Answer followed by `pad` bytes that depend on `seed`.
template <typename T> std::vector<char> padded(const T& head, std::uint64_t seed, long pad) {
  std::vector<char> out(sizeof head + static_cast<std::size_t>(pad));
  std::memcpy(out.data(), &head, sizeof head);
  for (long i = 0; i < pad; ++i)
    out[sizeof head + static_cast<std::size_t>(i)] = static_cast<char>((seed + static_cast<std::uint64_t>(i)) * 31);
  return out;
}
template <typename T> bool unpad(const char* data, std::size_t n, std::uint64_t T::*seed_of, long pad, T* head) {
  if (n != sizeof(T) + static_cast<std::size_t>(pad)) return false;
  std::memcpy(head, data, sizeof(T));
  return padded(*head, head->*seed_of, pad) == std::vector<char>(data, data + n);
}

int fail(const std::string& why) {
  std::fprintf(stderr, "queue_check: %s\n", why.c_str());
  std::fflush(stderr);
  return 1;
}

}  // namespace

const char* kUsage = R"(usage: queue_check [--tasks N] [--spawn-depth D] [--max-us U] [--levels cluster|site|single]
                   [--every-rank-puts] [--bosses-idle] [--die-rank R --die-after K] [--pad B]
                   [--progress K] [--die-in-finalize R] [--finalize-in-scope]
A test program run as a job by tests/test_end_to_end.cpp: the task queue's promises (every
result once and right, every task run once, termination), checked from both ends.
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  gridrt::init(&argc, &argv);
  long tasks = 100, depth_limit = 0, max_us = 0, die_rank = -1, die_after = 0, pad = 0, progress = 0, die_in_finalize = -1;
  bool every_rank_puts = false, finalize_in_scope = false;
  gridrt::QueueOptions opts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::atol(argv[++i]) : 0L; };
    if (a == "--tasks") tasks = value();
    else if (a == "--spawn-depth") depth_limit = value();
    else if (a == "--max-us") max_us = value();
    else if (a == "--every-rank-puts") every_rank_puts = true;
    else if (a == "--bosses-idle") opts.bosses_work = opts.master_works = false;
    else if (a == "--die-rank") die_rank = value();
    else if (a == "--die-after") die_after = value();
    else if (a == "--pad") pad = value();
    else if (a == "--progress") progress = value();
    else if (a == "--die-in-finalize") die_in_finalize = value();
    else if (a == "--finalize-in-scope") finalize_in_scope = true;
    else if (a == "--levels" && i + 1 < argc) {
      const std::string l = argv[++i];
      if (l == "single") opts.levels = {};
      else if (l == "site") opts.levels = {gridrt::Level::kSite, gridrt::Level::kCluster};
      else if (l != "cluster") return fail("--levels takes cluster, site or single, not '" + l + "'");
    } else {
      return fail("unknown argument " + a);
    }
  }
  const int me = gridrt::rank();
  {
    const gridrt::Comm halves = gridrt::Comm::world().split(me % 2, 0);
    gridrt::TaskQueue q(gridrt::Comm::world(), opts);
    std::map<gridrt::TaskId, Answer> results;
    std::set<gridrt::TaskId> known;  // roots put, and children results named
    std::string problem;
    if (q.is_master()) {
      q.on_result([&](gridrt::TaskId id, const char* data, std::size_t n) {
        Answer a;
        if (!unpad(data, n, &Answer::seed, pad, &a)) {
          problem = "result of task " + std::to_string(id) + " has " + std::to_string(n) + " bytes or a broken pattern";
          return;
        }
        if (!results.emplace(id, a).second) problem = "task " + std::to_string(id) + " reported twice";
        for (std::uint32_t k = 0; k < a.spawned; ++k) known.insert(a.children[k]);
      });
    }
    // Roots: all at the super-master, or each rank its share.
    std::map<gridrt::TaskId, std::uint64_t> root_seeds;
    const int n = gridrt::size();
    for (long t = 0; t < tasks; ++t) {
      if (every_rank_puts ? t % n != me : !q.is_master()) continue;
      Job j{static_cast<std::uint64_t>(t) * 7919 + 1, 0};
      const std::vector<char> body = padded(j, j.seed, pad);
      root_seeds[q.put(body.data(), body.size())] = j.seed;
    }
    long ran = 0;
    while (auto t = q.next()) {
      Job j;
      if (!unpad(t->payload.data(), t->payload.size(), &Job::seed, pad, &j))
        return fail("task " + std::to_string(t->id) + " arrived with " + std::to_string(t->payload.size()) + " bytes or a broken pattern");
      if (max_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(mix(j.seed) % static_cast<std::uint64_t>(max_us)));
      Answer a;
      a.seed = j.seed;
      a.value = mix(j.seed ^ 0xabcdef);
      a.ran_on = me;
      if (static_cast<long>(j.depth) < depth_limit)
        for (int k = 0; k < 2; ++k) {
          const Job child{mix(j.seed + static_cast<std::uint64_t>(k) + 1), j.depth + 1};
          const std::vector<char> body = padded(child, child.seed, pad);
          a.children[a.spawned++] = q.put(body.data(), body.size());
        }
      if (me == die_rank && ++ran > die_after) std::raise(SIGKILL);  // a whole cluster part goes with it
      if (me != die_rank) ++ran;
      if (ran == progress) {
        std::printf("rank %d has run %ld tasks\n", me, ran);
        std::fflush(stdout);
      }
      const std::vector<char> result = padded(a, a.seed, pad);
      q.done(*t, result.data(), result.size());
    }
    std::printf("rank %d ran %ld tasks", me, ran);
    if (!q.is_master() && q.stats().requeued > 0)  // a site's boss that lost another cluster of its site
      std::printf(", took back %llu from a lost cluster", static_cast<unsigned long long>(q.stats().requeued));
    std::printf("\n");
    if (q.is_master()) {
      // Results that are neither this rank's roots nor named children: roots put elsewhere.
      for (auto& [id, seed] : root_seeds) known.insert(id);
      long roots = 0;
      for (auto& [id, a] : results) {
        if (a.value != mix(a.seed ^ 0xabcdef)) problem = "task " + std::to_string(id) + " has a wrong value";
        if (root_seeds.count(id) && root_seeds[id] != a.seed) problem = "task " + std::to_string(id) + " ran another's payload";
        for (std::uint32_t k = 0; k < a.spawned; ++k) {
          auto c = results.find(a.children[k]);
          if (c != results.end() && c->second.seed != mix(a.seed + k + 1))
            problem = "child " + std::to_string(k) + " of task " + std::to_string(id) + " ran another's payload";
        }
        if (!known.count(id)) ++roots;  // put by another rank
      }
      for (auto id : known)
        if (!results.count(id)) problem = "task " + std::to_string(id) + " has no result";
      long expected = tasks;
      for (long d = 1, width = tasks; d <= depth_limit; ++d) expected += (width *= 2);
      if (static_cast<long>(results.size()) != expected)
        problem = std::to_string(results.size()) + " results where " + std::to_string(expected) + " tasks were expected";
      if (!every_rank_puts && roots != 0) problem = std::to_string(roots) + " results of tasks nobody put";
      if (!problem.empty()) return fail(problem);
      const auto s = q.stats();
      std::printf("queue checks passed: %zu tasks, %llu duplicates ignored, %llu requeued", results.size(),
                  static_cast<unsigned long long>(s.duplicates), static_cast<unsigned long long>(s.requeued));
      for (const auto& c : gridrt::lost_clusters()) std::printf(", lost %s", c.c_str());
      std::printf("\n");
    }
    std::fflush(stdout);
    if (finalize_in_scope) {
      halves.barrier();
      gridrt::finalize();
      return 0;  // the queue and the communicator go after the runtime
    }
  }
  if (me == die_in_finalize) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::raise(SIGKILL);
  }
  gridrt::finalize();
  return 0;
}
