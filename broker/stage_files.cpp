// The broker's part in carrying a job's files (docs/jobprofile.md, "Files that travel with
// the job"; docs/protocol.md, FileWanted and FileData): it checks a job's files against the
// user's limits before anything is sent, passes each relay's request for a content to the
// job's submitter (once, however many relays ask), the pieces to every relay that asked, and
// the outputs back. It keeps nothing: it is not a store.
#include "broker/broker_jobs.h"
#include "common/log.h"
#include "common/staging.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

// Before a job is accepted: its files named as they must be, and within the limits (a job's
// own, and the user's running jobs' together). "" when it may go.
std::string Broker::staging_refusal(const std::string& user, const JobSpec& spec) const {
  for (const auto& f : spec.files)
    if (f.carried() && (!is_sha256_hex(f.sha256) || f.source.empty()))
      return "file '" + f.name + "' comes without the SHA-256 of its content";
  // On a grid none of whose clusters has a stageDir nothing is carried: the nodes see the
  // submitter's files where they are, and no limit applies to them.
  const bool carries = std::any_of(grid_.clusters.begin(), grid_.clusters.end(), [](const ClusterDesc& c) { return !c.stage_dir.empty(); });
  if (!carries) return "";
  const std::uint64_t bytes = spec.carried_bytes();
  if (bytes > stage_limits_.per_job)
    return "the job's files hold " + human_bytes(bytes) + ", more than a job may carry to the grid (" + human_bytes(stage_limits_.per_job) +
           ", gridbroker --stage-limit)";
  std::uint64_t running = 0;
  for (const auto& [id, job] : jobs_)
    if (job->submitter == user) running += job->spec.carried_bytes();
  if (running + bytes > stage_limits_.per_user)
    return "the job's files (" + human_bytes(bytes) + ") and those of your running jobs (" + human_bytes(running) +
           ") hold more than a user may have on the grid at once (" + human_bytes(stage_limits_.per_user) +
           ", gridbroker --stage-quota); wait for your jobs to end";
  return "";
}

// Relay -> broker: its cache lacks this content of the job. Asked of the submitter once; a
// relay that asks while the content is on its way to others gets it next, asked again.
void Broker::handle_file_wanted(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  const std::string& sha = f.body;
  const bool known =
      std::any_of(job->spec.files.begin(), job->spec.files.end(), [&](const StagedFile& s) { return s.carried() && s.sha256 == sha; });
  if (!known) return refuse_peer(peer, "FileWanted for a content job " + std::to_string(job->id) + " does not carry");
  const std::size_t index = static_cast<std::size_t>(part - job->parts.data());
  if (!job->launcher || job->launcher->link->closed()) {
    // A job taken back waits for its submitter to come back (handle_attach asks then).
    if (store_.enabled()) return void(job->files_later[sha].insert(index));
    return fail_job(*job, "cluster " + part->cluster + " needs the job's files and their submitter is not connected");
  }
  auto& sending = job->files_sending[sha];
  if (sending.forwarded > 0) {
    job->files_later[sha].insert(index);
    return;
  }
  if (sending.to.empty()) job->launcher->link->send(wire::make_frame(Type::kFileWanted, sha, job->id));
  sending.to.insert(index);
}

// Pieces of a staged file from the submitter to the relays that asked for it; pieces of an
// output from a relay to the submitter.
// The job's submitter is back (AttachJob): what it was sending broke off with its old
// connection, and what relays asked meanwhile waits. Each is asked of it again, whole (the
// relays begin a file again at its first byte).
void Broker::ask_files_again(Job& job) {
  for (auto& [sha, sending] : job.files_sending) job.files_later[sha].insert(sending.to.begin(), sending.to.end());
  job.files_sending.clear();
  for (auto& [sha, parts] : job.files_later) {
    job.files_sending[sha].to = std::move(parts);
    job.launcher->link->send(wire::make_frame(Type::kFileWanted, sha, job.id));
  }
  job.files_later.clear();
}

void Broker::handle_file_data(const PeerPtr& peer, Frame& f) {
  if (peer->kind == Peer::Kind::kRelay) return handle_output_file(peer, f);
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end() || it->second->launcher != peer) return;  // a job that ended: late pieces
  Job& job = *it->second;
  const FilePiece piece = FilePiece::decode(f.body);
  auto sending = job.files_sending.find(piece.file);
  if (sending == job.files_sending.end()) return refuse_peer(peer, "FileData for a file nobody asked for");
  std::uint64_t declared = 0;
  for (const auto& s : job.spec.files)
    if (s.carried() && s.sha256 == piece.file) declared = s.size;
  sending->second.forwarded += piece.data.size();
  if (sending->second.forwarded > declared || piece.size != declared)
    return refuse_peer(peer, "FileData beyond the " + std::to_string(declared) + " bytes the job declared for that file");
  for (std::size_t p : sending->second.to)
    if (job.parts[p].relay && !job.parts[p].done) job.parts[p].relay->link->send(f);
  if (f.header.flags & wire::kMorePieces) return;
  job.files_sending.erase(sending);
  if (auto later = job.files_later.find(piece.file); later != job.files_later.end()) {
    job.files_sending[piece.file].to = std::move(later->second);
    job.files_later.erase(later);
    peer->link->send(wire::make_frame(Type::kFileWanted, piece.file, job.id));
  }
}

void Broker::handle_output_file(const PeerPtr& peer, Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job || !job->launcher) return;
  const FilePiece piece = FilePiece::decode(f.body);
  const std::size_t index = static_cast<std::size_t>(part - job->parts.data());
  const bool named = std::any_of(job->spec.files.begin(), job->spec.files.end(),
                                 [&](const StagedFile& s) { return s.role == StagedFile::Role::kOutput && s.name == piece.file; });
  if (!named) return refuse_peer(peer, "FileData of an output file the job does not name ('" + piece.file + "')");
  if (piece.offset == 0) {
    if (job->output_bytes + piece.size > stage_limits_.per_job) {
      job->outputs_refused.insert({index, piece.file});
      job->launcher->link->send(wire::make_frame(Type::kNotice, "output file '" + piece.file + "' of cluster " + part->cluster + " (" +
                                                                    human_bytes(piece.size) +
                                                                    ") is not brought back: the job's outputs would exceed " +
                                                                    human_bytes(stage_limits_.per_job) + " (gridbroker --stage-limit)"));
      return;
    }
    job->output_bytes += piece.size;
  }
  if (job->outputs_refused.count({index, piece.file})) return;
  f.header.context = static_cast<std::uint32_t>(index);
  job->launcher->link->send(f);
}

}  // namespace gridrt
