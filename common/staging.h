// Files that travel with a job (docs/jobprofile.md, "Files that travel with the job"): their
// digests, the relay's cache of contents, a file arriving piece by piece, and placing a file
// into a job's directory. Plain file operations, no sockets: the launcher, the broker and the
// relay move the pieces (docs/protocol.md, FileWanted and FileData).
//
// Contents are named by their SHA-256, as a content-addressed store does (Git's objects,
// Nix's store): a rerun of the same program finds it in the cache and nothing is sent, and a
// file that arrives is checked against the name it was asked for before anyone runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/process.h"

namespace gridrt {

// The SHA-256 of a file's content, in lower-case hex, and its size. Throws
// std::runtime_error naming the file when it cannot be read.
struct FileDigest {
  std::string sha256;
  std::uint64_t size = 0;
};
FileDigest digest_of_file(const std::string& path);

// True for 64 lower-case hex digits: a digest a peer may name a cache file with.
bool is_sha256_hex(std::string_view s);

// A directory of contents named by their digest, bounded in bytes: when a new content would
// take it past the bound, the contents used least lately go first (their modification time
// is their last use). Files are written whole under a temporary name, checked, then renamed:
// a reader never sees a part of one.
class ContentCache {
 public:
  ContentCache(std::string dir, std::uint64_t max_bytes);
  const std::string& dir() const { return dir_; }
  // The content's path, touched as used, if the cache holds it.
  std::optional<std::string> find(const std::string& sha256) const;
  // Takes a whole file written under temp_path(): checks its digest is `sha256` (else
  // removes it and throws, saying both), renames it into the cache, makes room. Returns
  // its path.
  std::string admit(const std::string& temp, const std::string& sha256);
  // A fresh temporary name in the cache's directory (same file system: the rename is atomic).
  std::string temp_path(const std::string& sha256) const;
  std::uint64_t bytes_held() const;

 private:
  void make_room(const std::string& keep);
  std::string dir_;
  std::uint64_t max_bytes_;
};

// A file arriving in pieces, in order, into `path`: refuses a piece that is not where the
// last ended, or that takes it past `expected` bytes (throws, naming the file). A piece at
// byte 0 begins the file again: its sender sends it again whole.
class IncomingFile {
 public:
  IncomingFile(std::string path, std::uint64_t expected, std::string what);
  ~IncomingFile();
  IncomingFile(const IncomingFile&) = delete;
  IncomingFile& operator=(const IncomingFile&) = delete;
  void write(std::uint64_t offset, std::string_view data);
  // All bytes arrived: closes the file. Throws when fewer than `expected` came.
  void finish();
  // Gives up: closes and removes the file.
  void discard();
  // Begins again, empty: the file was asked for again (its sender's link broke); until the
  // first byte comes again, pieces of the interrupted sending are not this file's (the
  // caller drops them: restarting()).
  void restart();
  bool restarting() const { return restarting_; }
  const std::string& path() const { return path_; }
  std::uint64_t received() const { return received_; }

 private:
  std::string path_, what_;
  std::uint64_t expected_, received_ = 0;
  int fd_ = -1;
  bool restarting_ = false;
};

// Puts `from` (a cache file, or a file of this machine) at `dir`/`name`, creating the
// directories between: a hard link where the two share a file system, else a copy; mode
// 0755 for an executable, else 0644; owned by `owner` when given (the relay runs as root
// and the job as the submitter's account). Throws naming both paths.
void place_file(const std::string& from, const std::string& dir, const std::string& name, bool executable,
                const std::optional<LocalAccount>& owner);

// A symbolic link `dir`/`name` -> `target` (a file the cluster's nodes see where it is).
void link_file(const std::string& target, const std::string& dir, const std::string& name);

// Creates `dir` (and its parents) owned by `owner` when given; throws naming it.
void make_job_directory(const std::string& dir, const std::optional<LocalAccount>& owner);

// Removes `dir` and everything under it; logs, never throws.
void remove_tree(const std::string& dir);

// A size as a user writes it: a number of bytes, or with K, M, G or T (powers of 1024; "KiB"
// etc. too). Throws std::invalid_argument naming `what` otherwise.
std::uint64_t parse_bytes(const std::string& text, const std::string& what);

// "12.3 MiB": a size as a user reads it.
std::string human_bytes(std::uint64_t bytes);

}  // namespace gridrt
