#include "launcher/job_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gridrt {

namespace {
// While the broker's connection holds this much not yet sent, the next piece waits.
constexpr std::size_t kQueuedAtMost = 8u << 20;
}  // namespace

asio::awaitable<void> send_staged_file(std::shared_ptr<TlsLink> link, std::uint64_t job, StagedFile file,
                                       std::function<void(const std::string&)> error) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(file.source.c_str(), "rb"), std::fclose);
  if (!in) co_return error("cannot read " + file.source + " to send it to the grid: " + std::strerror(errno));
  asio::steady_timer pause(co_await asio::this_coro::executor);
  std::string chunk;
  std::uint64_t offset = 0;
  do {
    while (link->queued_bytes() > kQueuedAtMost && !link->closed()) {
      pause.expires_after(std::chrono::milliseconds(5));
      co_await pause.async_wait(asio::use_awaitable);
    }
    if (link->closed()) co_return;
    chunk.resize(std::min<std::uint64_t>(kFilePieceBytes, file.size - offset));
    if (!chunk.empty() && std::fread(chunk.data(), 1, chunk.size(), in.get()) != chunk.size())
      co_return error(file.source + " changed since the job was submitted (it is shorter): the grid would refuse it");
    wire::Frame f = wire::make_frame(wire::Type::kFileData, FilePiece{file.sha256, file.size, offset, chunk}.encode(), job);
    offset += chunk.size();
    if (offset < file.size) f.header.flags = wire::kMorePieces;
    link->send(std::move(f));
  } while (offset < file.size);
}

std::string OutputFiles::on_piece(const std::string& cluster, const FilePiece& piece, bool last) {
  const StagedFile* out = nullptr;
  for (const auto& f : spec_.files)
    if (f.role == StagedFile::Role::kOutput && f.name == piece.file) out = &f;
  if (!out) return "";
  const auto key = std::make_pair(cluster, piece.file);
  if (failed_.count(key)) return "";
  const std::filesystem::path final_path = std::filesystem::path(out->source) / cluster / piece.file;
  try {
    auto& in = open_[key];
    if (!in) {
      std::filesystem::create_directories(final_path.parent_path());
      const std::string temp = final_path.parent_path() / ("." + final_path.filename().string() + ".gridrt-partial");
      std::filesystem::remove(temp);
      in = std::make_unique<IncomingFile>(temp, piece.size, "output file '" + piece.file + "' of cluster " + cluster);
    }
    in->write(piece.offset, piece.data);
    if (!last) return "";
    in->finish();
    std::filesystem::rename(in->path(), final_path);
    open_.erase(key);
    return "output '" + piece.file + "' of cluster " + cluster + ": " + final_path.string() + " (" + human_bytes(piece.size) + ")";
  } catch (const std::exception& e) {
    open_.erase(key);  // its temporary file goes with it
    failed_.insert(key);
    return std::string("output '") + piece.file + "' of cluster " + cluster + " lost: " + e.what();
  }
}

}  // namespace gridrt
