// Completion under the MPI layer (MPI 4.0 §3.7): Wait, Test and their all/any/some forms
// over any mix of MPICH's requests and the layer's, with MPI's indices and statuses; and
// cancellation, freeing, starting persistent requests. An array with none of the layer's,
// when nothing of the layer is in flight, is MPICH's call itself. Otherwise every request is
// tested in turn (MPICH's one by one: its MPI_Waitall on a mixed array would wait on a
// generalized request alone), and the wait sleeps as the runtime's waits do (progress.h),
// moving the layer's work meanwhile.
#include <vector>

#include "layer.h"

using gridmpi::ChannelStatus;

namespace {

enum class Outcome { kPending, kDone, kEmpty };  // (empty: null or inactive, MPI's "no request")

bool any_layer(int n, const MPI_Request* r) {
  for (int i = 0; i < n; ++i)
    if (gridmpi::is_layer_request(r[i])) return true;
  return false;
}

// Tests request *r: when it is over, fills *st, sets *rc to its error code (reported through
// its communicator's handler) and lets it go (MPI_REQUEST_NULL; a persistent one inactive).
Outcome test_one(MPI_Request* r, MPI_Status* st, int* rc) {
  *rc = MPI_SUCCESS;
  if (*r == MPI_REQUEST_NULL) return Outcome::kEmpty;
  if (!gridmpi::is_layer_request(*r)) {
    int index = MPI_UNDEFINED, flag = 0;
    *rc = PMPI_Testany(1, r, &index, &flag, st);  // (one of one: tells an inactive request apart)
    if (*rc != MPI_SUCCESS) return Outcome::kDone;
    if (!flag) return Outcome::kPending;
    return index == MPI_UNDEFINED ? Outcome::kEmpty : Outcome::kDone;
  }
  gridmpi::Request* q = gridmpi::request(*r);
  if (!q) {
    *rc = gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_REQUEST, "not a request (completed or freed already?)");
    return Outcome::kDone;
  }
  if (!q->active) return Outcome::kEmpty;
  if (!gridmpi::test(*q)) return Outcome::kPending;
  *rc = gridmpi::finish(*q, st);
  if (q->persistent) {
    q->active = false;
    q->complete = false;
    q->op.reset();
    q->coll.reset();
  } else {
    gridmpi::free_request(r);
  }
  return Outcome::kDone;
}

bool pending_on_mpi(int n, const MPI_Request* r) {
  for (int i = 0; i < n; ++i) {
    if (r[i] == MPI_REQUEST_NULL) continue;
    if (!gridmpi::is_layer_request(r[i])) return true;
    if (const gridmpi::Request* q = gridmpi::request(r[i]); q && gridmpi::needs_mpi(*q)) return true;
  }
  return false;
}

MPI_Status* at(MPI_Status* statuses, int i) { return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]; }

// The `all` forms: true once every request is over; errors gathered as MPI says
// (MPI_ERR_IN_STATUS, each status's MPI_ERROR), `done` marking what completed.
struct All {
  int n;
  MPI_Request* r;
  MPI_Status* statuses;
  std::vector<bool> done;
  std::vector<int> codes;
  int error = MPI_SUCCESS;
  All(int count, MPI_Request* reqs, MPI_Status* sts) : n(count), r(reqs), statuses(sts), done(count, false), codes(count, MPI_SUCCESS) {}
  bool step() {
    bool every = true;
    for (int i = 0; i < n; ++i) {
      if (done[i]) continue;
      int rc = MPI_SUCCESS;
      MPI_Status* st = at(statuses, i);
      const Outcome o = test_one(&r[i], st, &rc);
      if (o == Outcome::kPending) {
        every = false;
        continue;
      }
      done[i] = true;
      if (o == Outcome::kEmpty) gridmpi::empty_status(st);
      codes[i] = rc;
      if (rc != MPI_SUCCESS) error = rc;
    }
    return every;
  }
  // A status's MPI_ERROR is set only when the call fails with MPI_ERR_IN_STATUS: then every
  // one (MPI_SUCCESS for those that succeeded); otherwise it is left as the caller had it.
  int result() {
    if (error == MPI_SUCCESS) return MPI_SUCCESS;
    if (statuses == MPI_STATUSES_IGNORE) return error;
    for (int i = 0; i < n; ++i) statuses[i].MPI_ERROR = codes[i];
    return MPI_ERR_IN_STATUS;
  }
};

// The `any` forms: the first request found over; MPI_UNDEFINED when none is active.
struct Any {
  int n;
  MPI_Request* r;
  int index = MPI_UNDEFINED, rc = MPI_SUCCESS;
  MPI_Status* status;
  bool step() {
    bool some_active = false;
    for (int i = 0; i < n; ++i) {
      const Outcome o = test_one(&r[i], status, &rc);
      if (o == Outcome::kDone) {
        index = i;
        return true;
      }
      some_active |= o == Outcome::kPending;
    }
    if (some_active) return false;
    index = MPI_UNDEFINED;
    gridmpi::empty_status(status);
    return true;
  }
};

// The `some` forms: every request over now; MPI_UNDEFINED when none is active.
struct Some {
  int n;
  MPI_Request* r;
  int* outcount;
  int* indices;
  MPI_Status* statuses;
  std::vector<int> codes = std::vector<int>(static_cast<std::size_t>(n), MPI_SUCCESS);
  int error = MPI_SUCCESS;
  bool step() {
    bool some_active = false;
    *outcount = 0;
    for (int i = 0; i < n; ++i) {
      int rc = MPI_SUCCESS;
      MPI_Status* st = at(statuses, *outcount);
      const Outcome o = test_one(&r[i], st, &rc);
      if (o == Outcome::kPending) some_active = true;
      if (o != Outcome::kDone) continue;
      if (rc != MPI_SUCCESS) error = rc;
      codes[*outcount] = rc;
      indices[(*outcount)++] = i;
    }
    if (*outcount > 0) return true;
    if (some_active) return false;
    *outcount = MPI_UNDEFINED;
    return true;
  }
  int result() {  // MPI_ERROR as in All::result
    if (error == MPI_SUCCESS) return MPI_SUCCESS;
    if (statuses == MPI_STATUSES_IGNORE) return error;
    for (int k = 0; k < *outcount; ++k) statuses[k].MPI_ERROR = codes[k];
    return MPI_ERR_IN_STATUS;
  }
};

template <typename Step> void wait_for(int n, MPI_Request* r, Step&& step) {
  gridmpi::wait_until([&] { return step(); }, [&] { return pending_on_mpi(n, r); });
}

// A test lets the layer's work move first (programs that poll with MPI_Test drive it).
void move_on() {
  if (gridmpi::layer_busy()) gridrt::detail::progress::poll_all();
}

}  // namespace

int GRIDMPI(Wait)(MPI_Request* request, MPI_Status* status) {
  if (!gridmpi::is_layer_request(*request) && !gridmpi::layer_busy()) return PMPI_Wait(request, status);
  int rc = MPI_SUCCESS;
  Outcome o = Outcome::kPending;
  wait_for(1, request, [&] { return (o = test_one(request, status, &rc)) != Outcome::kPending; });
  if (o == Outcome::kEmpty) gridmpi::empty_status(status);
  return rc;
}

int GRIDMPI(Test)(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!gridmpi::is_layer_request(*request) && !gridmpi::layer_busy()) return PMPI_Test(request, flag, status);
  move_on();
  int rc = MPI_SUCCESS;
  const Outcome o = test_one(request, status, &rc);
  *flag = o != Outcome::kPending;
  if (o == Outcome::kEmpty) gridmpi::empty_status(status);
  return rc;
}

int GRIDMPI(Waitall)(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!any_layer(count, requests) && !gridmpi::layer_busy()) return PMPI_Waitall(count, requests, statuses);
  All all(count, requests, statuses);
  wait_for(count, requests, [&] { return all.step(); });
  return all.result();
}

int GRIDMPI(Testall)(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!any_layer(count, requests) && !gridmpi::layer_busy()) return PMPI_Testall(count, requests, flag, statuses);
  move_on();
  // MPI_Testall completes all or none: test without completing, then complete all at once.
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    if (gridmpi::is_layer_request(requests[i])) {
      gridmpi::Request* q = gridmpi::request(requests[i]);
      done = !q || !q->active || gridmpi::test(*q);
    } else {
      PMPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
    }
    if (!done) {
      *flag = 0;
      return MPI_SUCCESS;
    }
  }
  *flag = 1;
  All all(count, requests, statuses);
  all.step();
  return all.result();
}

int GRIDMPI(Waitany)(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!any_layer(count, requests) && !gridmpi::layer_busy()) return PMPI_Waitany(count, requests, index, status);
  Any any{count, requests, MPI_UNDEFINED, MPI_SUCCESS, status};
  wait_for(count, requests, [&] { return any.step(); });
  *index = any.index;
  return any.rc;
}

int GRIDMPI(Testany)(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!any_layer(count, requests) && !gridmpi::layer_busy()) return PMPI_Testany(count, requests, index, flag, status);
  move_on();
  Any any{count, requests, MPI_UNDEFINED, MPI_SUCCESS, status};
  *flag = any.step();
  *index = *flag ? any.index : MPI_UNDEFINED;
  return any.rc;
}

int GRIDMPI(Waitsome)(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_layer(incount, requests) && !gridmpi::layer_busy()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  Some some{incount, requests, outcount, indices, statuses};
  wait_for(incount, requests, [&] { return some.step(); });
  return some.result();
}

int GRIDMPI(Testsome)(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!any_layer(incount, requests) && !gridmpi::layer_busy()) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  move_on();
  Some some{incount, requests, outcount, indices, statuses};
  if (!some.step()) *outcount = 0;
  return some.result();
}

int GRIDMPI(Request_get_status)(MPI_Request request, int* flag, MPI_Status* status) {
  if (!gridmpi::is_layer_request(request)) {
    move_on();
    return PMPI_Request_get_status(request, flag, status);
  }
  move_on();
  gridmpi::Request* q = gridmpi::request(request);
  if (!q) return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_get_status: not a request");
  if (!q->active) {
    *flag = 1;
    gridmpi::empty_status(status);
    return MPI_SUCCESS;
  }
  *flag = gridmpi::test(*q);
  if (*flag) gridmpi::fill_status(status, q->send ? ChannelStatus{} : q->status);
  return MPI_SUCCESS;
}

int GRIDMPI(Cancel)(MPI_Request* request) {
  if (!gridmpi::is_layer_request(*request)) return PMPI_Cancel(request);
  gridmpi::Request* q = gridmpi::request(*request);
  if (!q) return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel: not a request");
  if (q->coll || q->custom)
    return gridmpi::fail(q->comm ? q->comm->handle : MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel: a collective cannot be cancelled");
  if (q->op && !q->complete) q->comm->p2p->cancel(*q->op);
  return MPI_SUCCESS;
}

int GRIDMPI(Request_free)(MPI_Request* request) {
  if (!gridmpi::is_layer_request(*request)) return PMPI_Request_free(request);
  // Under way, it goes on by itself to its end (MPI 4.0 §3.7.3).
  gridmpi::detach(gridmpi::release_request(request));
  return MPI_SUCCESS;
}

int GRIDMPI(Start)(MPI_Request* request) {
  if (!gridmpi::is_layer_request(*request)) return PMPI_Start(request);
  gridmpi::Request* q = gridmpi::request(*request);
  if (!q || !q->persistent) return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Start: not a persistent request");
  if (q->active) return gridmpi::fail(q->comm->handle, MPI_ERR_REQUEST, "MPI_Start: the request is active already");
  return gridmpi::call("MPI_Start", q->comm->handle, [&] {
    q->complete = false;
    q->status = ChannelStatus{};
    q->error_class = MPI_SUCCESS;
    q->error.clear();
    q->restart(*q);
    q->active = true;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Startall)(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; ++i)
    if (const int rc = gridmpi_Start(&requests[i]); rc != MPI_SUCCESS) return rc;
  return MPI_SUCCESS;
}
