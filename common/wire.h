// Frame header and the pure codec of the gridrt wire protocol (docs/protocol.md).
//
// Every connection in gridrt (launcher-broker, relay-broker, relay-relay, process-relay,
// gridproc-relay) carries the same frames: a fixed 48-byte little-endian header followed by a
// body of `length` bytes. The codec never touches a socket: it is fed bytes and says whether
// they hold a good frame, a bad one, or need more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gridrt::wire {

inline constexpr std::uint32_t kMagic = 0x54445247;  // "GRDT" read as little-endian bytes
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 48;
// Largest body accepted. Runtime payloads above this are cut into several frames by the
// sender; a peer announcing more is misbehaving and its connection is dropped.
inline constexpr std::uint32_t kMaxBody = 16u << 20;

enum class Type : std::uint16_t {
  kError = 1,          // any direction: body = text; the sender closes afterwards
  kRelayRegister = 2,  // relay -> broker: RelayRegistration
  kRegistered = 3,     // broker -> relay: empty, registration accepted; flags kTakesJobsBack
  kSubmit = 4,         // launcher -> broker: JobSpec
  kJobAccepted = 5,    // broker -> launcher: job id in header, body = Mapping; flags kTakesJobsBack
  kStartPart = 6,      // broker -> relay: PartStart
  kProcHello = 7,      // runtime -> relay: ProcHello
  kMonitorHello = 8,   // gridproc -> relay: ProcHello (hostname unused)
  kPartReady = 9,      // relay -> broker: PartReady (hostnames of the local ranks)
  kTopology = 10,      // broker -> relay -> runtime: Topology, complete with nodes
  kOutput = 11,        // gridproc -> relay -> broker -> launcher: Output
  kProcExit = 12,      // gridproc -> relay: exit status in header.tag, rank in src
  kPartDone = 13,      // relay -> broker: PartDone
  kKillJob = 14,       // broker -> relay: stop the job's processes, body = reason
  kJobEnd = 15,        // broker -> launcher: JobEnd
  kLinkHello = 16,     // relay <-> relay, first on a relay link, each way: LinkHello
  kData = 17,          // runtime <-> relay <-> relay <-> runtime: a point-to-point payload
  kProcExitRank = 18,  // relay -> broker: one rank's exit (src = rank, tag = status)
  kNotice = 19,        // broker -> launcher: body = text for the user (e.g. waiting for slots)
  kCredit = 20,        // runtime <-> relays <-> runtime: the receiver (src) grants the sender (dst)
                       // `seq` more bytes on stream (src, dst, context): flow control
  kDirectHello = 21,   // process -> process, first frame of a direct connection: src = the dialler
  kConnectBack = 22,   // process -> relays -> process: src asks dst to open a direct connection to it
  kDirectFailed = 23,  // process -> relays -> process: src could not connect to dst; use the relays
  kWanCount = 24,      // runtime -> relay: empty, how much has src sent to other sites through
                       // the relays? relay -> runtime: body = u64 messages, u64 payload bytes
  kClusterLost = 25,   // broker -> relays -> runtimes: the job goes on without cluster `tag` (its
                       // index in the topology); body = why (a job whose profile allows it).
                       // The other way, runtime -> relay -> broker: a report that cluster `tag`
                       // cannot be reached any more (a direct connection or a relay link lost);
                       // the broker decides which cluster the job loses.
  kFinalizing = 26,    // in a job that goes on without lost clusters, finalize's barrier: a
                       // part's leader -> relay -> broker: every process here is in finalize;
                       // broker -> relays -> runtimes: every part not lost is: leave. Empty.
  kMatched = 27,       // runtime <-> relays <-> runtime: the receiver (src) matched message number
                       // `seq` of stream (dst, src, context), a synchronous or rendezvous one
  kRest = 28,          // runtime <-> relays <-> runtime: the rest of rendezvous message number `seq`
                       // of stream (src, dst, context), sent once the receiver matched it
  kHeartbeat = 29,     // any connection, either way: empty; the sender is alive (Link::keep_alive).
                       // Consumed by the receiving link, never forwarded.
  kAttachJob = 30,     // launcher -> broker, after the broker came back: the submitter takes its
                       // running job (header.job) back; body = u32 n, then per part the number
                       // (Output's seq) of the last line printed from it
  kReplayOutput = 31,  // broker -> relay: send again the job's output numbered after `seq`;
                       // relay -> broker, empty, after those: the replay is complete
  kStatus = 32,        // launcher -> broker, empty: how is the grid? broker -> launcher: GridStatus
  kLinkAck = 33,       // relay <-> relay, process <-> process (direct), empty: the sender has received
                       // `seq` frames on this link in all; the other may forget those (link_resume.h)
  kDirectResume = 34,  // process -> relays -> process: src's direct connection with dst broke, and
                       // src had received `seq` frames on it; dst sends the rest through the relays
  kFileWanted = 35,    // relay -> broker -> launcher: send the job's file whose content has this
                       // SHA-256 (body: its hex digest); the relay's cache does not hold it.
                       // gridproc -> relay, empty: send the part's files to this node (a cluster
                       // with a nodeDir); relay -> gridproc, after them: all sent, body = the
                       // names of the outputs to send back (strs)
  kFileData = 36,      // launcher -> broker -> relays: a piece of a staged file (FilePiece); relay ->
                       // broker -> launcher: a piece of an output file, context = the part.
                       // relay -> gridproc: a piece of one of the part's files, by name, tag 1
                       // for the executable; gridproc -> relay: a piece of an output of its
                       // node, tag = the lowest local rank that ran there
};
// kFileData flags: more pieces of the same file follow (the last one has it clear).
inline constexpr std::uint32_t kMorePieces = 1;
// kData and kRest flags: more fragments of the same part of the message follow (the last one
// has it clear). First kData fragment only: the message is synchronous (its sender waits for
// a Matched), or rendezvous (only its first bytes come as kData; the rest follows as kRest
// after a Matched). A kData frame's `seq` is the size of the whole message it belongs to.
inline constexpr std::uint32_t kMoreFragments = 1;
// Registered and JobAccepted flag: the broker writes its jobs' state ahead, so that, should it
// restart, it takes running jobs back: a relay that loses it keeps them running a while, a
// launcher reconnects. Without it they end at once, as nobody could take them back.
inline constexpr std::uint32_t kTakesJobsBack = 1;
inline constexpr std::uint32_t kSynchronous = 2;
inline constexpr std::uint32_t kRendezvous = 4;
// ProcExit flag: the program initialised MPI past gridrt (common/pmi_watch.h), as an MPI job
// of its cluster alone, and was stopped; the relay stops the job, naming the rank.
inline constexpr std::uint32_t kMpiPastGridrt = 8;
// kData flag, on a message of one frame that leaves its sender three quarters of its window
// or more: the receiver may hold the frame's credit back until it next writes to the sender
// (a reply carries it, instead of a Credit frame of its own crossing the relays) or until a
// frame without the flag comes on the stream (common/flow_control.h, credit_may_wait).
inline constexpr std::uint32_t kCreditMayWait = 16;
// Submit flags: hold the job until every cluster of the grid registered (for up to a while:
// the broker's kGridWait), or map it only (the broker answers JobAccepted and starts nothing).
inline constexpr std::uint32_t kSubmitWaitForGrid = 1;
inline constexpr std::uint32_t kSubmitDryRun = 2;
const char* type_name(Type t);

// The fixed header. Fields that a message type does not use are zero.
struct Header {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  Type type = Type::kError;
  std::uint32_t flags = 0;
  std::uint32_t length = 0;   // body bytes following the header
  std::uint64_t job = 0;      // job id assigned by the broker (0: none)
  std::int32_t src = -1;      // global source rank (-1: not a rank)
  std::int32_t dst = -1;      // global destination rank
  std::uint32_t context = 0;  // communicator context (kData): keeps traffic classes apart
  std::int32_t tag = 0;       // message tag (kData), or an exit status (kProcExit)
  std::uint64_t seq = 0;      // kData: the message's size; kCredit: bytes granted; kMatched: which message;
                              // kOutput: the line's number in its part's output, 0 for a note (relay/output_log.h)
};

struct Frame {
  Header header;
  std::string body;
};

void encode_header(const Header& h, unsigned char out[kHeaderSize]);
// Sets `flags` in an encoded frame's header (they sit at bytes 8-11, little-endian).
void add_flags(std::string& encoded, std::uint32_t flags);
std::string encode(const Frame& f);  // header + body, ready for a socket
Frame make_frame(Type t, std::string body = {}, std::uint64_t job = 0);
// An Error frame that stops a job (a process's to its relay, a relay's to the broker)
// carries in seq the status the job is to end with, plus one; 0 (an older sender) says
// nothing, and the job then ends with 1 (docs/protocol.md, Error).
inline std::uint64_t ending_status_seq(int status) { return static_cast<std::uint64_t>(status) + 1; }
inline int ending_status(std::uint64_t seq) { return seq == 0 || seq > 256 ? 1 : static_cast<int>(seq - 1); }

// Incremental decoder. feed() appends bytes; next() yields frames one at a time.
class Decoder {
 public:
  enum class Status { kFrame, kNeedMore, kBad };
  void feed(const void* data, std::size_t n);
  // Zero-copy feeding: read up to prepare(n).size() bytes straight into it, then commit what
  // came. The space may be smaller than n: while the rest of a large frame's body is due, it
  // is that body's own string, so that the body is never copied out of the decoder's buffer
  // (nor moved in it) — a relay passes most of its bytes in such bodies.
  std::span<char> prepare(std::size_t n);
  void commit(std::size_t n);
  // On kFrame, `out` holds the frame. On kBad, error() says what was wrong and the decoder
  // stays bad: the connection must be dropped (its stream can no longer be trusted).
  Status next(Frame& out);
  const std::string& error() const { return error_; }
  // Larger frames are refused (kBad) as soon as their header is read, before their body is
  // buffered: small until the peer is authenticated, kMaxBody after.
  void set_max_body(std::uint32_t n) { max_body_ = n; }

 private:
  std::uint32_t max_body_ = kMaxBody;
  std::string buf_;
  std::size_t pos_ = 0;  // first byte not yet decoded
  std::size_t end_ = 0;  // end of the bytes fed so far (buf_ may be larger: prepared space)
  std::string error_;
  // A frame of at least kDirectBody bytes whose header has been read: its body fills here.
  static constexpr std::size_t kDirectBody = 16 * 1024;
  std::optional<Frame> direct_;
  std::size_t direct_filled_ = 0;
  std::optional<Frame> ready_;  // such a frame, whole, for next()
};

// Serialisation of message bodies: little-endian integers, strings as u32 length + bytes.
class Writer {
 public:
  Writer& u8(std::uint8_t v);
  Writer& u32(std::uint32_t v);
  Writer& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v)); }
  Writer& u64(std::uint64_t v);
  Writer& str(std::string_view s);
  Writer& strs(const std::vector<std::string>& v);
  Writer& u32s(const std::vector<std::uint32_t>& v);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; any truncation or oversize count throws wire::BadBody.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::uint8_t u8();
  std::uint32_t u32();
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::uint64_t u64();
  std::string str();
  std::string_view view();  // what str() reads, not copied (valid as long as the input)
  std::vector<std::string> strs();
  std::vector<std::uint32_t> u32s();
  void end() const;                              // throws unless every byte was consumed
  std::size_t consumed() const { return pos_; }  // bytes read so far

 private:
  void need(std::size_t n) const;
  std::string_view in_;
  std::size_t pos_ = 0;
};

struct BadBody : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gridrt::wire
