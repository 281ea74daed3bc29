// A file that lives in one cluster, reached from the others (docs/mpi.md, "A file in one
// cluster"). When the clusters of a communicator share no file system that holds a file,
// only the file's own cluster opens it (with its MPICH, ROMIO); each process of another
// cluster is given one process of the file's cluster to serve it, and its reads and writes
// travel there as byte extents of the file with their data, each byte crossing the
// wide-area network once. The serving process applies them with plain positioned reads and
// writes on a descriptor of its own, on the transport's I/O thread, so that a process of
// another cluster is served while the file's processes compute (as MPICH-G2's remote I/O
// served its clients, and as the one-sided engine serves a window: rma/engine.h).
//
// A served write holds an open-file-description lock (F_OFD_SETLKW) over the bytes it spans,
// and so does a served read in atomic mode (MPI_File_set_atomicity); such locks conflict
// with ROMIO's record locks (F_SETLKW) even inside one process, so a served write excludes
// the read-modify-write of the file's own processes' data sieving, and in atomic mode
// their accesses too, whichever cluster each came from.
//
// No MPI here: pure, so that in-process tests drive it directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gridrt::fileio {

// The transport's contexts of served files: one-sided contexts (message_transport.h,
// kOneSidedContext: handed to a sink on the I/O thread as they come) with this bit also set.
inline constexpr std::uint32_t kFileServiceContext = 0x40000000u;

// MPI's error classes a server reports (numbers as MPICH's mpi.h; checked where MPI is known).
struct ErrorClass {
  static constexpr std::uint32_t kFile = 27;     // MPI_ERR_FILE
  static constexpr std::uint32_t kIo = 32;       // MPI_ERR_IO
  static constexpr std::uint32_t kNoSpace = 36;  // MPI_ERR_NO_SPACE
  static constexpr std::uint32_t kIntern = 16;   // MPI_ERR_INTERN
};

// `length` bytes of the file from byte `offset`.
struct Extent {
  std::uint64_t offset = 0, length = 0;
};

struct Reply {
  std::uint32_t error_class = 0;  // 0: none
  std::string error;              // what failed, naming the file
  std::string data;               // a read's bytes (up to the end of the file), or a size as text
};

class FileService {
 public:
  // Sends a message `head` + `data` of `context` to process `dst` (never with the service's lock held).
  using Send = std::function<void(std::int32_t dst, std::uint32_t context, const std::string& head, std::string_view data)>;
  explicit FileService(Send send) : send_(std::move(send)) {}
  ~FileService();

  // ---- the file's side
  // Serves the file of `context` from descriptor `fd` (the service's from now on), `name` in errors.
  void serve(std::uint32_t context, int fd, std::string name);
  // Stops serving it and closes the descriptor.
  void withdraw(std::uint32_t context);
  // One fragment of a message of `context` from `src` (`total` bytes in all), in the order
  // the sender sent them: a request is applied once whole, a reply kept for take_reply.
  void deliver_part(std::int32_t src, std::uint32_t context, std::string_view part, std::uint64_t total, bool first, bool last);
  // Processes that will send nothing more (a lost cluster's): what they had begun is dropped.
  void forget(const std::function<bool(std::int32_t)>& gone);

  // ---- the other clusters' side: the requests, and their replies
  std::uint64_t next_id() { return ++last_id_; }
  // Writes `extents` (in order) from the data that follows the head: an acknowledgement.
  // (Every write holds the lock over its bytes.)
  static std::string write_head(std::uint64_t id, const std::vector<Extent>& extents);
  // Reads `extents`: their bytes, in order, up to the end of the file (under the lock in
  // the file's atomic mode).
  static std::string read_head(std::uint64_t id, bool atomic, const std::vector<Extent>& extents);
  // The file's size (decimal, in `data`).
  static std::string size_head(std::uint64_t id);
  // The reply to request `id` once it came (then forgotten), or false.
  bool take_reply(std::uint64_t id, Reply* out);

 private:
  // A served file's descriptor, closed once withdrawn and no request being applied holds it.
  struct Descriptor;
  // Applies a whole message: a request (its reply sent back), or a reply (kept).
  void apply(std::int32_t src, std::uint32_t context, std::string_view body);
  Reply write(const Descriptor& file, const std::vector<Extent>& extents, std::string_view data);
  Reply read(const Descriptor& file, bool atomic, const std::vector<Extent>& extents);

  Send send_;
  std::mutex mu_;
  std::map<std::uint32_t, std::shared_ptr<Descriptor>> files_;
  std::map<std::pair<std::int32_t, std::uint32_t>, std::string> incoming_;  // messages on their way in
  std::map<std::uint64_t, Reply> replies_;
  std::atomic<std::uint64_t> last_id_{0};
};

}  // namespace gridrt::fileio
