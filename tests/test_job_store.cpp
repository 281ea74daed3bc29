// What the broker writes ahead and what a relay keeps of a job's output, read back: a job's
// state survives as it was decided, a damaged file is named and left alone, the files keep
// their secrets to their owner, and a replay gives each line after a point once, saying how
// many the budget dropped.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "broker/job_store.h"
#include "relay/output_log.h"

using namespace gridrt;
namespace fs = std::filesystem;

namespace {

JobRecord a_job(std::uint64_t id) {
  JobRecord j;
  j.id = id;
  j.spec.app_id = "app";
  j.spec.executable = "/bin/true";
  j.spec.args = {"one", "two words"};
  j.spec.env = {{"NAME", "value"}};
  j.spec.groups.push_back({"g", 3});
  j.topology.sites = {"s"};
  j.topology.groups = {"g"};
  j.topology.rank_group = {0, 0, 0};
  for (std::uint32_t c = 0; c < 2; ++c) {
    ClusterPart part;
    part.name = "c" + std::to_string(c);
    part.first_rank = 2 * c;
    part.count = c == 0 ? 2 : 1;
    j.topology.clusters.push_back(part);
  }
  j.secret = "0123456789abcdef";
  j.submitter = "user alice";
  j.status = {0, -1, 137};
  j.first_failure = 137;
  j.first_failed_rank = 2;
  j.failure_note = "rank 2 (cluster c1) killed by signal 9";
  j.lost_notes = {"a note"};
  j.killed = true;
  return j;
}

TEST(JobStore, AJobsStateReadsBackAsItWasWritten) {
  const std::string dir = ::testing::TempDir() + "/job-store";
  fs::remove_all(dir);
  const JobStore store(dir);
  PartRecord p0{"c0", true, false, false, true, {"n0", "n0"}, {"", "10.0.0.1:7100"}};
  PartRecord p1{"c1", true, true, true, false, {"n1"}, {""}};
  EXPECT_EQ(store.next_id(), 1u);
  store.save_next_id(8);
  EXPECT_EQ(JobStore(dir).next_id(), 8u);  // ids go on after a restart, journal or not
  store.save(a_job(7), {&p0, &p1});
  store.save(a_job(3), {&p0, &p1});
  std::vector<std::string> unreadable;
  const auto saved = store.load(unreadable);
  EXPECT_TRUE(unreadable.empty()) << unreadable.front();
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].job.id, 3u);  // in id order
  const JobRecord& j = saved[1].job;
  EXPECT_EQ(j.id, 7u);
  EXPECT_EQ(j.spec.args, a_job(7).spec.args);
  EXPECT_EQ(j.spec.env, a_job(7).spec.env);
  EXPECT_EQ(j.topology.clusters.size(), 2u);
  EXPECT_EQ(j.topology.clusters[1].first_rank, 2u);
  EXPECT_EQ(j.secret, "0123456789abcdef");
  EXPECT_EQ(j.submitter, "user alice");
  EXPECT_EQ(j.status, (std::vector<int>{0, -1, 137}));
  EXPECT_EQ(j.first_failure, 137);
  EXPECT_EQ(j.first_failed_rank, 2u);
  EXPECT_EQ(j.failure_note, a_job(7).failure_note);
  EXPECT_EQ(j.lost_notes, a_job(7).lost_notes);
  EXPECT_TRUE(j.killed);
  EXPECT_FALSE(j.finalize_released);
  ASSERT_EQ(saved[1].parts.size(), 2u);
  EXPECT_TRUE(saved[1].parts[0].finalizing);
  EXPECT_FALSE(saved[1].parts[0].done);
  EXPECT_TRUE(saved[1].parts[1].lost && saved[1].parts[1].done);
  EXPECT_EQ(saved[1].parts[0].endpoints[1], "10.0.0.1:7100");
  // The secrets are the broker's alone.
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir + "/job-7").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  store.remove(7);
  unreadable.clear();
  EXPECT_EQ(store.load(unreadable).size(), 1u);
}

TEST(JobStore, ADamagedFileIsNamedAndLeftAlone) {
  const std::string dir = ::testing::TempDir() + "/job-store-damaged";
  fs::remove_all(dir);
  const JobStore store(dir);
  PartRecord p0{"c0", false, false, false, false, {}, {}}, p1 = p0;
  store.save(a_job(1), {&p0, &p1});
  const std::string whole = JobStore::encode(a_job(2), {&p0, &p1});
  std::ofstream(dir + "/job-2", std::ios::binary) << whole.substr(0, whole.size() / 2);  // cut short
  std::ofstream(dir + "/job-3", std::ios::binary) << "hello";                            // not ours
  std::ofstream(dir + "/job-4", std::ios::binary) << whole;                              // job 2 under another name
  std::ofstream(dir + "/job-5.new", std::ios::binary) << "a write cut short";            // never renamed: ignored
  std::vector<std::string> unreadable;
  const auto saved = store.load(unreadable);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].job.id, 1u);
  ASSERT_EQ(unreadable.size(), 3u);
  std::string all;
  for (const auto& u : unreadable) all += u + "\n";
  EXPECT_NE(all.find(dir + "/job-3: not a gridrt job state file"), std::string::npos) << all;
  EXPECT_NE(all.find(dir + "/job-4: it holds job 2"), std::string::npos) << all;
  EXPECT_NE(all.find(dir + "/job-2: "), std::string::npos) << all;
  EXPECT_TRUE(fs::exists(dir + "/job-2"));  // left for whoever looks into it
  // Counts that do not fit the mapping are refused, not believed.
  PartRecord extra = p0;
  EXPECT_THROW(JobStore::decode(JobStore::encode(a_job(9), {&p0, &p1, &extra})), wire::BadBody);
}

TEST(JobStore, AStateDirectoryThatIsAFileIsRefusedByName) {
  const std::string path = ::testing::TempDir() + "/job-store-file";
  std::ofstream(path) << "x";
  try {
    JobStore s(path);
    ADD_FAILURE() << "accepted a file as its directory";
  } catch (const std::runtime_error& e) { EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what(); }
}

wire::Frame line(const std::string& text) { return wire::make_frame(wire::Type::kOutput, text, 1); }

TEST(OutputLog, ReplaysEveryLineAfterAPointOnceAndCountsWhatTheBudgetDropped) {
  OutputLog log(10 * (wire::kHeaderSize + 4));  // ten 4-byte lines
  for (int i = 1; i <= 25; ++i) {
    wire::Frame f = line(std::to_string(1000 + i));
    log.append(f);
    EXPECT_EQ(f.header.seq, static_cast<std::uint64_t>(i));  // numbered from 1, as sent
  }
  EXPECT_EQ(log.last(), 25u);
  std::uint64_t dropped = 99;
  auto after = log.after(20, &dropped);
  EXPECT_EQ(dropped, 0u);
  ASSERT_EQ(after.size(), 5u);
  EXPECT_EQ(after.front().header.seq, 21u);
  EXPECT_EQ(after.front().body, "1021");
  after = log.after(25, &dropped);
  EXPECT_TRUE(after.empty());
  EXPECT_EQ(dropped, 0u);
  // Lines 1-15 are past the budget: a replay from the start gets 16-25 and says 15 are gone.
  after = log.after(0, &dropped);
  EXPECT_EQ(dropped, 15u);
  ASSERT_EQ(after.size(), 10u);
  EXPECT_EQ(after.front().header.seq, 16u);
  EXPECT_LE(log.bytes(), 10 * (wire::kHeaderSize + 4));
}

}  // namespace
