#include <brindle/sys/loop.h>

#include <errno.h>
#include <time.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct watch {
	int fd;
	loop_fd_fn fn;
	void *ctx;
	bool dead;
	struct watch *next;
};

struct loop_timer {
	struct loop *l;
	int fd;
	bool armed;
	uint64_t interval_ms;
	loop_timer_fn fn;
	void *ctx;
};

struct sig {
	int signo;
	loop_signal_fn fn;
	void *ctx;
};

struct loop {
	int epfd;
	struct watch *watches;
	int sigfd;
	sigset_t sigmask;
	struct sig sigs[16];
	size_t nsigs;
	loop_hook_fn before_sleep;
	void *before_sleep_ctx;
	bool stopped;
	int code;
	/* How long handlers ran: the longest ever, and per second for the recent window. */
	uint64_t handlers, longest_ns, preempted;
	uint64_t window_max[LOOP_STATS_WINDOW_S], window_sec[LOOP_STATS_WINDOW_S];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void note_handler(struct loop *l, uint64_t start, uint64_t end)
{
	uint64_t ns = end - start, sec = end / 1000000000ull;
	size_t slot = sec % LOOP_STATS_WINDOW_S;
	l->handlers++;
	if (ns > l->longest_ns)
		l->longest_ns = ns;
	if (l->window_sec[slot] != sec) {
		l->window_sec[slot] = sec;
		l->window_max[slot] = 0;
	}
	if (ns > l->window_max[slot])
		l->window_max[slot] = ns;
}

void loop_get_stats(const struct loop *l, struct loop_stats *out)
{
	uint64_t now = mono_ns() / 1000000000ull;
	out->handlers = l->handlers;
	out->preempted = l->preempted;
	out->longest_ns = l->longest_ns;
	out->longest_recent_ns = 0;
	for (size_t i = 0; i < LOOP_STATS_WINDOW_S; i++)
		if (l->window_sec[i] + LOOP_STATS_WINDOW_S > now &&
		    l->window_max[i] > out->longest_recent_ns)
			out->longest_recent_ns = l->window_max[i];
}

struct loop *loop_new(void)
{
	struct loop *l = xcalloc(1, sizeof(*l));
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->sigfd = -1;
	sigemptyset(&l->sigmask);
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	struct watch *w = l->watches;
	while (w) {
		struct watch *next = w->next;
		free(w);
		w = next;
	}
	if (l->sigfd >= 0)
		close(l->sigfd);
	close(l->epfd);
	free(l);
}

static struct watch *find_watch(struct loop *l, int fd)
{
	for (struct watch *w = l->watches; w; w = w->next)
		if (w->fd == fd && !w->dead)
			return w;
	return NULL;
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ctx)
{
	struct watch *w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->fn = fn;
	w->ctx = ctx;
	struct epoll_event ev = { .events = events, .data.ptr = w };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = errno;
		free(w);
		return -e;
	}
	w->next = l->watches;
	l->watches = w;
	return 0;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
	struct watch *w = find_watch(l, fd);
	if (!w)
		return -ENOENT;
	struct epoll_event ev = { .events = events, .data.ptr = w };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void loop_del_fd(struct loop *l, int fd)
{
	struct watch *w = find_watch(l, fd);
	if (!w)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	/* Freed after the current dispatch, which may still hold it. */
	w->dead = true;
}

static void reap(struct loop *l)
{
	struct watch **pp = &l->watches;
	while (*pp) {
		struct watch *w = *pp;
		if (w->dead) {
			*pp = w->next;
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

static void timer_ready(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct loop_timer *t = ctx;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) != sizeof(n))
		return;
	if (!t->interval_ms)
		t->armed = false;
	t->fn(l, t, t->ctx);
}

struct loop_timer *loop_timer_new(struct loop *l, loop_timer_fn fn, void *ctx)
{
	struct loop_timer *t = xcalloc(1, sizeof(*t));
	t->l = l;
	t->fn = fn;
	t->ctx = ctx;
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0 || loop_add_fd(l, t->fd, EPOLLIN, timer_ready, t) < 0) {
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return NULL;
	}
	return t;
}

static struct timespec ms_ts(uint64_t ms)
{
	return (struct timespec){ .tv_sec = (time_t)(ms / 1000),
				  .tv_nsec = (long)(ms % 1000) * 1000000 };
}

void loop_timer_arm(struct loop_timer *t, uint64_t after_ms, uint64_t interval_ms)
{
	struct itimerspec its = { .it_value = ms_ts(after_ms ? after_ms : 1),
				  .it_interval = ms_ts(interval_ms) };
	timerfd_settime(t->fd, 0, &its, NULL);
	t->armed = true;
	t->interval_ms = interval_ms;
}

void loop_timer_disarm(struct loop_timer *t)
{
	struct itimerspec its = { 0 };
	timerfd_settime(t->fd, 0, &its, NULL);
	t->armed = false;
	/* Drop an expiry that is already pending. */
	uint64_t n;
	ssize_t r = read(t->fd, &n, sizeof(n));
	(void)r;
}

bool loop_timer_armed(const struct loop_timer *t)
{
	return t->armed;
}

void loop_timer_free(struct loop_timer *t)
{
	if (!t)
		return;
	loop_del_fd(t->l, t->fd);
	close(t->fd);
	free(t);
}

static void signal_ready(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct signalfd_siginfo si;
	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		for (size_t i = 0; i < l->nsigs; i++)
			if (l->sigs[i].signo == (int)si.ssi_signo)
				l->sigs[i].fn(l, (int)si.ssi_signo, l->sigs[i].ctx);
	}
}

int loop_add_signal(struct loop *l, int signo, loop_signal_fn fn, void *ctx)
{
	if (l->nsigs == ARRAY_SIZE(l->sigs))
		return -ENOSPC;
	sigaddset(&l->sigmask, signo);
	if (sigprocmask(SIG_BLOCK, &l->sigmask, NULL) < 0)
		return -errno;
	int fd = signalfd(l->sigfd, &l->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (l->sigfd < 0) {
		l->sigfd = fd;
		int r = loop_add_fd(l, fd, EPOLLIN, signal_ready, NULL);
		if (r < 0)
			return r;
	}
	l->sigs[l->nsigs++] = (struct sig){ signo, fn, ctx };
	return 0;
}

void loop_set_before_sleep(struct loop *l, loop_hook_fn fn, void *ctx)
{
	l->before_sleep = fn;
	l->before_sleep_ctx = ctx;
}

int loop_run_once(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[64];
	int n = epoll_wait(l->epfd, evs, ARRAY_SIZE(evs), timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		struct watch *w = evs[i].data.ptr;
		if (w->dead)
			continue;
		struct rusage r0, r1;
		getrusage(RUSAGE_THREAD, &r0);
		uint64_t t0 = mono_ns();
		w->fn(l, w->fd, evs[i].events, w->ctx);
		uint64_t t1 = mono_ns();
		getrusage(RUSAGE_THREAD, &r1);
		/* A run the kernel preempted measures the machine's load, not the handler. */
		if (r1.ru_nivcsw == r0.ru_nivcsw)
			note_handler(l, t0, t1);
		else
			l->preempted++;
	}
	reap(l);
	if (l->before_sleep)
		l->before_sleep(l, l->before_sleep_ctx);
	return n;
}

int loop_run(struct loop *l)
{
	if (l->before_sleep)
		l->before_sleep(l, l->before_sleep_ctx);
	while (!l->stopped) {
		int r = loop_run_once(l, -1);
		if (r < 0)
			return r;
	}
	return l->code;
}

void loop_stop(struct loop *l, int code)
{
	l->stopped = true;
	l->code = code;
}
