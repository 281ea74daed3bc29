#include "ledger.h"

#include <algorithm>

namespace gridrt::queue {

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

TaskId child_id(TaskId parent, std::uint64_t k) { return splitmix64(splitmix64(parent) ^ (k + 1)); }
TaskId root_id(int rank, std::uint64_t k) { return splitmix64((static_cast<std::uint64_t>(rank) << 40) ^ k ^ 0x5a5a000000000000ull); }

bool Ledger::put(Task t) {
  if (open_.count(t.id) || done_.count(t.id) || failed_set_.count(t.id)) return false;
  open_[t.id] = Where{};
  waiting_.push_back(std::move(t));
  return true;
}

std::vector<Task> Ledger::take(int holder, std::size_t max_tasks, std::size_t max_bytes, std::size_t item_cost) {
  std::vector<Task> out;
  std::size_t bytes = 0;
  auto& mine = holding_[holder];
  while (!waiting_.empty() && out.size() < max_tasks) {
    const std::size_t size = waiting_.front().payload.size() + item_cost;
    if (!out.empty() && bytes + size > max_bytes) break;
    Task t = std::move(waiting_.front());
    waiting_.pop_front();
    bytes += size;
    Where& w = open_[t.id];
    w.holder = holder;
    w.handed = handed_++;
    out.push_back(t);
    mine.emplace(t.id, std::move(t));
    ++held_count_;
  }
  return out;
}

void Ledger::withdraw(TaskId id, const Where& w) {
  if (w.holder < 0) {
    waiting_.erase(std::find_if(waiting_.begin(), waiting_.end(), [id](const Task& t) { return t.id == id; }));
  } else {
    holding_[w.holder].erase(id);
    --held_count_;
  }
  open_.erase(id);
}

Ledger::Result Ledger::complete(int holder, TaskId id) {
  if (done_.count(id) || failed_set_.count(id)) return Result::kDuplicate;
  const auto it = open_.find(id);
  if (it == open_.end()) return Result::kUnknown;
  const Where w = it->second;
  const auto lost = lost_by_.find(id);
  const bool late = lost != lost_by_.end() && std::find(lost->second.begin(), lost->second.end(), holder) != lost->second.end();
  if (w.holder != holder && !late) return Result::kUnknown;
  withdraw(id, w);  // from its holder, or (a late result) wherever it waits or is held again
  if (lost != lost_by_.end()) lost_by_.erase(lost);
  done_.insert(id);
  return Result::kTaken;
}

std::size_t Ledger::lose(int holder) {
  const auto it = holding_.find(holder);
  if (it == holding_.end()) return 0;
  std::vector<Task> tasks;
  for (auto& [id, t] : it->second) tasks.push_back(std::move(t));
  holding_.erase(it);
  held_count_ -= tasks.size();
  std::sort(tasks.begin(), tasks.end(), [this](const Task& a, const Task& b) { return open_.at(a.id).handed < open_.at(b.id).handed; });
  std::size_t requeued = 0;
  for (auto t = tasks.rbegin(); t != tasks.rend(); ++t) {
    Where& w = open_[t->id];
    lost_by_[t->id].push_back(holder);
    if (++w.losses > crash_limit_) {
      failed_.push_back(t->id);
      failed_set_.insert(t->id);
      open_.erase(t->id);
      lost_by_.erase(t->id);
      continue;
    }
    w.holder = -1;
    waiting_.push_front(std::move(*t));
    ++requeued;
  }
  return requeued;
}

std::size_t Ledger::held(int holder) const {
  const auto it = holding_.find(holder);
  return it == holding_.end() ? 0 : it->second.size();
}

}  // namespace gridrt::queue
