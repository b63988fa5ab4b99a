/*
 * brindle-controllers: the cluster-wide housekeeping of the Kubernetes
 * datastore, one replica (docs/install.md). Today: IPAM garbage collection,
 * as Calico's kube-controllers does it. Every interval it reads the IPAM
 * blocks, the Nodes and the Pods, asks lib/core/ipam_gc.c which
 * allocations lost their owner, and releases each one that has stayed
 * lost for the grace period (at once when its node is gone), by address
 * and only while the same handle still holds it. Then the empty blocks and
 * the affinities of Nodes that no longer exist are released.
 *
 *   brindle-controllers [--once]
 *
 * Each release is logged, counted and written as a Kubernetes Event (reason
 * IPAMAddressReleased) about its pod or node.
 *
 * Environment: the Kubernetes datastore as every Brindle program
 * (BRINDLE_DATASTORE_TYPE=kubernetes, KUBECONFIG or in-cluster),
 * BRINDLE_IPAM_GC_INTERVAL (seconds between scans, default 300),
 * BRINDLE_IPAM_LEAK_GRACE (seconds an allocation stays lost before it is
 * released, default 900), BRINDLE_CONTROLLERS_PORT (health and metrics,
 * default 9094; 0 turns them off), BRINDLE_LOG_LEVEL. A scan blocks the
 * health server while it runs (it is seconds at most).
 */
#include <brindle/core/arena.h>
#include <brindle/core/hmap.h>
#include <brindle/core/labels.h>
#include <brindle/core/ipam_gc.h>
#include <brindle/core/json.h>
#include <brindle/core/kube_codec.h>
#include <brindle/core/metrics.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/httpd.h>
#include <brindle/sys/ipam.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/log.h>
#include <brindle/sys/loop.h>
#include <brindle/version.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct controllers {
	struct ds *ds;
	struct kube_client *kc;
	long grace_s, interval_s;
	bool grace_env, interval_env; /* set by the environment, which wins over the resource */
	bool gc_off;		      /* KubeControllersConfiguration without controllers.node */
	struct loop_timer *timer;
	char kcc_note[256];	/* what the KubeControllersConfiguration said last (logged once) */
	struct hmap first_seen; /* "ip handle" → boxed int64_t: when the leak was first seen */
	struct metrics *m;
	struct metric *m_released, *m_leaks, *m_blocks, *m_scans;
	bool scanned_ok;
	char last_error[512];
};

/* --- the pods, as the collector needs them ----------------------------------------------- */

struct pods {
	struct arena *a;
	struct gc_pod *v;
	size_t n, cap;
};

/* The pod's addresses: Calico's annotation, else its status (none: not yet). */
static void pod_ips(struct pods *ps, const struct jv *pod, struct gc_pod *out)
{
	const struct jv *ann = jv_get(jv_get(pod, "metadata"), "annotations");
	const char *list = jv_as_string(jv_get(ann, "cni.projectcalico.org/podIPs"));
	struct br_ip *ips = arena_new_array(ps->a, struct br_ip, 8);
	size_t n = 0;
	if (list && *list) {
		char *copy = arena_strdup(ps->a, list), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t && n < 8;
		     t = strtok_r(NULL, ",", &save)) {
			struct br_cidr c;
			if (cidr_parse(t, true, &c) == 0)
				ips[n++] = c.ip;
		}
	} else {
		const struct jv *st = jv_get(jv_get(pod, "status"), "podIPs");
		for (size_t i = 0; st && st->type == JV_ARRAY && i < st->arr.n && n < 8; i++) {
			const char *ip = jv_as_string(jv_get(st->arr.items[i], "ip"));
			if (ip && ip_parse(ip, &ips[n]) == 0)
				n++;
		}
	}
	out->ips = ips;
	out->n_ips = n;
}

static int pod_item(void *ctx, const struct jv *pod)
{
	struct pods *ps = ctx;
	const struct jv *md = jv_get(pod, "metadata"), *spec = jv_get(pod, "spec");
	const char *phase = jv_as_string(jv_get(jv_get(pod, "status"), "phase"));
	/* a finished pod has no network any more: its addresses are not its own */
	bool host = false;
	if (jv_as_bool(jv_get(spec, "hostNetwork"), &host) && host)
		return 0;
	if (phase && (streq(phase, "Succeeded") || streq(phase, "Failed")))
		return 0;
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		struct gc_pod *w = arena_new_array(ps->a, struct gc_pod, ps->cap);
		if (ps->n)
			memcpy(w, ps->v, ps->n * sizeof(*w));
		ps->v = w;
	}
	struct gc_pod *p = &ps->v[ps->n++];
	p->ns = arena_strdup(ps->a, jv_as_string(jv_get(md, "namespace")) ?: "");
	p->name = arena_strdup(ps->a, jv_as_string(jv_get(md, "name")) ?: "");
	p->node = arena_strdup(ps->a, jv_as_string(jv_get(spec, "nodeName")) ?: "");
	pod_ips(ps, pod, p);
	return 0;
}

/*
 * A Kubernetes Event for a release, about the pod (in its namespace) or the
 * node (in "default") that lost the address: `kubectl get events` shows what
 * the collector did. A failure to write it is logged, never fatal.
 */
static void release_event(struct controllers *c, const struct gc_leak *l, const char *ip)
{
	bool pod = l->why != GC_TUNNEL_NODE_GONE;
	const char *slash = pod ? strchr(l->owner, '/') : NULL;
	struct strbuf ns = STRBUF_INIT, body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&ns);
	sb_init(&body);
	sb_init(&path);
	if (slash)
		sb_add(&ns, l->owner, (size_t)(slash - l->owner));
	else
		sb_adds(&ns, "default");
	char now[32];
	time_t t = time(NULL);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	sb_adds(&body, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"generateName\":"
		       "\"brindle-ipam-gc.\",\"namespace\":");
	json_write_string(&body, sb_str(&ns));
	sb_addf(&body, "},\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"%s\",",
		pod ? "Pod" : "Node");
	if (slash) {
		sb_adds(&body, "\"namespace\":");
		json_write_string(&body, sb_str(&ns));
		sb_adds(&body, ",");
	}
	sb_adds(&body, "\"name\":");
	json_write_string(&body, slash ? slash + 1 : l->owner);
	sb_adds(&body, "},\"reason\":\"IPAMAddressReleased\",\"type\":\"Normal\",\"message\":");
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	sb_addf(&msg, "released %s (handle %s): %s", ip, l->handle, ipam_gc_reason(l->why));
	json_write_string(&body, sb_str(&msg));
	sb_addf(&body,
		",\"source\":{\"component\":\"brindle-controllers\"},\"reportingComponent\":"
		"\"brindle-controllers\",\"firstTimestamp\":\"%s\",\"lastTimestamp\":\"%s\","
		"\"count\":1}",
		now, now);
	kube_path(&path, "v1", sb_str(&ns), "events", NULL);
	if (kube_request(c->kc, "POST", sb_str(&path), NULL, &body, NULL) < 0)
		log_warn("an event for %s: %s", ip, kube_last_error(c->kc));
	sb_free(&msg);
	sb_free(&ns);
	sb_free(&body);
	sb_free(&path);
}

/* --- one scan ------------------------------------------------------------------------------ */

static void forget_all(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);)
		free(it.value);
	hmap_clear(m);
}

/*
 * Calico's KubeControllersConfiguration "default": controllers.node's
 * leakGracePeriod and reconcilerPeriod are the grace period and the scan
 * interval (unless the environment sets them); without controllers.node the
 * node controller, and with it IPAM garbage collection, is off, as in Calico.
 * No resource: the defaults. The settings in force go back into its
 * status.runningConfig (and the variables that set them into
 * status.environmentVars), as kube-controllers does.
 */
static void kcc_status(struct controllers *c, struct br_kubecontrollersconfig *k)
{
	struct arena *a = k->o.arena;
	const struct br_kcc_node *n = k->spec.controllers.node;
	struct br_kcc_status st = { .running_config = k->spec };
	if (n) {
		struct br_kcc_node *run = arena_alloc(a, sizeof(*run));
		*run = *n;
		run->leak_grace_period = (struct br_duration){ arena_printf(a, "%lds", c->grace_s),
							       (int64_t)c->grace_s * 1000 };
		run->reconciler_period =
			(struct br_duration){ arena_printf(a, "%lds", c->interval_s),
					      (int64_t)c->interval_s * 1000 };
		st.running_config.controllers.node = run;
	}
	if (c->grace_env)
		labels_set(a, &st.environment_vars, "BRINDLE_IPAM_LEAK_GRACE",
			   arena_printf(a, "%ld", c->grace_s));
	if (c->interval_env)
		labels_set(a, &st.environment_vars, "BRINDLE_IPAM_GC_INTERVAL",
			   arena_printf(a, "%ld", c->interval_s));
	struct br_object *before = model_clone(&k->o);
	k->status = st;
	if (!model_equal(before, &k->o) && ds_update(c->ds, &k->o) < 0)
		log_warn("KubeControllersConfiguration default: cannot write its status: %s",
			 ds_last_error(c->ds));
	model_free(before);
}

static void read_kcc(struct controllers *c)
{
	struct br_object *o = NULL;
	int r = ds_get(c->ds, model_kind(KIND_KUBECONTROLLERSCONFIGURATION), NULL, "default", &o);
	char note[256];
	if (r == -ENOENT) {
		c->gc_off = false;
		snprintf(note, sizeof(note), "no KubeControllersConfiguration: the defaults");
	} else if (r < 0) {
		snprintf(note, sizeof(note), "KubeControllersConfiguration default: %.200s",
			 ds_last_error(c->ds));
	} else {
		struct br_kubecontrollersconfig *k = (struct br_kubecontrollersconfig *)o;
		const struct br_kcc_node *n = k->spec.controllers.node;
		c->gc_off = n == NULL;
		if (n && !c->grace_env && n->leak_grace_period.text)
			c->grace_s = (long)(n->leak_grace_period.ms / 1000);
		if (n && !c->interval_env && n->reconciler_period.text) {
			long iv = (long)(n->reconciler_period.ms / 1000);
			iv = iv < 1 ? 1 : iv;
			if (iv != c->interval_s && c->timer)
				loop_timer_arm(c->timer, (uint64_t)iv * 1000, (uint64_t)iv * 1000);
			c->interval_s = iv;
		}
		if (c->gc_off)
			snprintf(note, sizeof(note),
				 "KubeControllersConfiguration default has no controllers.node: "
				 "IPAM garbage collection is off");
		else
			snprintf(note, sizeof(note),
				 "KubeControllersConfiguration default: IPAM GC every %ld s, grace "
				 "%ld s",
				 c->interval_s, c->grace_s);
		kcc_status(c, k);
	}
	if (!streq(note, c->kcc_note)) {
		log_info("%s", note);
		snprintf(c->kcc_note, sizeof(c->kcc_note), "%s", note);
	}
	model_free(o);
}

static int scan(struct controllers *c)
{
	read_kcc(c);
	if (c->gc_off) {
		c->scanned_ok = true;
		c->last_error[0] = '\0';
		return 0;
	}
	struct arena *a = arena_new();
	struct br_object **blocks = NULL, **nodes = NULL, **affs = NULL;
	size_t nb = 0, nn = 0, na = 0;
	struct pods ps = { .a = a };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r;
	if ((r = ds_list(c->ds, model_kind(KIND_IPAMBLOCK), NULL, &blocks, &nb)) < 0 ||
	    (r = ds_list(c->ds, model_kind(KIND_NODE), NULL, &nodes, &nn)) < 0 ||
	    (r = ds_list(c->ds, model_kind(KIND_BLOCKAFFINITY), NULL, &affs, &na)) < 0) {
		sb_addf(&err, "%s", ds_last_error(c->ds));
		goto out;
	}
	/* Pods after blocks: an allocation made since the blocks were read is not seen. */
	if ((r = kube_list(c->kc, "/api/v1/pods", 500, pod_item, NULL, &ps, NULL)) < 0) {
		sb_addf(&err, "listing pods: %s", kube_last_error(c->kc));
		goto out;
	}
	const char **names = arena_new_array(a, const char *, nn + 1);
	for (size_t i = 0; i < nn; i++)
		names[i] = nodes[i]->meta.name;
	struct gc_input in = { (struct br_ipamblock *const *)blocks, nb, ps.v, ps.n, names, nn };
	struct gc_leak *leaks;
	size_t nl;
	ipam_gc_scan(a, &in, &leaks, &nl);
	metric_set(c->m_leaks, NULL, (double)nl);
	int64_t now = time(NULL);
	struct hmap seen = HMAP_INIT;
	for (size_t i = 0; i < nl; i++) {
		const struct gc_leak *l = &leaks[i];
		char ip[IP_STRLEN];
		const char *key = arena_printf(a, "%s %s", ip_str(&l->ip, ip), l->handle);
		int64_t *first = hmap_get(&c->first_seen, key);
		if (!first) {
			first = xcalloc(1, sizeof(*first));
			*first = now;
			log_info("%s (handle %s, %s): %s%s", ip, l->handle, l->owner,
				 ipam_gc_reason(l->why),
				 l->node_gone ? "; its node is gone: released now"
					      : "; released if it stays so past the grace period");
		} else {
			hmap_del(&c->first_seen, key);
		}
		hmap_put(&seen, key, first);
		if (!l->node_gone && now - *first < c->grace_s)
			continue;
		sb_reset(&err);
		int rr = ipam_release_ip(c->ds, &l->ip, l->handle, now, NULL, &err);
		if (rr == 0) {
			log_info("released %s (handle %s, %s: %s)", ip, l->handle, l->owner,
				 ipam_gc_reason(l->why));
			metric_add(c->m_released, ipam_gc_reason(l->why), 1);
			release_event(c, l, ip);
			free(hmap_del(&seen, key));
		} else if (rr == -ENOENT || rr == -EBUSY) {
			free(hmap_del(&seen, key)); /* freed or taken by someone else meanwhile */
		} else {
			log_warn("releasing %s (handle %s): %s", ip, l->handle, sb_str(&err));
		}
	}
	/* what is no longer lost is forgotten */
	forget_all(&c->first_seen);
	c->first_seen = seen;
	/* the blocks and affinities of Nodes that are gone (empty ones: at once) */
	struct hmap gone = HMAP_INIT;
	for (size_t i = 0; i < na; i++) {
		const char *node = ((struct br_blockaffinity *)affs[i])->spec.node;
		bool exists = false;
		for (size_t j = 0; node && j < nn && !exists; j++)
			exists = streq(names[j], node);
		if (node && !exists && !hmap_has(&gone, node)) {
			hmap_put(&gone, node, (void *)node);
			struct ipam_sweep s = { .node = node, .now = now, .grace_s = 0 };
			struct ipam_swept done = { 0 };
			sb_reset(&err);
			if (ipam_release_empty_blocks(c->ds, &s, &done, &err) < 0) {
				log_warn("releasing the blocks of deleted node %s: %s", node,
					 sb_str(&err));
			} else if (done.empty + done.claims) {
				log_info(
					"deleted node %s: released %zu empty blocks and %zu claims",
					node, done.empty, done.claims);
				metric_add(c->m_blocks, NULL, (double)(done.empty + done.claims));
			}
		}
	}
	hmap_clear(&gone);
	sb_reset(&err);
	r = 0;
out:
	if (r < 0) {
		snprintf(c->last_error, sizeof(c->last_error), "%s", sb_str(&err));
		log_warn("scan failed: %s", c->last_error);
	} else {
		c->last_error[0] = '\0';
		metric_add(c->m_scans, NULL, 1);
	}
	c->scanned_ok = r == 0;
	model_free_all(blocks, nb);
	model_free_all(nodes, nn);
	model_free_all(affs, na);
	sb_free(&err);
	arena_free(a);
	return r;
}

/* --- the daemon -------------------------------------------------------------------------- */

static void on_http(void *ctx, const char *path, struct httpd_response *resp)
{
	struct controllers *c = ctx;
	char why[600];
	snprintf(why, sizeof(why), "ipam gc: %s\n",
		 c->last_error[0] ? c->last_error : "no scan has completed yet");
	httpd_health_answer(path, c->scanned_ok, why, c->m, resp);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	(void)scan(ctx);
}

static void on_signal(struct loop *l, int signo, void *ctx)
{
	(void)signo;
	(void)ctx;
	loop_stop(l, 0);
}

static long env_seconds(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long s = v && *v ? strtol(v, &end, 10) : def;
	if (v && *v && (*end || s < 0 || s > 86400 * 30)) {
		fprintf(stderr, "brindle-controllers: %s=%s: not a number of seconds\n", name, v);
		exit(2);
	}
	return s;
}

int main(int argc, char **argv)
{
	bool once = argc == 2 && streq(argv[1], "--once");
	if (argc > 1 && !once) {
		if (streq(argv[1], "--version")) {
			printf("brindle-controllers %s\n", BRINDLE_VERSION);
			return 0;
		}
		fprintf(stderr, "usage: brindle-controllers [--once | --version]\n");
		return 2;
	}
	const char *lv = getenv("BRINDLE_LOG_LEVEL");
	int level = log_parse_level(lv && *lv ? lv : "info");
	log_init("controllers", level < 0 ? LOG_INFO : (enum log_level)level, LOG_TEXT, 2);
	struct controllers c = { .grace_s = env_seconds("BRINDLE_IPAM_LEAK_GRACE", 900),
				 .interval_s = env_seconds("BRINDLE_IPAM_GC_INTERVAL", 300),
				 .first_seen = HMAP_INIT };
	const char *ge = getenv("BRINDLE_IPAM_LEAK_GRACE"),
		   *ie = getenv("BRINDLE_IPAM_GC_INTERVAL");
	c.grace_env = ge && *ge;
	c.interval_env = ie && *ie;
	long interval = c.interval_s;
	long port = env_seconds("BRINDLE_CONTROLLERS_PORT", 9094);
	struct ds_config cfg = { 0 };
	struct ds_config_storage st = { 0 };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = ds_config_from_env(&cfg, &st, &err);
	if (r == 0)
		r = ds_open(&cfg, &c.ds, &err);
	ds_config_free_storage(&st);
	if (r == 0 && !(c.kc = ds_kube_client(c.ds))) {
		sb_adds(&err, "brindle-controllers works on the Kubernetes datastore "
			      "(BRINDLE_DATASTORE_TYPE=kubernetes)");
		r = -EINVAL;
	}
	if (r < 0) {
		log_error("%s", sb_str(&err));
		sb_free(&err);
		ds_close(c.ds);
		return 1;
	}
	c.m = metrics_new();
	c.m_released = metrics_counter(c.m, "brindle_ipam_gc_released_total",
				       "Addresses released because their owner is gone", "reason");
	c.m_leaks = metrics_gauge(c.m, "brindle_ipam_gc_leaks",
				  "Allocations whose owner is gone, at the last scan", NULL);
	c.m_blocks = metrics_counter(c.m, "brindle_ipam_gc_node_blocks_released_total",
				     "Empty blocks and claims of deleted nodes released", NULL);
	c.m_scans = metrics_counter(c.m, "brindle_ipam_gc_scans_total", "Completed scans", NULL);
	log_info("brindle-controllers %s: IPAM GC every %ld s, grace %ld s", BRINDLE_VERSION,
		 interval, c.grace_s);
	if (once) {
		r = scan(&c);
	} else {
		struct loop *l = loop_new();
		struct httpd *h = NULL;
		if (port && httpd_start(l, "", (uint16_t)port, on_http, &c, &h, &err) < 0)
			log_error("health and metrics on port %ld: %s", port, sb_str(&err));
		struct loop_timer *t = loop_timer_new(l, on_timer, &c);
		c.timer = t;
		loop_timer_arm(t, 0, (uint64_t)(interval ? interval : 1) * 1000);
		if (loop_add_signal(l, SIGTERM, on_signal, &c) < 0 ||
		    loop_add_signal(l, SIGINT, on_signal, &c) < 0)
			log_warn("cannot handle SIGTERM/SIGINT");
		r = loop_run(l);
		loop_timer_free(t);
		httpd_stop(h);
		loop_free(l);
	}
	forget_all(&c.first_seen);
	metrics_free(c.m);
	ds_close(c.ds);
	sb_free(&err);
	return r < 0 ? 1 : 0;
}
