// The service of a file that lives in one cluster (runtime/src/fileio) in one process: two
// services, the file's and a requester's, deliver to each other directly (in fragments, as
// the transport hands them), on a real file in a temporary directory.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "fileio/file_service.h"

namespace gridrt::fileio {
namespace {

constexpr std::uint32_t kContext = kFileServiceContext | 5;

// Rank 0 serves a file; rank 1 asks. Messages are cut in fragments of `fragment` bytes.
struct Pair {
  std::unique_ptr<FileService> services[2];
  std::size_t fragment = 7;
  std::string path;

  Pair() {
    char dir[] = "/tmp/gridrt-file-service-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    path = std::string(dir) + "/file";
    for (int r = 0; r < 2; ++r)
      services[r] = std::make_unique<FileService>([this, r](std::int32_t dst, std::uint32_t, const std::string& head,
                                                            std::string_view data) { deliver(dst, r, head + std::string(data)); });
  }
  // A message (never empty: a head at least) from `src` to `dst`, in fragments.
  void deliver(int dst, int src, const std::string& whole) {
    for (std::size_t at = 0; at < whole.size(); at += fragment)
      services[dst]->deliver_part(src, kContext, std::string_view(whole).substr(at, fragment), whole.size(), at == 0,
                                  at + fragment >= whole.size());
  }
  ~Pair() { std::filesystem::remove_all(std::filesystem::path(path).parent_path()); }

  void serve(int flags = O_RDWR | O_CREAT) { services[0]->serve(kContext, ::open(path.c_str(), flags, 0644), "file"); }
  // Sends a request from rank 1 and returns its reply (delivered synchronously here).
  Reply ask(const std::string& head, std::string_view data, std::uint64_t id) {
    Reply r;
    deliver(0, 1, head + std::string(data));
    EXPECT_TRUE(services[1]->take_reply(id, &r));
    return r;
  }
  std::string contents() const {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST(FileService, WritesExtentsInOrderAndReadsThemBackUpToTheEnd) {
  Pair p;
  p.serve();
  const std::vector<Extent> extents = {{4, 3}, {0, 2}, {10, 5}};
  Reply w = p.ask(FileService::write_head(1, extents), "abcdeFGHIJ", 1);
  EXPECT_EQ(w.error_class, 0u) << w.error;
  EXPECT_EQ(p.contents(), std::string("de\0\0abc\0\0\0FGHIJ", 15));
  Reply r = p.ask(FileService::read_head(2, false, {{10, 5}, {0, 2}, {4, 3}}), "", 2);
  EXPECT_EQ(r.error_class, 0u);
  EXPECT_EQ(r.data, "FGHIJdeabc");
  // Past the end of the file: what lies before it, and no more.
  r = p.ask(FileService::read_head(3, false, {{12, 10}, {0, 2}}), "", 3);
  EXPECT_EQ(r.data, "HIJ");
  Reply s = p.ask(FileService::size_head(4), "", 4);
  EXPECT_EQ(s.data, "15");
}

TEST(FileService, AServedWriteWaitsForWhoeverHoldsALockOnItsBytes) {
  Pair p;
  p.serve();
  p.ask(FileService::write_head(1, {{0, 4}}), "aaaa", 1);
  // Another holder of a lock over the bytes (as ROMIO's data sieving or atomic mode in the
  // file's own processes): the served write waits until it lets go.
  const int other = ::open(p.path.c_str(), O_RDWR);
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  l.l_len = 4;
  ASSERT_EQ(::fcntl(other, F_OFD_SETLK, &l), 0);
  std::atomic<bool> written{false};
  std::thread writer([&] {
    p.ask(FileService::write_head(2, {{0, 4}}), "bbbb", 2);
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(written.load());
  EXPECT_EQ(p.contents(), "aaaa");
  l.l_type = F_UNLCK;
  ::fcntl(other, F_OFD_SETLK, &l);
  writer.join();
  EXPECT_EQ(p.contents(), "bbbb");
  ::close(other);
}

TEST(FileService, RequestsItCannotServeGetAClearErrorAndTheServiceGoesOn) {
  Pair p;
  // Not served (closed, or never opened here).
  Reply r = p.ask(FileService::size_head(1), "", 1);
  EXPECT_EQ(r.error_class, ErrorClass::kFile);
  EXPECT_NE(r.error.find("not open"), std::string::npos) << r.error;
  p.serve(O_RDONLY | O_CREAT);
  // A write to a file the server may only read: the system's error, naming the file.
  r = p.ask(FileService::write_head(2, {{0, 3}}), "abc", 2);
  EXPECT_EQ(r.error_class, ErrorClass::kIo);
  EXPECT_NE(r.error.find("'file'"), std::string::npos) << r.error;
  // Data that does not match its extents, and a body cut short: refused, nothing written.
  r = p.ask(FileService::write_head(3, {{0, 5}}), "abc", 3);
  EXPECT_EQ(r.error_class, ErrorClass::kIntern);
  std::string cut = FileService::read_head(4, false, {{0, 5}, {9, 9}});
  cut.resize(cut.size() - 3);
  r = p.ask(cut, "", 4);
  EXPECT_EQ(r.error_class, ErrorClass::kIntern);
  EXPECT_NE(r.error.find("malformed"), std::string::npos) << r.error;
  // A read of more than a request may hold: refused before anything is allocated.
  r = p.ask(FileService::read_head(5, false, {{0, std::uint64_t{1} << 40}}), "", 5);
  EXPECT_EQ(r.error_class, ErrorClass::kIntern);
  EXPECT_EQ(p.contents(), "");
  r = p.ask(FileService::size_head(5), "", 5);
  EXPECT_EQ(r.error_class, 0u);
  EXPECT_EQ(r.data, "0");
}

}  // namespace
}  // namespace gridrt::fileio
