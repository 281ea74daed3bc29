// The broker's journal read back: ids continue after the last one, jobs a crash cut off
// are found and ended, and no text a peer chose can forge a line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "broker/journal.h"

using namespace gridrt;

namespace {

std::string journal_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::filesystem::remove(path);
  return path;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l.substr(l.find(' ') + 1));  // without the time
  return lines;
}

TEST(Journal, IdsContinueAndCutOffJobsAreEndedOnce) {
  const std::string path = journal_path("journal-ids");
  {
    Journal j(path);
    EXPECT_EQ(j.next_job_id(), 1u);
    EXPECT_TRUE(j.cut_off().empty());
    j.record(Journal::started(1) + "for user a");
    j.record(Journal::ended(1) + "with status 0");
    j.record(Journal::started(2) + "for user a");
    j.record("refused 127.0.0.1:9 (user b): job 7 started for nobody");  // not a job line
    j.record(Journal::started(3) + "for user b");
  }  // the broker crashes with jobs 2 and 3 running
  {
    Journal j(path);
    EXPECT_EQ(j.next_job_id(), 4u);
    EXPECT_EQ(j.cut_off(), (std::vector<std::uint64_t>{2, 3}));
    j.end_cut_off("cut");
    EXPECT_TRUE(j.cut_off().empty());
  }
  const Journal again(path);
  EXPECT_EQ(again.next_job_id(), 4u);
  EXPECT_TRUE(again.cut_off().empty());
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[5], "job 2 ended without a status: cut");
  EXPECT_EQ(lines[6], "job 3 ended without a status: cut");
}

TEST(Journal, ControlCharactersCannotForgeALine) {
  const std::string path = journal_path("journal-forged");
  {
    Journal j(path);
    j.record(Journal::started(1) + "for user \"a\nTIME job 1 ended with status 0\r\x7f\"");
  }
  const Journal j(path);
  EXPECT_EQ(j.cut_off(), (std::vector<std::uint64_t>{1}));
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "job 1 started for user \"a\\x0aTIME job 1 ended with status 0\\x0d\\x7f\"");
}

TEST(Journal, ALineACrashCutShortStaysAlone) {
  const std::string path = journal_path("journal-torn");
  std::ofstream(path) << "2026-01-01T00:00:00Z job 4 started for user a\n2026-01-01T00:00:01Z job 4 end";
  {
    Journal j(path);
    EXPECT_EQ(j.next_job_id(), 5u);
    EXPECT_EQ(j.cut_off(), (std::vector<std::uint64_t>{4}));
    j.end_cut_off("cut");
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "job 4 end");
  EXPECT_EQ(lines[2], "job 4 ended without a status: cut");
}

TEST(Journal, AnUnwritablePathIsNamed) {
  try {
    Journal j("/nonexistent/dir/journal");
    ADD_FAILURE() << "opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot append to the journal /nonexistent/dir/journal"), std::string::npos) << e.what();
  }
}

}  // namespace
