/*
 * The event loop every daemon runs: epoll over file descriptors, one timerfd
 * per timer, signals through a signalfd. Handlers only record what changed;
 * the "before sleep" hook runs once per turn, after all ready handlers, and is
 * where a daemon applies its dirty state (so a burst of events costs one
 * apply). Single-threaded.
 */
#ifndef BRINDLE_LOOP_H
#define BRINDLE_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <brindle/core/util.h>

struct loop;
struct loop_timer;

typedef void (*loop_fd_fn)(struct loop *l, int fd, uint32_t events, void *ctx);
typedef void (*loop_timer_fn)(struct loop *l, struct loop_timer *t, void *ctx);
typedef void (*loop_signal_fn)(struct loop *l, int signo, void *ctx);
typedef void (*loop_hook_fn)(struct loop *l, void *ctx);

struct loop *loop_new(void);
/* Closes the loop's own descriptors and frees its timers. Accepts NULL. */
void loop_free(struct loop *l);

/* @events: EPOLLIN, EPOLLOUT, ... The loop does not own @fd. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx) must_check;
int loop_mod_fd(struct loop *l, int fd, uint32_t events) must_check;
void loop_del_fd(struct loop *l, int fd);

struct loop_timer *loop_timer_new(struct loop *l, loop_timer_fn fn, void *ctx);
/* Fire after @after_ms, then every @interval_ms (0 = once). Re-arming replaces. */
void loop_timer_arm(struct loop_timer *t, uint64_t after_ms, uint64_t interval_ms);
void loop_timer_disarm(struct loop_timer *t);
bool loop_timer_armed(const struct loop_timer *t);
void loop_timer_free(struct loop_timer *t);

/* Blocks @signo for the process and delivers it through the loop. */
int loop_add_signal(struct loop *l, int signo, loop_signal_fn fn, void *ctx) must_check;
void loop_set_before_sleep(struct loop *l, loop_hook_fn fn, void *ctx);

/*
 * How long the loop's handlers (descriptors, timers, signals; not the
 * before-sleep hook) ran at a time: a handler that blocks stalls everything
 * else, so the longest one is what health and tests watch. A run during
 * which the kernel preempted the loop for another process is left out (that
 * is the machine's load, not the handler); a handler that blocks in a system
 * call gives the CPU up itself and counts. The recent figure covers the last
 * LOOP_STATS_WINDOW_S seconds.
 */
#define LOOP_STATS_WINDOW_S 10
struct loop_stats {
	uint64_t handlers;	    /* handler runs measured */
	uint64_t preempted;	    /* runs left out: the kernel preempted them */
	uint64_t longest_ns;	    /* the longest ever */
	uint64_t longest_recent_ns; /* the longest in the window */
};
void loop_get_stats(const struct loop *l, struct loop_stats *out);

/* Runs until loop_stop; returns the code given to it. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l, int code);
/* One turn: wait up to @timeout_ms (-1 forever) and dispatch. For tests and tools. */
int loop_run_once(struct loop *l, int timeout_ms);

#endif
