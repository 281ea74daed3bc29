// Resumable collectives. Every collective algorithm is a C++20 coroutine (Async) that
// suspends where it waits for its steps (point-to-point messages, MPI collectives inside the
// cluster) instead of blocking. A blocking call drives it to its end at once; a non-blocking
// one (MPI_Ibcast and the like) leaves it to be moved on by every later wait of the process
// (progress.h), so that programs that overlap collectives with their own work, or wait on
// something else meanwhile, never deadlock; and without a progress thread, which MPICH would
// allow only at MPI_THREAD_MULTIPLE.
//
//   Async<> bcast_flat(CommImpl& c, ...) {       // an algorithm, or a part of one
//     ...
//     co_await all(steps);                       // every step done (errors thrown here)
//     co_await one(step);                        // this step done
//     co_await amid(step, background);           // this one, background ones kept moving
//     std::vector<char> v = co_await part(...);  // another Async, run to its end
//   }
//
// An Async starts when it is first awaited (or started by its Flow), so a queued collective
// takes its tags only when its turn comes (comm.h, CollectiveOp). The outermost coroutine of
// a collective takes what it keeps across its waits by value: its caller's temporaries die
// before it resumes. (Inner ones may take references to their awaiting caller's locals.)
// GCC 12 destroys the temporaries of a conditional expression holding a co_await twice:
// never write `x ? co_await a : b`.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

namespace gridrt::detail {

struct Step;  // comm.h
// Tests steps; true when the wait they are for is over (comm.cpp). Throws on failure.
bool steps_done(std::vector<Step>* all, Step* one);
bool steps_need_mpi(const std::vector<Step>* all, const Step* one);

// One collective call in flight: what its innermost suspended coroutine waits for.
struct Flow {
  std::vector<Step>* all = nullptr;  // every step here, or, when `one` is set, its background
  Step* one = nullptr;
  std::coroutine_handle<> waiting;  // resumed when that wait is over
  std::exception_ptr failure;       // testing the steps failed: thrown into the coroutine
  std::exception_ptr error;         // the collective failed with this
  bool done = false;

  // Tests what it waits for and resumes it as far as it goes; true once it is done.
  bool poll() {
    while (!done) {
      if (!waiting) return false;  // not started
      try {
        if (!steps_done(all, one)) return false;
      } catch (...) { failure = std::current_exception(); }
      std::coroutine_handle<> h = std::exchange(waiting, nullptr);
      all = nullptr;
      one = nullptr;
      h.resume();
    }
    return true;
  }
  bool needs_mpi() const { return waiting && steps_need_mpi(all, one); }
};

struct PromiseBase {
  Flow* flow = nullptr;
  std::coroutine_handle<> continuation;  // the coroutine awaiting this one; none for the outermost
  std::exception_ptr error;
  std::suspend_always initial_suspend() noexcept { return {}; }
  struct Final {
    bool await_ready() noexcept { return false; }
    template <typename P> std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.continuation) return p.continuation;
      p.flow->error = p.error;
      p.flow->done = true;
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  Final final_suspend() noexcept { return {}; }
  void unhandled_exception() { error = std::current_exception(); }
};

// A coroutine's owner, what every Async is: awaited by another Async (it then runs in the
// awaiter's Flow and resumes it at its end) or started by its Flow as the outermost one.
template <typename Promise> class AsyncOwner {
 public:
  AsyncOwner() = default;
  explicit AsyncOwner(std::coroutine_handle<Promise> h) : h_(h) {}
  AsyncOwner(AsyncOwner&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  AsyncOwner& operator=(AsyncOwner&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~AsyncOwner() {
    if (h_) h_.destroy();
  }
  bool await_ready() const noexcept { return false; }
  template <typename P> std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    h_.promise().flow = parent.promise().flow;
    h_.promise().continuation = parent;
    return h_;
  }
  // The outermost Async of a collective: started in `flow`, to its first wait.
  void start(Flow& flow) {
    h_.promise().flow = &flow;
    h_.resume();
  }
  bool valid() const { return h_ != nullptr; }

 protected:
  // The finished coroutine's promise; what it failed with is thrown into its awaiter.
  Promise& finished() {
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
    return h_.promise();
  }
  std::coroutine_handle<Promise> h_;
};

template <typename T> struct AsyncPromise;

template <typename T = void> class [[nodiscard]] Async : public AsyncOwner<AsyncPromise<T>> {
 public:
  using promise_type = AsyncPromise<T>;
  using AsyncOwner<promise_type>::AsyncOwner;
  T await_resume() { return std::move(*this->finished().value); }
};

template <> class [[nodiscard]] Async<void> : public AsyncOwner<AsyncPromise<void>> {
 public:
  using promise_type = AsyncPromise<void>;
  using AsyncOwner<promise_type>::AsyncOwner;
  void await_resume() { this->finished(); }
};

template <typename T> struct AsyncPromise : PromiseBase {
  std::optional<T> value;
  Async<T> get_return_object() { return Async<T>(std::coroutine_handle<AsyncPromise>::from_promise(*this)); }
  void return_value(T v) { value = std::move(v); }
};

template <> struct AsyncPromise<void> : PromiseBase {
  Async<void> get_return_object() { return Async<void>(std::coroutine_handle<AsyncPromise>::from_promise(*this)); }
  void return_void() {}
};

// Waiting for steps inside a Async. The steps are tested at once: a wait that is already
// over does not suspend.
struct StepWait {
  std::vector<Step>* all;
  Step* one;
  Flow* flow = nullptr;
  bool await_ready() { return steps_done(all, one); }
  template <typename P> void await_suspend(std::coroutine_handle<P> h) {
    flow = h.promise().flow;
    flow->all = all;
    flow->one = one;
    flow->waiting = h;
  }
  void await_resume() {
    if (flow && flow->failure) std::rethrow_exception(std::exchange(flow->failure, nullptr));
  }
};
inline StepWait all(std::vector<Step>& steps) { return {&steps, nullptr}; }
inline StepWait one(Step& step) { return {nullptr, &step}; }
// (A temporary step lives to the end of the co_await's full expression, past its resumption.)
inline StepWait one(Step&& step) { return {nullptr, &step}; }
inline StepWait amid(Step& step, std::vector<Step>& background) { return {&background, &step}; }

}  // namespace gridrt::detail
