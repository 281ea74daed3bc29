// The pure parts of the files that travel with a job (common/staging.h, the JobProfile's
// <stageInOut>): digests, the content cache, files arriving in pieces, names that must stay
// inside a job's directory. The whole path runs in test_end_to_end (Staging.*) and on the
// three-site network (test_network).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/grid.h"
#include "common/jobprofile.h"
#include "common/staging.h"
#include "common/xml.h"

using namespace gridrt;
namespace fs = std::filesystem;

namespace {

std::string temp_dir(const std::string& name) {
  const std::string d = fs::path(::testing::TempDir() + "/" + name).lexically_normal().string();
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// A profile running /bin/true with `stage` inside <execution>.
std::string profile_with(const std::string& stage, const std::string& url = "/bin/true") {
  return "<grmsJob appId=\"a\"><task taskId=\"t\"><resourcesDescription><topology><group groupId=\"g\"/>\n"
         "<processes><groupIdReference groupId=\"g\"/><processesCount><value>2</value></processesCount></processes>\n"
         "</topology></resourcesDescription><execution type=\"mpich\">\n"
         "<executable><execFile><file><url>" +
         url + "</url></file></execFile></executable>\n" + stage + "</execution></task></grmsJob>\n";
}

std::string parse_error(const std::string& text) {
  try {
    parse_job_profile("job.xml", text, {});
  } catch (const InputError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(StagedFiles, DigestsAreSha256OfTheContent) {
  const std::string d = temp_dir("staging-digest");
  // SHA-256("abc"), FIPS 180-2 appendix B.1.
  const FileDigest abc = digest_of_file(write(d + "/abc", "abc"));
  EXPECT_EQ(abc.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(abc.size, 3u);
  EXPECT_EQ(digest_of_file(write(d + "/empty", "")).sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_THROW(digest_of_file(d + "/none"), std::runtime_error);
  EXPECT_TRUE(is_sha256_hex(abc.sha256));
  EXPECT_FALSE(is_sha256_hex("../" + abc.sha256.substr(3)));
  EXPECT_FALSE(is_sha256_hex(abc.sha256.substr(1)));
}

TEST(StagedFiles, NamesStayInsideTheJobDirectory) {
  for (const char* good : {"a", "in.txt", "data/part-1", "a/b/c", ".hidden"}) EXPECT_TRUE(safe_relative_name(good)) << good;
  for (const char* bad : {"", "/etc/passwd", "..", "../x", "a/../../x", "a//b", "a/", "./a", "a/."})
    EXPECT_FALSE(safe_relative_name(bad)) << bad;
  EXPECT_FALSE(safe_relative_name(std::string(256, 'x')));
  EXPECT_FALSE(safe_relative_name(std::string("a\0b", 3)));
}

TEST(StagedFiles, TheCacheTakesOnlyWhatItWasAskedForAndStaysWithinItsBound) {
  const std::string d = temp_dir("staging-cache");
  ContentCache cache(d + "/cache", 10);
  const std::string abc = digest_of_file(write(d + "/abc", "abc")).sha256;
  EXPECT_FALSE(cache.find(abc));
  // A file whose content is not the digest asked for is refused and removed.
  const std::string wrong = write(cache.temp_path(abc), "abd");
  try {
    cache.admit(wrong, abc);
    ADD_FAILURE() << "admitted a wrong content";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not " + abc + " as asked"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(wrong));
  EXPECT_FALSE(cache.find(abc));
  const std::string path = cache.admit(write(cache.temp_path(abc), "abc"), abc);
  EXPECT_EQ(cache.find(abc), path);
  // 3 + 4 + 5 bytes > 10: the one used least lately goes, not the one just used.
  const std::string four = digest_of_file(write(d + "/four", "four")).sha256;
  cache.admit(write(cache.temp_path(four), "four"), four);
  ::utimensat(AT_FDCWD, (d + "/cache/" + four).c_str(), nullptr, 0);
  struct timespec old[2] = {{1, 0}, {1, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), old, 0);  // abc: used long ago
  const std::string five = digest_of_file(write(d + "/five", "fives")).sha256;
  cache.admit(write(cache.temp_path(five), "fives"), five);
  EXPECT_FALSE(cache.find(abc));
  EXPECT_TRUE(cache.find(four));
  EXPECT_TRUE(cache.find(five));
  EXPECT_EQ(cache.bytes_held(), 9u);
  // What a relay left arriving when it died goes with the next one.
  write(d + "/cache/.incoming-0123-9", "half");
  ContentCache again(d + "/cache", 10);
  EXPECT_FALSE(fs::exists(d + "/cache/.incoming-0123-9"));
  EXPECT_TRUE(again.find(five));
}

static std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(StagedFiles, AFileArrivesInOrderAndWhole) {
  const std::string d = temp_dir("staging-incoming");
  {
    IncomingFile f(d + "/f", 6, "file 'f'");
    f.write(0, "abc");
    EXPECT_THROW(f.write(2, "x"), std::runtime_error);     // not where the last ended
    EXPECT_THROW(f.write(3, "defg"), std::runtime_error);  // past the announced size
    EXPECT_THROW(f.finish(), std::runtime_error);          // short
    f.write(3, "def");
    f.finish();
  }
  EXPECT_EQ(contents(d + "/f"), "abcdef");
  {
    // Asked again (the sender's link broke): empty, waiting for the first byte again.
    IncomingFile h(d + "/h", 6, "file 'h'");
    h.write(0, "xyz");
    h.restart();
    EXPECT_TRUE(h.restarting());
    EXPECT_EQ(h.received(), 0u);
    EXPECT_EQ(fs::file_size(d + "/h"), 0u);
    h.write(0, "abc");
    EXPECT_FALSE(h.restarting());
    h.write(3, "def");
    h.finish();
    EXPECT_EQ(contents(d + "/h"), "abcdef");
    EXPECT_THROW(h.restart(), std::runtime_error);  // after its end
    // Byte 0 again while it arrives: its sender began again, whole.
    IncomingFile k(d + "/k", 4, "file 'k'");
    k.write(0, "12");
    k.write(0, "ab");
    k.write(2, "cd");
    k.finish();
    EXPECT_EQ(contents(d + "/k"), "abcd");
  }
  {
    IncomingFile g(d + "/g", 5, "file 'g'");
    g.write(0, "ab");
  }  // given up: removed
  EXPECT_FALSE(fs::exists(d + "/g"));
}

TEST(StagedFiles, SizesAreReadAsUsersWriteThem) {
  EXPECT_EQ(parse_bytes("512", "--x"), 512u);
  EXPECT_EQ(parse_bytes("4K", "--x"), 4096u);
  EXPECT_EQ(parse_bytes("2MiB", "--x"), 2u << 20);
  EXPECT_EQ(parse_bytes("16G", "--x"), 16ull << 30);
  for (const char* bad : {"", "G", "-1", "1.5G", "10 G", "12Q"}) EXPECT_THROW(parse_bytes(bad, "--x"), std::invalid_argument) << bad;
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(12), "12 bytes");
}

TEST(JobProfile, StageInOutFilesAreReadWithTheirDigests) {
  const std::string d = temp_dir("staging-profile");
  write(d + "/in.txt", "abc");
  const JobSpec s = parse_job_profile(
      "job.xml",
      profile_with("<stageInOut>"
                   "<file name=\"input.txt\" type=\"in\"><location type=\"URL\">file://" +
                   d +
                   "/in.txt</location></file>"
                   "<file name=\"data/w.csv\" type=\"in\"><location type=\"URL\">https://example.org/w.csv?v=2</location></file>"
                   "<file name=\"out/r.txt\" type=\"out\"><location type=\"URL\">" +
                   d +
                   "/results</location></file>"
                   "</stageInOut>"),
      {});
  ASSERT_EQ(s.files.size(), 4u);
  EXPECT_EQ(s.files[0].role, StagedFile::Role::kExecutable);
  EXPECT_EQ(s.files[0].name, "true");
  EXPECT_EQ(s.files[0].sha256, digest_of_file("/bin/true").sha256);
  EXPECT_TRUE(s.files[0].executable);
  EXPECT_EQ(s.files[1].name, "input.txt");
  EXPECT_EQ(s.files[1].source, d + "/in.txt");
  EXPECT_EQ(s.files[1].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(s.files[1].size, 3u);
  EXPECT_TRUE(s.files[2].is_url());
  EXPECT_FALSE(s.files[2].carried());
  EXPECT_EQ(s.files[3].role, StagedFile::Role::kOutput);
  EXPECT_EQ(s.files[3].source, d + "/results");
  EXPECT_EQ(s.carried_bytes(), s.files[0].size + 3);
  // Through the wire and back, as the broker and the relays get it.
  const JobSpec back = JobSpec::decode(s.encode());
  ASSERT_EQ(back.files.size(), 4u);
  EXPECT_EQ(back.files[3].name, "out/r.txt");
  EXPECT_EQ(back.files[1].sha256, s.files[1].sha256);
  // An executable from an http URL is named by its last path component.
  const JobSpec web = parse_job_profile("job.xml", profile_with("", "http://10.0.0.1:8080/apps/hello?x=1"), {});
  EXPECT_EQ(web.executable, "http://10.0.0.1:8080/apps/hello?x=1");
  EXPECT_EQ(web.files[0].name, "hello");
}

TEST(JobProfile, BadStagedFilesAreRefusedWithTheirPosition) {
  const auto file = [](const std::string& name, const std::string& type, const std::string& url) {
    return "<stageInOut>\n<file name=\"" + name + "\" type=\"" + type + "\"><location type=\"URL\">" + url +
           "</location></file></stageInOut>\n";
  };
  std::string msg = parse_error(profile_with(file("x", "in", "gsiftp://host/~/x")));
  EXPECT_EQ(msg.rfind("job.xml:6:", 0), 0u) << msg;
  EXPECT_NE(msg.find("unsupported URL scheme 'gsiftp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("globus-url-copy"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("../x", "in", "/bin/true")));
  EXPECT_NE(msg.find("must be a relative path inside the job's directory"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("true", "in", "/bin/true")));
  EXPECT_NE(msg.find("is given twice (or is the executable's)"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("x", "both", "/bin/true")));
  EXPECT_NE(msg.find("expected in or out"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("x", "out", "http://host/results")));
  EXPECT_NE(msg.find("a plain path or a file:// URL of a directory"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("x", "out", "/bin/true")));
  EXPECT_NE(msg.find("is not a directory"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("x", "in", "/no/such/file")));
  EXPECT_NE(msg.find("input file '/no/such/file' does not exist"), std::string::npos) << msg;
  msg = parse_error(profile_with(file("x", "in", "/bin/true") + "<workingDirectory>/tmp</workingDirectory>\n"));
  EXPECT_NE(msg.find("remove <workingDirectory>"), std::string::npos) << msg;
  msg = parse_error(profile_with("", "ftp://host/x"));
  EXPECT_NE(msg.find("unsupported URL scheme 'ftp'"), std::string::npos) << msg;
  msg = parse_error(profile_with("", "http://host/"));
  EXPECT_NE(msg.find("does not end in a file name"), std::string::npos) << msg;
}

TEST(StagedFiles, FetchersInTheGridDescriptionAreChecked) {
  const auto grid_with = [](const std::string& fetcher) {
    return "<grid><cluster name=\"c\" slots=\"1\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>"
           "<launch>mpiexec -n {np}</launch></cluster>\n" +
           fetcher + "</grid>";
  };
  const Grid g = parse_grid("grid.xml", grid_with("<fetcher scheme=\"gsiftp\" command=\"globus-url-copy {url} file://{file}\"/>"));
  ASSERT_EQ(g.fetchers.size(), 1u);
  EXPECT_EQ(g.fetchers[0].scheme, "gsiftp");
  EXPECT_EQ(g.fetchers[0].command, (std::vector<std::string>{"globus-url-copy", "{url}", "file://{file}"}));
  const auto error = [&](const std::string& fetcher) {
    try {
      parse_grid("grid.xml", grid_with(fetcher));
    } catch (const InputError& e) { return std::string(e.what()); }
    return std::string();
  };
  EXPECT_NE(error("<fetcher scheme=\"http\" command=\"curl {url} -o {file}\"/>").find("needs no fetcher"), std::string::npos);
  EXPECT_NE(error("<fetcher scheme=\"Bad Scheme\" command=\"x {url} {file}\"/>").find("is not a URL scheme"), std::string::npos);
  EXPECT_NE(error("<fetcher scheme=\"s3\" command=\"aws s3 cp {url}\"/>").find("must contain {url} and {file}"), std::string::npos);
  EXPECT_EQ(error("<fetcher scheme=\"s3\" command=\"aws s3 cp {url}\"/>").rfind("grid.xml:2:", 0), 0u);
  // A profile may name such a URL only when the grid fetches it.
  const std::string profile = profile_with("", "gsiftp://host/~/hello");
  EXPECT_NE(parse_error(profile).find("unsupported URL scheme 'gsiftp'"), std::string::npos);
  const JobSpec s = parse_job_profile("job.xml", profile, {}, {"gsiftp"});
  EXPECT_EQ(s.files[0].source, "gsiftp://host/~/hello");
  EXPECT_TRUE(s.files[0].is_url());
  EXPECT_EQ(s.files[0].name, "hello");
}
