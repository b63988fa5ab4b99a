/*
 * brindle-confd: keeps a node's BIRD configured from the datastore.
 *
 * One event loop. The syncer's updates land in the store and mark the state
 * dirty; the loop's before-sleep hook applies once the burst has settled:
 * BGP view → templates → (if the files would change) stage, `bird -p -c`,
 * rename into place, `configure` on BIRD's socket. Nothing is rendered
 * before the first full sync. A configuration BIRD rejects is never
 * installed: the last good one stays, readiness says why, a metric counts it.
 * Health and metrics are served over HTTP (/liveness, /readiness, /metrics).
 *
 * What is ours: the rendered files in the output directory. BIRD owns its
 * routes; felix owns its own (see bgp-templates/README.md).
 */
#include "bgp_view.h"
#include "output.h"
#include "render.h"
#include "secrets.h"
#include "node_status.h"
#include "store.h"

#include <brindle/sys/bird_ctl.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/httpd.h>
#include <brindle/sys/log.h>
#include <brindle/sys/loop.h>
#include <brindle/core/metrics.h>
#include <brindle/version.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/install.h>
#include <brindle/paths.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct opts {
	const char *node;
	const char *output_dir;
	const char *templates;
	const char *bird;
	const char *bird_socket;
	const char *secrets_dir;
	const char *password_env_prefix;
	const char *health_host;
	int health_port;
	int64_t settle_ms, max_delay_ms, resync_ms;
	bool once;
};

enum state {
	ST_WAITING,	 /* not yet in sync, or nothing rendered yet */
	ST_OK,		 /* the rendered configuration is installed */
	ST_NO_VIEW,	 /* this node cannot be configured (not in the datastore, no address) */
	ST_BAD_TEMPLATE, /* rendering failed */
	ST_REJECTED,	 /* BIRD rejected the rendered configuration */
	ST_INSTALL,	 /* writing it failed */
};

struct confd {
	struct opts o;
	struct loop *loop;
	struct ds *ds;
	struct ds_syncer *syncer;
	struct store store;
	struct render_templates *templates;
	struct output *out;
	struct secrets secrets;
	bool in_sync, dirty, synced_once;
	struct ds_outage outage;
	uint64_t first_dirty_ms, last_event_ms;
	struct loop_timer *settle, *retry, *resync, *bird_retry;
	/* BIRD, watched over a control connection of its own: closed when BIRD goes. */
	struct bird_ctl *bird;
	struct node_status *node_status; /* CalicoNodeStatus resources of this node */
	bool bird_was_up; /* it was up once: its return is logged and reconfigured */
	char *bird_down;  /* why BIRD is not there; NULL while connected */
	uint64_t retry_ms;
	struct render_output last;
	bool have_last;
	enum state state;
	char *reason; /* why not ready */
	bool reload_pending;
	char *last_logged; /* the last error logged, so each is logged once */
	struct hmap problems;
	size_t sessions[2];
	bool applied_once;
	int exit_code;
	struct httpd *httpd;
	struct metrics *m;
	struct metric *m_ds_resyncs, *m_outage;
	struct metric *m_renders, *m_writes, *m_reloads, *m_rejected, *m_valid, *m_in_sync,
		*m_sessions, *m_problems, *m_render_seconds, *m_updates;
};

/* --- status and logging ------------------------------------------------------------------ */

static void set_state(struct confd *c, enum state st, const char *reason)
{
	c->state = st;
	free(c->reason);
	c->reason = reason ? xstrdup(reason) : NULL;
}

/* Errors are logged once each, until a different one (or success) comes. */
static void error_once(struct confd *c, const char *msg)
{
	if (c->last_logged && strcmp(c->last_logged, msg) == 0)
		return;
	log_error("%s", msg);
	free(c->last_logged);
	c->last_logged = xstrdup(msg);
}

static void clear_error(struct confd *c)
{
	free(c->last_logged);
	c->last_logged = NULL;
}

static void log_problems(struct confd *c, const struct bgp_view *v)
{
	struct hmap now = HMAP_INIT;
	for (size_t i = 0; i < v->n_problems; i++) {
		hmap_put(&now, v->problems[i], (void *)1);
		if (!hmap_has(&c->problems, v->problems[i]))
			log_warn("%s", v->problems[i]);
	}
	for (struct hmap_iter it = hmap_iter(&c->problems); hmap_next(&it);)
		if (!hmap_has(&now, it.key))
			log_info("resolved: %s", it.key);
	hmap_clear(&c->problems);
	c->problems = now;
	metric_set(c->m_problems, NULL, (double)v->n_problems);
}

static bool ready(const struct confd *c, const char **why)
{
	if (!ds_outage_ok(&c->outage, now_ms())) {
		*why = "not in sync with the datastore";
		return false;
	}
	if (c->bird_down) {
		*why = c->bird_down;
		return false;
	}
	if (c->state != ST_OK) {
		*why = c->reason ? c->reason : "no configuration rendered yet";
		return false;
	}
	if (c->reload_pending) {
		*why = c->reason ? c->reason : "BIRD has not loaded the configuration yet";
		return false;
	}
	return true;
}

/* --- reloading ---------------------------------------------------------------------------- */

static void reload(struct confd *c)
{
	if (c->bird_down)
		return; /* the watch reloads when BIRD is back */
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = bird_reload(c->o.bird_socket, 5000, &err);
	if (r == 0) {
		c->reload_pending = false;
		metric_add(c->m_reloads, "ok", 1);
		log_info("BIRD reloaded its configuration");
		set_state(c, ST_OK, NULL);
		clear_error(c);
		c->retry_ms = 0;
		loop_timer_disarm(c->retry);
	} else {
		metric_add(c->m_reloads, "error", 1);
		char *msg = xstrdup(sb_str(&err));
		sb_reset(&err);
		sb_addf(&err, "BIRD has not loaded the new configuration: %s", msg);
		free(msg);
		free(c->reason);
		c->reason = xstrdup(sb_str(&err));
		if (r == -EINVAL)
			error_once(c, sb_str(&err));
		else if (!c->last_logged || strcmp(c->last_logged, sb_str(&err)) != 0) {
			log_warn("%s; retrying", sb_str(&err));
			free(c->last_logged);
			c->last_logged = xstrdup(sb_str(&err));
		}
		c->retry_ms = c->retry_ms ? MIN(c->retry_ms * 2, 30000) : 1000;
		loop_timer_arm(c->retry, c->retry_ms, 0);
	}
	sb_free(&err);
}

static void on_retry(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct confd *c = ctx;
	if (c->reload_pending)
		reload(c);
}

/* --- watching BIRD --------------------------------------------------------------------------- */

#define BIRD_RETRY_MS 500

static void bird_lost(struct confd *c, const char *why);

static void on_bird(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct confd *c = ctx;
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
		return; /* nothing BIRD says unasked matters here */
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	sb_addf(&why, "BIRD is not running: its control socket %s closed", c->o.bird_socket);
	bird_lost(c, sb_str(&why));
	sb_free(&why);
}

/* Connect the watch; on failure, say why and try again in a second. */
static void bird_watch(struct confd *c)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct bird_ctl *b = NULL;
	/* short: the loop waits for it, and a BIRD that does not greet in time is not there */
	int r = bird_ctl_open(c->o.bird_socket, 500, &b, &err);
	if (r == 0 && loop_add_fd(c->loop, bird_ctl_fd(b), EPOLLIN | EPOLLRDHUP, on_bird, c) < 0) {
		sb_addf(&err, "watching it: %s", strerror(errno));
		bird_ctl_close(b);
		r = -1;
	}
	if (r < 0) {
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		sb_addf(&why, "BIRD is not running: %s", sb_str(&err));
		bird_lost(c, sb_str(&why));
		sb_free(&why);
		sb_free(&err);
		return;
	}
	sb_free(&err);
	c->bird = b;
	bool back = c->bird_was_up && c->bird_down;
	free(c->bird_down);
	c->bird_down = NULL;
	if (back)
		log_info("BIRD is back (%s); configuring it again", bird_ctl_greeting(b));
	c->bird_was_up = true;
	/* A BIRD that (re)started reads the files confd left: configure makes sure of it. */
	if (back || c->reload_pending) {
		c->reload_pending = c->reload_pending || c->have_last;
		if (c->reload_pending)
			reload(c);
	}
}

static void bird_lost(struct confd *c, const char *why)
{
	if (c->bird) {
		loop_del_fd(c->loop, bird_ctl_fd(c->bird));
		bird_ctl_close(c->bird);
		c->bird = NULL;
	}
	/* Logged once per loss (and not while BIRD has never started: confd starts first). */
	if (!c->bird_down && c->bird_was_up)
		log_warn("%s; not ready until it is back", why);
	free(c->bird_down);
	c->bird_down = xstrdup(why);
	loop_timer_arm(c->bird_retry, BIRD_RETRY_MS, 0);
}

static void on_bird_retry(struct loop *l, struct loop_timer *t, void *ctx)
{
	bird_watch(ctx);
}

/* --- applying ------------------------------------------------------------------------------ */

static void apply(struct confd *c)
{
	struct bgp_input in = { .node_name = c->o.node,
				.password = secrets_password,
				.password_ctx = &c->secrets };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	uint64_t t0 = now_ns();
	store_input(&c->store, &in);
	struct bgp_view *v = NULL;
	int r = bgp_view_build(&in, &v, &err);
	store_input_free(&in);
	if (r < 0) {
		set_state(c, ST_NO_VIEW, sb_str(&err));
		error_once(c, sb_str(&err));
		sb_free(&err);
		return;
	}
	log_problems(c, v);
	for (int f = 0; f < 2; f++) {
		c->sessions[f] = v->fam[f].n_sessions;
		metric_set(c->m_sessions, f == BGP_V4 ? "ipv4" : "ipv6",
			   (double)v->fam[f].n_sessions);
	}
	struct arena *a = arena_new();
	struct render_output out;
	r = render_config(c->templates, bgp_view_data(v, a), &out, &err);
	arena_free(a);
	bgp_view_free(v);
	metric_add(c->m_renders, NULL, 1);
	metric_observe(c->m_render_seconds, NULL, (double)(now_ns() - t0) / 1e9);
	if (r < 0) {
		char *msg = xstrdup(sb_str(&err));
		sb_reset(&err);
		sb_addf(&err, "the templates do not render: %s", msg);
		free(msg);
		set_state(c, ST_BAD_TEMPLATE, sb_str(&err));
		error_once(c, sb_str(&err));
		sb_free(&err);
		return;
	}
	/* The same as last time (installed, or rejected): nothing to do. */
	if (c->have_last && render_output_equal(&out, &c->last)) {
		render_output_clear(&out);
		sb_free(&err);
		return;
	}
	if (c->have_last)
		render_output_clear(&c->last);
	c->last = out;
	c->have_last = true;
	if (output_installed(c->out, &out)) {
		/* BIRD already reads these files (confd restarted, or a change reverted). */
		metric_set(c->m_valid, NULL, 1);
		if (!c->reload_pending) {
			set_state(c, ST_OK, NULL);
			clear_error(c);
		}
		sb_free(&err);
		return;
	}
	r = output_install(c->out, &out, &err);
	if (r == -EINVAL) {
		metric_add(c->m_rejected, NULL, 1);
		metric_set(c->m_valid, NULL, 0);
		char *msg = xstrdup(sb_str(&err));
		sb_reset(&err);
		sb_addf(&err,
			"BIRD rejects the rendered configuration, keeping the last good one: %s",
			msg);
		free(msg);
		set_state(c, ST_REJECTED, sb_str(&err));
		error_once(c, sb_str(&err));
	} else if (r < 0) {
		char *msg = xstrdup(sb_str(&err));
		sb_reset(&err);
		sb_addf(&err, "cannot install the configuration: %s", msg);
		free(msg);
		set_state(c, ST_INSTALL, sb_str(&err));
		error_once(c, sb_str(&err));
		/* Try again on the next change or resync. */
		render_output_clear(&c->last);
		c->have_last = false;
	} else {
		metric_add(c->m_writes, NULL, 1);
		metric_set(c->m_valid, NULL, 1);
		log_info("configuration written to %s (%zu IPv4, %zu IPv6 sessions)",
			 c->o.output_dir, c->sessions[0], c->sessions[1]);
		set_state(c, ST_OK, NULL);
		c->reload_pending = true;
		reload(c);
	}
	sb_free(&err);
}

/* Once per loop turn: apply when the burst has settled (or waited long enough). */
static void before_sleep(struct loop *l, void *ctx)
{
	struct confd *c = ctx;
	if (!c->in_sync || !c->dirty)
		return;
	uint64_t now = now_ms();
	uint64_t quiet = now - c->last_event_ms, waited = now - c->first_dirty_ms;
	if (quiet < (uint64_t)c->o.settle_ms && waited < (uint64_t)c->o.max_delay_ms) {
		uint64_t left =
			MIN((uint64_t)c->o.settle_ms - quiet, (uint64_t)c->o.max_delay_ms - waited);
		loop_timer_arm(c->settle, left ? left : 1, 0);
		return;
	}
	c->dirty = false;
	apply(c);
	c->applied_once = true;
	if (c->o.once) {
		const char *why;
		c->exit_code = c->state == ST_OK ? 0 : 1;
		if (!ready(c, &why) && c->state == ST_OK)
			log_warn("%s", why);
		loop_stop(l, c->exit_code);
	}
}

static void on_settle(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)ctx; /* the wake-up is the point: before_sleep runs after this */
}

static void mark_dirty(struct confd *c)
{
	uint64_t now = now_ms();
	if (!c->dirty)
		c->first_dirty_ms = now;
	c->last_event_ms = now;
	c->dirty = true;
}

static void on_resync(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct confd *c = ctx;
	/* Passwords in files and the environment can change without the datastore. */
	mark_dirty(c);
	c->last_event_ms = 0;
}

/* --- the datastore ------------------------------------------------------------------------- */

static void on_update(void *ctx, const struct ds_update *u)
{
	struct confd *c = ctx;
	metric_add(c->m_updates, NULL, 1);
	if (u->kind->id == KIND_CALICONODESTATUS) {
		/* Not configuration: kept apart, so that its status writes render nothing. */
		node_status_update(c->node_status, u);
		model_free(u->obj);
		return;
	}
	if (u->error) {
		log_warn("ignoring %s: %s", u->kind->kind, u->error);
		if (store_put(&c->store, u->kind, u->scope, u->name, NULL))
			mark_dirty(c);
		return;
	}
	if (store_put(&c->store, u->kind, u->scope, u->name, u->obj))
		mark_dirty(c);
}

static void on_status(void *ctx, enum ds_sync_status st, const char *why)
{
	struct confd *c = ctx;
	bool was = c->in_sync;
	c->in_sync = st == DS_IN_SYNC;
	ds_outage_status(&c->outage, st, why, now_ms());
	if (c->in_sync && !was) {
		if (!c->synced_once) {
			log_info("in sync with the datastore (%zu nodes, %zu BGP peers, %zu pools)",
				 store_count(&c->store, KIND_NODE),
				 store_count(&c->store, KIND_BGPPEER),
				 store_count(&c->store, KIND_IPPOOL));
			/* Render at once after the first list; later bursts settle. */
			c->synced_once = true;
			mark_dirty(c);
			c->last_event_ms = 0;
		} else {
			mark_dirty(c);
		}
	}
}

static void on_ds_resync(void *ctx, const char *reason, const char *detail)
{
	struct confd *c = ctx;
	log_warn("datastore: resync (%s): %s", reason, detail);
	metric_add(c->m_ds_resyncs, reason, 1);
}

static const struct ds_syncer_ops syncer_ops = { on_update, on_status, on_ds_resync };

/* --- HTTP ------------------------------------------------------------------------------------ */

static void on_http(void *ctx, const char *path, struct httpd_response *resp)
{
	struct confd *c = ctx;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	const char *reason;
	uint64_t now = now_ms();
	bool ok = !streq(path, "/readiness") || ready(c, &reason);
	if (!ok)
		sb_addf(&why, "%s\n", reason);
	if (!c->in_sync && streq(path, "/readiness")) {
		ds_outage_describe(&c->outage, now, &why);
		sb_adds(&why, "\n");
	}
	/* The datastore as readiness sees it: in sync through an outage's grace period. */
	metric_set(c->m_in_sync, NULL, ds_outage_ok(&c->outage, now));
	metric_set(c->m_outage, NULL, (double)ds_outage_ms(&c->outage, now) / 1e3);
	httpd_health_answer(path, ok, sb_str(&why), c->m, resp);
	sb_free(&why);
}

static void setup_metrics(struct confd *c)
{
	static const double buckets[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1 };
	c->m = metrics_new();
	c->m_updates = metrics_counter(c->m, "brindle_confd_datastore_updates_total",
				       "Resources received from the datastore.", NULL);
	c->m_in_sync = metrics_gauge(
		c->m, "brindle_confd_datastore_in_sync",
		"1 when the datastore has been listed and is being watched, or has not "
		"been for less than the grace period (BRINDLE_DATASTORE_GRACE).",
		NULL);
	c->m_outage = metrics_gauge(
		c->m, "brindle_confd_datastore_outage_seconds",
		"How long the datastore has been unreachable or being listed again (0: in sync); "
		"confd reports not ready once this passes BRINDLE_DATASTORE_GRACE.",
		NULL);
	c->m_ds_resyncs = metrics_counter(c->m, "brindle_confd_datastore_resyncs_total",
					  "Re-lists of the datastore, by reason.", "reason");
	c->m_renders = metrics_counter(c->m, "brindle_confd_renders_total",
				       "BGP views computed and rendered.", NULL);
	c->m_render_seconds =
		metrics_histogram(c->m, "brindle_confd_render_seconds",
				  "Time to compute the BGP view and render the templates.", NULL,
				  buckets, ARRAY_SIZE(buckets));
	c->m_writes = metrics_counter(c->m, "brindle_confd_config_writes_total",
				      "Configurations checked and installed.", NULL);
	c->m_rejected = metrics_counter(c->m, "brindle_confd_config_rejected_total",
					"Rendered configurations that bird -p rejected.", NULL);
	c->m_valid = metrics_gauge(c->m, "brindle_confd_config_valid",
				   "1 when the last rendered configuration passed bird -p.", NULL);
	c->m_reloads = metrics_counter(c->m, "brindle_confd_bird_reloads_total",
				       "configure commands sent to BIRD, by result.", "result");
	c->m_sessions = metrics_gauge(c->m, "brindle_confd_bgp_sessions",
				      "BGP sessions in the configuration, by family.", "family");
	c->m_problems = metrics_gauge(c->m, "brindle_confd_problems",
				      "Peers or settings left out of the configuration.", NULL);
	metric_set(c->m_in_sync, NULL, 0);
	metric_set(c->m_problems, NULL, 0);
}

/* --- options ---------------------------------------------------------------------------------- */

/*
 * The templates that go with this binary: the source tree's when it runs from
 * the build tree, else those of the prefix it is installed in.
 */
static const char *default_templates(void)
{
	static char path[PATH_MAX];
	if (!path[0]) {
		struct arena *a = arena_new();
		const char *t = install_in_build_tree(a)
					? BRINDLE_SOURCE_DIR "/bgp-templates"
					: install_find(a, BRINDLE_INSTALL_TEMPLATES, R_OK | X_OK);
		snprintf(path, sizeof(path), "%s", t);
		arena_free(a);
	}
	return path;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: brindle-confd [flags]\n"
		"Renders this node's BIRD configuration from the datastore, checks it,\n"
		"installs it and reloads BIRD. Flags, with their variable and default:\n"
		"  --node NAME            NODENAME; the host name\n"
		"  --output-dir DIR       BRINDLE_CONFD_OUTPUT_DIR; /etc/brindle/bird\n"
		"  --templates DIR        BRINDLE_CONFD_TEMPLATES; %s\n"
		"  --bird PATH            BRINDLE_BIRD; bird (used for bird -p -c)\n"
		"  --bird-socket PATH     BRINDLE_BIRD_SOCKET; %s\n"
		"  --secrets-dir DIR      BRINDLE_SECRETS_DIR; %s\n"
		"  --password-env-prefix P  BRINDLE_PASSWORD_ENV_PREFIX; %s (\"\": none)\n"
		"  --health-host HOST     BRINDLE_CONFD_HEALTH_HOST; 127.0.0.1\n"
		"  --health-port PORT     BRINDLE_CONFD_HEALTH_PORT; 9098 (0: off)\n"
		"  --settle DURATION      BRINDLE_CONFD_SETTLE; 100ms of quiet before applying\n"
		"  --max-delay DURATION   BRINDLE_CONFD_MAX_DELAY; 5s at most before applying\n"
		"  --resync-interval D    BRINDLE_CONFD_RESYNC_INTERVAL; 60s (0: never)\n"
		"  --log-level LEVEL      BRINDLE_LOG_LEVEL; info\n"
		"  --log-format FORMAT    BRINDLE_LOG_FORMAT; text (or json)\n"
		"  --once                 apply once after the first sync, then exit\n"
		"  --datastore-type, --etcd-endpoints, --etcd-ca-cert-file, --etcd-cert-file,\n"
		"  --etcd-key-file        as for brindlectl (BRINDLE_DATASTORE_TYPE, ...)\n"
		"See docs/confd.md.\n",
		default_templates(), BIRD_CTL_DEFAULT_SOCKET, SECRETS_DEFAULT_DIR,
		SECRETS_DEFAULT_ENV_PREFIX);
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

static int parse_duration_opt(const char *what, const char *s, int64_t *out)
{
	if (duration_parse(s, out) < 0 || *out < 0) {
		fprintf(stderr, "brindle-confd: %s: \"%s\" is not a duration (100ms, 2s, 1m)\n",
			what, s);
		return -EINVAL;
	}
	return 0;
}

/* Returns 0, 1 (exit successfully: --help/--version) or -1 (usage error). */
static int parse_args(int argc, char **argv, struct opts *o, struct ds_config *cfg,
		      struct ds_config_storage *st, const char **log_level, const char **log_format)
{
	static char host[256];
	const char *settle = env_or("BRINDLE_CONFD_SETTLE", "100ms");
	const char *max_delay = env_or("BRINDLE_CONFD_MAX_DELAY", "5s");
	const char *resync = env_or("BRINDLE_CONFD_RESYNC_INTERVAL", "60s");
	const char *port = env_or("BRINDLE_CONFD_HEALTH_PORT", "9098");
	const char *endpoints = NULL;
	o->node = env_or("NODENAME", NULL);
	o->output_dir = env_or("BRINDLE_CONFD_OUTPUT_DIR", "/etc/brindle/bird");
	o->templates = env_or("BRINDLE_CONFD_TEMPLATES", default_templates());
	o->bird = env_or("BRINDLE_BIRD", "bird");
	o->bird_socket = env_or("BRINDLE_BIRD_SOCKET", BIRD_CTL_DEFAULT_SOCKET);
	o->secrets_dir = env_or("BRINDLE_SECRETS_DIR", SECRETS_DEFAULT_DIR);
	/* Set but empty turns passwords from the environment off. */
	o->password_env_prefix = getenv("BRINDLE_PASSWORD_ENV_PREFIX")
					 ? getenv("BRINDLE_PASSWORD_ENV_PREFIX")
					 : SECRETS_DEFAULT_ENV_PREFIX;
	o->health_host = env_or("BRINDLE_CONFD_HEALTH_HOST", "127.0.0.1");
	*log_level = env_or("BRINDLE_LOG_LEVEL", "info");
	*log_format = env_or("BRINDLE_LOG_FORMAT", "text");
	static const struct {
		const char *flag;
		size_t off; /* into the array below */
	} flags[] = {
		{ "--node", 0 },
		{ "--output-dir", 1 },
		{ "--templates", 2 },
		{ "--bird", 3 },
		{ "--bird-socket", 4 },
		{ "--secrets-dir", 5 },
		{ "--health-host", 6 },
		{ "--health-port", 7 },
		{ "--settle", 8 },
		{ "--max-delay", 9 },
		{ "--resync-interval", 10 },
		{ "--log-level", 11 },
		{ "--log-format", 12 },
		{ "--datastore-type", 13 },
		{ "--etcd-endpoints", 14 },
		{ "--etcd-ca-cert-file", 15 },
		{ "--etcd-cert-file", 16 },
		{ "--etcd-key-file", 17 },
		{ "--password-env-prefix", 18 },
	};
	const char **slots[] = { &o->node,
				 &o->output_dir,
				 &o->templates,
				 &o->bird,
				 &o->bird_socket,
				 &o->secrets_dir,
				 &o->health_host,
				 &port,
				 &settle,
				 &max_delay,
				 &resync,
				 log_level,
				 log_format,
				 &cfg->type,
				 &endpoints,
				 &cfg->etcd_ca_file,
				 &cfg->etcd_cert_file,
				 &cfg->etcd_key_file,
				 &o->password_env_prefix };
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (streq(arg, "--help") || streq(arg, "-h")) {
			usage(stdout);
			return 1;
		}
		if (streq(arg, "--version")) {
			printf("brindle-confd version %s\n", BRINDLE_VERSION);
			return 1;
		}
		if (streq(arg, "--once")) {
			o->once = true;
			continue;
		}
		size_t k;
		const char *val = NULL;
		for (k = 0; k < ARRAY_SIZE(flags); k++) {
			size_t n = strlen(flags[k].flag);
			if (strncmp(arg, flags[k].flag, n) == 0 && arg[n] == '=') {
				val = arg + n + 1;
				break;
			}
			if (streq(arg, flags[k].flag)) {
				if (i + 1 >= argc) {
					fprintf(stderr, "brindle-confd: %s needs a value\n", arg);
					return -1;
				}
				val = argv[++i];
				break;
			}
		}
		if (k == ARRAY_SIZE(flags)) {
			fprintf(stderr, "brindle-confd: unknown flag %s (see --help)\n", arg);
			return -1;
		}
		*slots[flags[k].off] = val;
	}
	if (!o->node) {
		if (gethostname(host, sizeof(host) - 1) < 0 || !*host) {
			fprintf(stderr, "brindle-confd: no node name: set NODENAME or --node\n");
			return -1;
		}
		o->node = host;
	}
	char *end;
	long p = strtol(port, &end, 10);
	if (*end || p < 0 || p > 65535) {
		fprintf(stderr, "brindle-confd: --health-port: \"%s\" is not a port\n", port);
		return -1;
	}
	o->health_port = (int)p;
	if (parse_duration_opt("--settle", settle, &o->settle_ms) < 0 ||
	    parse_duration_opt("--max-delay", max_delay, &o->max_delay_ms) < 0 ||
	    parse_duration_opt("--resync-interval", resync, &o->resync_ms) < 0)
		return -1;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = 0;
	if (endpoints && ds_config_set_endpoints(cfg, st, endpoints, &err) < 0)
		r = -1;
	if (r == 0 && ds_config_from_env(cfg, st, &err) < 0)
		r = -1;
	if (r < 0)
		fprintf(stderr, "brindle-confd: %s\n", sb_str(&err));
	sb_free(&err);
	return r;
}

/* --- main ------------------------------------------------------------------------------------- */

static void on_signal(struct loop *l, int signo, void *ctx)
{
	struct confd *c = ctx;
	if (signo == SIGHUP) {
		struct render_templates *t;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (templates_load(c->o.templates, &t, &err) < 0) {
			log_error("SIGHUP: keeping the current templates: %s", sb_str(&err));
		} else {
			render_templates_free(c->templates);
			c->templates = t;
			log_info("SIGHUP: templates re-read from %s", c->o.templates);
			mark_dirty(c);
			c->last_event_ms = 0;
		}
		sb_free(&err);
		return;
	}
	log_info("%s: stopping", strsignal(signo));
	loop_stop(l, 0);
}

static int run(struct confd *c, const struct ds_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int ret = 1;
	if (templates_load(c->o.templates, &c->templates, &err) < 0) {
		log_error("%s: give the template directory with --templates DIR (or "
			  "BRINDLE_CONFD_TEMPLATES): the source tree's bgp-templates, or "
			  "<prefix>/" BRINDLE_INSTALL_TEMPLATES " after cmake --install",
			  sb_str(&err));
		goto out;
	}
	struct stat st;
	if (stat(c->o.output_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		log_error("output directory %s does not exist", c->o.output_dir);
		goto out;
	}
	c->out = output_new(c->o.output_dir, c->o.bird, 10000);
	c->secrets.dir = c->o.secrets_dir;
	c->secrets.env_prefix = c->o.password_env_prefix;
	c->loop = loop_new();
	if (!c->loop) {
		log_error("cannot create the event loop: %s", strerror(errno));
		goto out;
	}
	setup_metrics(c);
	c->settle = loop_timer_new(c->loop, on_settle, c);
	c->retry = loop_timer_new(c->loop, on_retry, c);
	c->resync = loop_timer_new(c->loop, on_resync, c);
	c->bird_retry = loop_timer_new(c->loop, on_bird_retry, c);
	if (!c->settle || !c->retry || !c->resync || !c->bird_retry ||
	    loop_add_signal(c->loop, SIGTERM, on_signal, c) < 0 ||
	    loop_add_signal(c->loop, SIGINT, on_signal, c) < 0 ||
	    loop_add_signal(c->loop, SIGHUP, on_signal, c) < 0) {
		log_error("cannot set up timers and signals: %s", strerror(errno));
		goto out;
	}
	if (c->o.resync_ms > 0)
		loop_timer_arm(c->resync, (uint64_t)c->o.resync_ms, (uint64_t)c->o.resync_ms);
	if (c->o.health_port > 0 &&
	    httpd_start(c->loop, c->o.health_host, (uint16_t)c->o.health_port, on_http, c,
			&c->httpd, &err) < 0) {
		log_error("health and metrics on %s:%d: %s", c->o.health_host, c->o.health_port,
			  sb_str(&err));
		goto out;
	}
	if (ds_open(cfg, &c->ds, &err) < 0) {
		log_error("datastore: %s", sb_str(&err));
		goto out;
	}
	c->node_status = node_status_new(c->loop, c->ds, c->o.node, c->o.bird_socket);
	const struct ds_watch_spec specs[] = {
		{ KIND_NODE, NULL },
		{ KIND_BGPCONFIGURATION, NULL },
		{ KIND_BGPPEER, NULL },
		{ KIND_IPPOOL, NULL },
		{ KIND_BLOCKAFFINITY, c->o.node },
		{ KIND_SERVICE, NULL },
		{ KIND_ENDPOINTSLICE, NULL },
		{ KIND_BGPFILTER, NULL },
		{ KIND_CALICONODESTATUS, NULL },
	};
	ds_outage_init(&c->outage, cfg->outage_grace_ms);
	if (ds_syncer_start(c->ds, c->loop, specs, ARRAY_SIZE(specs), &syncer_ops, c, &c->syncer) <
	    0) {
		log_error("datastore: %s", ds_last_error(c->ds));
		goto out;
	}
	loop_set_before_sleep(c->loop, before_sleep, c);
	if (!c->o.once)
		bird_watch(c);
	log_info("brindle-confd %s for node %s: templates %s, output %s, BIRD socket %s",
		 BRINDLE_VERSION, c->o.node, c->o.templates, c->o.output_dir, c->o.bird_socket);
	ret = loop_run(c->loop);
	if (c->o.once)
		ret = c->exit_code;
out:
	ds_syncer_stop(c->syncer);
	node_status_free(c->node_status);
	ds_close(c->ds);
	httpd_stop(c->httpd);
	loop_timer_free(c->settle);
	loop_timer_free(c->retry);
	loop_timer_free(c->resync);
	if (c->bird)
		loop_del_fd(c->loop, bird_ctl_fd(c->bird));
	bird_ctl_close(c->bird);
	loop_timer_free(c->bird_retry);
	free(c->bird_down);
	loop_free(c->loop);
	output_free(c->out);
	render_templates_free(c->templates);
	if (c->have_last)
		render_output_clear(&c->last);
	store_clear(&c->store);
	hmap_clear(&c->problems);
	metrics_free(c->m);
	free(c->reason);
	free(c->last_logged);
	sb_free(&err);
	return ret;
}

int main(int argc, char **argv)
{
	struct confd c = { .state = ST_WAITING };
	struct ds_config cfg = { 0 };
	struct ds_config_storage st = { 0 };
	const char *level, *format;
	int r = parse_args(argc, argv, &c.o, &cfg, &st, &level, &format);
	if (r != 0) {
		ds_config_free_storage(&st);
		return r > 0 ? 0 : 2;
	}
	int lv = log_parse_level(level);
	if (lv < 0) {
		fprintf(stderr, "brindle-confd: unknown log level \"%s\"\n", level);
		ds_config_free_storage(&st);
		return 2;
	}
	log_init("confd", (enum log_level)lv, streq(format, "json") ? LOG_JSON : LOG_TEXT, 2);
	signal(SIGPIPE, SIG_IGN);
	r = run(&c, &cfg);
	ds_config_free_storage(&st);
	return r;
}
