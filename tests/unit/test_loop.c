/* The event loop: fds, timers, signals, and one before-sleep hook per turn. */
#include "harness.h"

#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <signal.h>
#include <unistd.h>

struct counts {
	int reads, timer, timer2, signals, hooks;
	int pipe_r;
	struct loop_timer *self_free;
};

static void on_read(struct loop *l, int fd, uint32_t ev, void *ctx)
{
	struct counts *c = ctx;
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));
	assert_true(n > 0);
	c->reads++;
}

static void on_timer(struct loop *l, struct loop_timer *t, void *ctx)
{
	((struct counts *)ctx)->timer++;
}

static void on_timer2(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct counts *c = ctx;
	c->timer2++;
	if (c->timer2 == 3)
		loop_timer_disarm(t);
}

static void on_signal(struct loop *l, int signo, void *ctx)
{
	assert_int_equal(signo, SIGUSR1);
	((struct counts *)ctx)->signals++;
	loop_stop(l, 7);
}

static void hook(struct loop *l, void *ctx)
{
	((struct counts *)ctx)->hooks++;
}

static void test_fd_burst_costs_one_hook(void **state)
{
	struct loop *l = loop_new();
	struct counts c = { 0 };
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(loop_add_fd(l, p[0], EPOLLIN, on_read, &c), 0);
	loop_set_before_sleep(l, hook, &c);
	/* Many writes before the loop runs: one read, one hook. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_run_once(l, 1000), 1);
	assert_int_equal(c.reads, 1);
	assert_int_equal(c.hooks, 1);
	/* Nothing ready: the hook still runs once per turn. */
	assert_int_equal(loop_run_once(l, 0), 0);
	assert_int_equal(c.hooks, 2);
	loop_del_fd(l, p[0]);
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(loop_run_once(l, 50), 0);
	assert_int_equal(c.reads, 1);
	close(p[0]);
	close(p[1]);
	loop_free(l);
}

static void test_timers(void **state)
{
	struct loop *l = loop_new();
	struct counts c = { 0 };
	struct loop_timer *once = loop_timer_new(l, on_timer, &c);
	struct loop_timer *every = loop_timer_new(l, on_timer2, &c);
	loop_timer_arm(once, 20, 0);
	loop_timer_arm(every, 5, 5);
	assert_true(loop_timer_armed(once));
	uint64_t deadline = now_ms() + 2000;
	while ((c.timer < 1 || c.timer2 < 3) && now_ms() < deadline)
		loop_run_once(l, 100);
	assert_int_equal(c.timer, 1);
	assert_false(loop_timer_armed(once));
	assert_int_equal(c.timer2, 3);
	assert_false(loop_timer_armed(every)); /* disarmed from its own callback */
	for (int i = 0; i < 5; i++)
		loop_run_once(l, 10);
	assert_int_equal(c.timer2, 3);
	/* Re-arming replaces; disarming drops a pending expiry. */
	loop_timer_arm(once, 1, 0);
	usleep(5000);
	loop_timer_disarm(once);
	loop_run_once(l, 20);
	assert_int_equal(c.timer, 1);
	loop_timer_free(once);
	loop_timer_free(every);
	loop_free(l);
}

static void test_signal_stops(void **state)
{
	struct loop *l = loop_new();
	struct counts c = { 0 };
	assert_int_equal(loop_add_signal(l, SIGUSR1, on_signal, &c), 0);
	assert_int_equal(kill(getpid(), SIGUSR1), 0);
	assert_int_equal(loop_run(l), 7);
	assert_int_equal(c.signals, 1);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fd_burst_costs_one_hook),
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_signal_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
