/* nfq_delay: a fixed one-way delay, and a loss rate, on chosen paths, where the kernel has no
   netem.

   iptables hands the packets of a path to a netfilter queue (`-j NFQUEUE --queue-num N`);
   this program, bound to that queue in the same network namespace, holds each packet for
   the delay and then lets it go on (NF_ACCEPT). The delay is the same for every packet, so
   they leave in the order they came and a TCP stream sees a longer line, not reordering.
   The tests make nodes whose latencies differ on purpose with it (logical clusters).

     nfq_delay --queue N --delay-us D [--loss PERCENT [--seed S]]

   With --loss, each packet is dropped (NF_DROP) with that probability, independently, as on a
   line with random loss; packets are then queued one TCP segment at a time (the kernel splits
   GSO packets first), so that the rate is per segment on the wire, not per burst. The draws
   come from a generator seeded with S (default 1): a run is repeatable.

   Prints "holding queue N for D us" (and the loss) once bound, and on SIGTERM or SIGINT lets
   every held packet go, prints how many it held and dropped, and exits. A packet that finds the program's table
   full goes on at once and is counted ("undelayed"); the rule's --queue-bypass lets packets
   pass while no program is bound. Needs CAP_NET_ADMIN (root). */
#include <arpa/inet.h> /* before linux/netfilter.h, which would define struct in_addr again */
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kHeld = 1 << 16 }; /* packets in flight on the delayed path at most */

struct held {
  uint32_t id;
  int64_t due_ns;
};

static struct held table[kHeld];
static size_t head, count;
static int64_t delay_ns;
static double loss;        /* probability of dropping a packet */
static uint64_t draws = 1; /* xorshift64 state */
static unsigned long long held_total, undelayed, dropped;
static volatile sig_atomic_t stopping;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int on_packet(struct nfq_q_handle* q, struct nfgenmsg* msg, struct nfq_data* data, void* unused) {
  (void)msg, (void)unused;
  const struct nfqnl_msg_packet_hdr* h = nfq_get_msg_packet_hdr(data);
  if (!h) return 0;
  const uint32_t id = ntohl(h->packet_id);
  if (loss > 0) {
    draws ^= draws << 13, draws ^= draws >> 7, draws ^= draws << 17;
    if ((double)(draws >> 11) / 9007199254740992.0 < loss) {
      ++dropped;
      return nfq_set_verdict(q, id, NF_DROP, 0, NULL);
    }
  }
  if (count == kHeld) {
    ++undelayed;
    return nfq_set_verdict(q, id, NF_ACCEPT, 0, NULL);
  }
  table[(head + count++) % kHeld] = (struct held){id, now_ns() + delay_ns};
  ++held_total;
  return 0;
}

/* Lets go every held packet due by `until` (all of them for INT64_MAX). */
static void release(struct nfq_q_handle* q, int64_t until) {
  while (count > 0 && table[head].due_ns <= until) {
    nfq_set_verdict(q, table[head].id, NF_ACCEPT, 0, NULL);
    head = (head + 1) % kHeld;
    --count;
  }
}

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static long number_arg(const char* name, const char* text, long least, long most) {
  char* end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < least || v > most) {
    fprintf(stderr, "nfq_delay: %s must be a whole number from %ld to %ld, not '%s'\n", name, least, most, text);
    exit(2);
  }
  return v;
}

int main(int argc, char** argv) {
  long queue = -1, delay_us = -1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--queue") && i + 1 < argc) queue = number_arg("--queue", argv[++i], 0, 65535);
    else if (!strcmp(argv[i], "--delay-us") && i + 1 < argc) delay_us = number_arg("--delay-us", argv[++i], 0, 10000000);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) draws = (uint64_t)number_arg("--seed", argv[++i], 1, 2147483647L);
    else if (!strcmp(argv[i], "--loss") && i + 1 < argc) {
      const char* text = argv[++i];
      char* end = NULL;
      const double percent = strtod(text, &end);
      if (end == text || *end || !(percent >= 0 && percent <= 100)) {
        fprintf(stderr, "nfq_delay: --loss must be a percentage from 0 to 100, not '%s'\n", text);
        return 2;
      }
      loss = percent / 100;
    } else {
      fprintf(stderr,
              "usage: nfq_delay --queue N --delay-us D [--loss PERCENT [--seed S]]\n"
              "Holds every packet iptables queues to netfilter queue N (-j NFQUEUE --queue-num N)\n"
              "for D microseconds, then lets it go on: a one-way delay where there is no netem;\n"
              "with --loss, drops each packet with that probability (seeded by S, default 1).\n");
      return 2;
    }
  }
  if (queue < 0 || delay_us < 0) {
    fprintf(stderr, "nfq_delay: --queue and --delay-us are both needed (--help)\n");
    return 2;
  }
  delay_ns = delay_us * 1000;

  struct nfq_handle* h = nfq_open();
  if (!h) {
    perror("nfq_delay: nfq_open (needs root and a kernel with NFQUEUE)");
    return 1;
  }
  if (nfq_bind_pf(h, AF_INET) < 0) {
    perror("nfq_delay: nfq_bind_pf");
    return 1;
  }
  struct nfq_q_handle* q = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
  if (!q) {
    fprintf(stderr, "nfq_delay: cannot bind netfilter queue %ld (is another program bound to it?)\n", queue);
    return 1;
  }
  /* Only the packet ids are needed; GSO packets are queued whole rather than segmented. */
  if (nfq_set_mode(q, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(q, kHeld) < 0) {
    perror("nfq_delay: configuring the queue");
    return 1;
  }
  if (loss == 0) nfq_set_queue_flags(q, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO); /* with loss: segment by segment */
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16 << 20);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  if (loss > 0) printf("holding queue %ld for %ld us, dropping %g%% of packets\n", queue, delay_us, loss * 100);
  else printf("holding queue %ld for %ld us\n", queue, delay_us);
  fflush(stdout);

  const int fd = nfq_fd(h);
  char buf[65536];
  while (!stopping) {
    struct timespec wait = {1, 0};
    if (count > 0) {
      const int64_t left = table[head].due_ns - now_ns();
      wait.tv_sec = left > 0 ? left / 1000000000 : 0;
      wait.tv_nsec = left > 0 ? left % 1000000000 : 0;
    }
    struct pollfd p = {fd, POLLIN, 0};
    if (ppoll(&p, 1, &wait, NULL) < 0 && errno != EINTR) {
      perror("nfq_delay: ppoll");
      break;
    }
    if (p.revents & POLLIN) {
      for (;;) {
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          if (errno == ENOBUFS) fprintf(stderr, "nfq_delay: the kernel dropped queue messages (ENOBUFS)\n");
          break;
        }
        nfq_handle_packet(h, buf, (int)n);
      }
    }
    release(q, now_ns());
  }
  release(q, INT64_MAX);
  printf("held %llu packets, %llu undelayed (table full), %llu dropped\n", held_total, undelayed, dropped);
  nfq_destroy_queue(q);
  nfq_close(h);
  return 0;
}
