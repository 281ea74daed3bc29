// The settings table (common/settings.h): every value checked where it is read, none read
// around the table, and docs/settings.md written from it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/settings.h"

namespace gridrt {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sets a variable for one test and puts back what was there.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) before_ = v;
    ::setenv(name, value, 1);
  }
  ~Env() {
    if (before_) ::setenv(name_, before_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> before_;
};

TEST(Settings, ValuesAreCheckedAgainstTheirRows) {
  ::unsetenv("GRIDRT_COLL");
  EXPECT_EQ(settings::value("GRIDRT_COLL"), std::nullopt);
  {
    Env e("GRIDRT_COLL", "hier");
    EXPECT_EQ(settings::value("GRIDRT_COLL"), "hier");
  }
  {
    Env e("GRIDRT_COLL", "fast");
    try {
      settings::value("GRIDRT_COLL");
      ADD_FAILURE() << "GRIDRT_COLL=fast was taken";
    } catch (const std::invalid_argument& x) { EXPECT_STREQ(x.what(), "GRIDRT_COLL='fast' must be one of auto, hier or flat"); }
  }
  // A number in its range; below it, past it, signed, with a unit or empty, refused.
  for (const char* bad : {"1023", "1073741825", "-4096", "64k", ""}) {
    Env e("GRIDRT_SLICE", bad);
    EXPECT_THROW(settings::number("GRIDRT_SLICE"), std::invalid_argument) << bad;
  }
  {
    Env e("GRIDRT_SLICE", "65536");
    EXPECT_EQ(settings::number("GRIDRT_SLICE"), 65536u);
  }
  // A number that may also be a word: the word is no number.
  {
    Env e("GRIDRT_GATHER_PIECES", "auto");
    EXPECT_EQ(settings::value("GRIDRT_GATHER_PIECES"), "auto");
    EXPECT_EQ(settings::number("GRIDRT_GATHER_PIECES"), std::nullopt);
  }
  {
    Env e("GRIDRT_GATHER_PIECES", "0");
    EXPECT_THROW(settings::value("GRIDRT_GATHER_PIECES"), std::invalid_argument);
  }
  // Text: anything; empty is unset.
  {
    Env e("GRIDRT_MODEL", "");
    EXPECT_EQ(settings::value("GRIDRT_MODEL"), std::nullopt);
  }
  // first_bad names the first bad setting of the readers asked, and only theirs.
  {
    Env e("GRIDRT_NODE_LEVEL", "yes");
    EXPECT_EQ(settings::first_bad(settings::kDaemons), std::nullopt);
    const auto bad = settings::first_bad(settings::kProcesses);
    ASSERT_TRUE(bad.has_value());
    EXPECT_NE(bad->find("GRIDRT_NODE_LEVEL='yes'"), std::string::npos) << *bad;
  }
  EXPECT_THROW(settings::value("GRIDRT_NO_SUCH_SETTING"), std::logic_error);
}

TEST(Settings, EveryRowSaysWhatItMayBe) {
  for (const settings::Setting& s : settings::table()) {
    EXPECT_NE(std::string(s.meaning), "") << s.name;
    if (s.readers & settings::kByGridrt) continue;
    EXPECT_NE(std::string(s.summary), "") << s.name;
    EXPECT_NE(std::string(s.fallback), "") << s.name;
    if (s.is_number()) {
      EXPECT_LE(s.low, s.high) << s.name;
    } else if (!s.words.empty()) {  // a choice's default is its first word (what the readers take unset)
      EXPECT_EQ(s.words.front(), s.fallback) << s.name;
    }
  }
}

// No program reads a gridrt setting but through the table, and every name read is in it.
TEST(Settings, NoneIsReadAroundTheTable) {
  const std::filesystem::path root = GRIDRT_SOURCE_DIR;
  const std::regex around("getenv\\(\"GRIDRT_"), through("settings::(value|number)\\(\"([A-Z_]+)\"\\)");
  int reads = 0;
  for (const char* dir : {"common", "runtime", "relay", "broker", "launcher", "bench", "models"})
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".h" && ext != ".hpp") continue;
      const std::string text = slurp(entry.path());
      if (entry.path().filename() != "settings.cpp") {
        EXPECT_FALSE(std::regex_search(text, around)) << entry.path() << " reads a setting around the table";
      }
      for (std::sregex_iterator m(text.begin(), text.end(), through), end; m != end; ++m, ++reads) {
        EXPECT_NO_THROW(settings::find((*m)[2].str())) << entry.path() << " reads " << (*m)[2].str();
      }
    }
  EXPECT_GE(reads, 10);
}

TEST(Settings, TheDocsAreWrittenFromTheTable) {
  EXPECT_EQ(slurp(std::filesystem::path(GRIDRT_SOURCE_DIR) / "docs/settings.md"), settings::markdown())
      << "docs/settings.md differs from the table: build/bin/gridrun settings --markdown > docs/settings.md";
}

}  // namespace
}  // namespace gridrt
