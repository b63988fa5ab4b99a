/*
 * CalicoNodeStatus: the status a user asks for, of this node's BIRD, written
 * back into the resource every spec.updatePeriodSeconds (0: never), as
 * calico-node does. The classes asked for decide what is filled: Agent
 * (`show status`: version, router ID, boot and reconfiguration times), BGP
 * (`show protocols`: each session's peer, type and state, and the counts)
 * and Routes (`show route`: destination, gateway, interface, and whom it was
 * learned from).
 *
 * node_status_fill is pure (BIRD's replies in, the status out; unit-tested);
 * the rest asks BIRD and writes to the datastore from confd's loop.
 */
#include "node_status.h"

#include <brindle/core/arena.h>
#include <brindle/core/bgp_names.h>
#include <brindle/core/hmap.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>
#include <brindle/sys/bird_ctl.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- from BIRD's replies (pure) ------------------------------------------------------------ */

static bool has_class(const struct br_cns_spec *s, const char *cls)
{
	for (size_t i = 0; i < s->n_classes; i++)
		if (streq(s->classes[i], cls))
			return true;
	return false;
}

/* A session Brindle named ("Mesh_192_168_100_2", ...): the peer's address and Calico's type. */
static bool session_peer(struct arena *a, const char *name, const char **ip, const char **type)
{
	enum bgp_peer_type t;
	struct br_ip addr;
	uint16_t port;
	if (!bgp_session_name_parse(name, &t, &addr, &port))
		return false;
	char buf[IP_STRLEN];
	*ip = arena_strdup(a, ip_str(&addr, buf));
	*type = t == BGP_PEER_MESH ? "NodeMesh" : t == BGP_PEER_GLOBAL ? "GlobalPeer" : "NodePeer";
	return true;
}

/* BIRD's BGP state (the info column's first word) as Calico names it. */
static const char *session_state(const struct bird_protocol *p)
{
	static const char *const known[] = { "Idle",	    "Connect",	   "Active", "OpenSent",
					     "OpenConfirm", "Established", "Close" };
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		if (strncmp(p->info, known[i], strlen(known[i])) == 0)
			return known[i];
	return "Idle";
}

static void fill_agent(struct arena *a, const struct bird_reply *st, struct br_cns_daemon *d)
{
	d->state = st && bird_reply_ok(st) ? "Ready" : "NotReady";
	for (size_t i = 0; st && i < st->n; i++) {
		const char *t = st->lines[i].text;
		while (*t == ' ' || *t == '\t')
			t++;
		if (strncmp(t, "BIRD ", 5) == 0 && !d->version)
			d->version = arena_strdup(a, t + 5);
		else if (strncmp(t, "Router ID is ", 13) == 0)
			d->router_id = arena_strdup(a, t + 13);
		else if (strncmp(t, "Last reboot on ", 15) == 0)
			d->last_boot_time = arena_strdup(a, t + 15);
		else if (strncmp(t, "Last reconfiguration on ", 24) == 0)
			d->last_reconfiguration_time = arena_strdup(a, t + 24);
	}
}

static void fill_bgp(struct arena *a, const struct bird_protocol *rows, size_t n,
		     struct br_cns_bgp *b)
{
	b->peers_v4 = arena_new_array(a, struct br_cns_peer, n + 1);
	b->peers_v6 = arena_new_array(a, struct br_cns_peer, n + 1);
	for (size_t i = 0; i < n; i++) {
		if (!streq(rows[i].proto, "BGP"))
			continue;
		const char *ip, *type;
		if (!session_peer(a, rows[i].name, &ip, &type))
			continue;
		struct br_cns_peer p = { .peer_ip = ip,
					 .type = type,
					 .state = session_state(&rows[i]),
					 .since = arena_strdup(a, rows[i].since) };
		bool v6 = strchr(ip, ':') != NULL;
		bool up = streq(p.state, "Established");
		if (v6) {
			b->peers_v6[b->n_peers_v6++] = p;
			*(up ? &b->established_v6 : &b->not_established_v6) += 1;
		} else {
			b->peers_v4[b->n_peers_v4++] = p;
			*(up ? &b->established_v4 : &b->not_established_v4) += 1;
		}
	}
}

/* Whom a route came from, by the protocol that gave it (Brindle's names). */
static void learned_from(struct arena *a, const char *proto, struct br_cns_learned *l)
{
	const char *ip, *type;
	if (session_peer(a, proto, &ip, &type)) {
		l->source_type = streq(type, "NodeMesh") ? "NodeMesh" : "BGPPeer";
		l->peer_ip = ip;
	} else if (strncmp(proto, "brindle_kernel", 14) == 0) {
		l->source_type = "Kernel";
	} else if (strncmp(proto, "brindle_direct", 14) == 0) {
		l->source_type = "Direct";
	} else {
		l->source_type = "Static";
	}
}

/*
 * `show route`: a route's first line is "<prefix> <type> [<proto> <since>] <*?> (<pref>) ...",
 * its next lines "\tvia <gateway> on <iface>" or "\tdev <iface>".
 */
static void fill_routes(struct arena *a, const struct bird_reply *r, struct br_cns_routes *out)
{
	size_t cap = r ? r->n + 1 : 1;
	out->routes_v4 = arena_new_array(a, struct br_cns_route, cap);
	out->routes_v6 = arena_new_array(a, struct br_cns_route, cap);
	struct br_cns_route *cur = NULL;
	for (size_t i = 0; r && i < r->n; i++) {
		const char *t = r->lines[i].text;
		char dest[64], proto[80];
		struct br_cidr c;
		if (t[0] != ' ' && t[0] != '\t' && sscanf(t, "%63s", dest) == 1 &&
		    cidr_parse(dest, false, &c) == 0) {
			const char *br = strchr(t, '[');
			proto[0] = '\0';
			if (br)
				sscanf(br + 1, "%79s", proto);
			bool v6 = c.ip.family != AF_INET;
			struct br_cns_route *v = v6 ? out->routes_v6 : out->routes_v4;
			size_t *n = v6 ? &out->n_routes_v6 : &out->n_routes_v4;
			cur = &v[(*n)++];
			*cur = (struct br_cns_route){ .type = strstr(t, "] * ") ? "FIB" : "RIB",
						      .destination = arena_strdup(a, dest) };
			learned_from(a, proto, &cur->learned_from);
			continue;
		}
		if (!cur)
			continue;
		char gw[64], ifname[32];
		while (*t == ' ' || *t == '\t')
			t++;
		if (sscanf(t, "via %63s on %31s", gw, ifname) == 2) {
			cur->gateway = arena_strdup(a, gw);
			cur->iface = arena_strdup(a, ifname);
		} else if (sscanf(t, "dev %31s", ifname) == 1) {
			cur->iface = arena_strdup(a, ifname);
		}
	}
}

void node_status_fill(struct arena *a, const struct br_cns_spec *spec,
		      const struct bird_reply *show_status, const struct bird_reply *protocols,
		      const struct bird_reply *routes, const char *now, struct br_cns_status *out)
{
	memset(out, 0, sizeof(*out));
	out->last_updated = arena_strdup(a, now);
	if (has_class(spec, "Agent"))
		fill_agent(a, show_status, &out->agent.bird_v4);
	if (has_class(spec, "BGP")) {
		struct bird_protocol *rows = NULL;
		size_t n = 0;
		if (protocols && bird_protocols_parse(protocols, a, &rows, &n) < 0)
			n = 0;
		fill_bgp(a, rows, n, &out->bgp);
	}
	if (has_class(spec, "Routes"))
		fill_routes(a, routes, &out->routes);
}

/* --- asking BIRD and writing ---------------------------------------------------------------- */

struct ns_entry {
	uint64_t next_ms;
};

struct node_status {
	struct loop *loop;
	struct ds *ds;
	const char *node, *bird_socket;
	struct loop_timer *tick;
	struct hmap due; /* resource name → struct ns_entry (this node's resources) */
};

static int ask(struct bird_ctl *b, const char *cmd, struct arena *a, struct bird_reply **out)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct bird_reply *r = arena_alloc(a, sizeof(*r));
	int ret = b ? bird_ctl_command(b, cmd, a, r, &err) : -ENOTCONN;
	sb_free(&err);
	*out = ret == 0 ? r : NULL;
	return ret;
}

/*
 * Read, fill, write (compare-and-swap on its revision). 0 when written: the
 * update that write causes schedules the next one.
 */
static int write_one(struct node_status *s, const char *name)
{
	struct br_object *o = NULL;
	int r = ds_get(s->ds, model_kind(KIND_CALICONODESTATUS), NULL, name, &o);
	if (r < 0)
		return r;
	struct br_caliconodestatus *cns = (struct br_caliconodestatus *)o;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct bird_ctl *b = NULL;
	if (bird_ctl_open(s->bird_socket, 2000, &b, &err) < 0)
		b = NULL;
	struct bird_reply *st = NULL, *protos = NULL, *routes = NULL;
	if (has_class(&cns->spec, "Agent"))
		(void)ask(b, "show status", o->arena, &st);
	if (has_class(&cns->spec, "BGP"))
		(void)ask(b, "show protocols", o->arena, &protos);
	if (has_class(&cns->spec, "Routes"))
		(void)ask(b, "show route", o->arena, &routes);
	bird_ctl_close(b);
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	node_status_fill(o->arena, &cns->spec, st, protos, routes, now, &cns->status);
	r = ds_update(s->ds, o);
	if (r < 0 && r != -ECANCELED)
		log_warn("CalicoNodeStatus %s: cannot write its status: %s", name,
			 ds_last_error(s->ds));
	sb_free(&err);
	model_free(o);
	return r;
}

static void on_tick(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	struct node_status *s = ctx;
	uint64_t now = now_ms();
	/* The names first: a write's own update may come back while it is made (and change
	 * the map). */
	char **names = xcalloc(s->due.n + 1, sizeof(*names));
	size_t n = 0;
	for (struct hmap_iter it = hmap_iter(&s->due); hmap_next(&it);) {
		struct ns_entry *e = it.value;
		if (e->next_ms && now >= e->next_ms) {
			e->next_ms = 0; /* the update the write causes sets the next time */
			names[n++] = xstrdup(it.key);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (write_one(s, names[i]) < 0) {
			/* not written: again in a few seconds (a lost race brings an update) */
			struct ns_entry *e = hmap_get(&s->due, names[i]);
			if (e && !e->next_ms)
				e->next_ms = now + 5000;
		}
		free(names[i]);
	}
	free(names);
}

struct node_status *node_status_new(struct loop *l, struct ds *d, const char *node,
				    const char *bird_socket)
{
	struct node_status *s = xcalloc(1, sizeof(*s));
	s->loop = l;
	s->ds = d;
	s->node = node;
	s->bird_socket = bird_socket;
	s->tick = loop_timer_new(l, on_tick, s);
	loop_timer_arm(s->tick, 1000, 1000);
	return s;
}

void node_status_update(struct node_status *s, const struct ds_update *u)
{
	struct ns_entry *e = hmap_get(&s->due, u->name);
	const struct br_caliconodestatus *cns = (const void *)u->obj;
	if (!cns || u->error || !cns->spec.node || !streq(cns->spec.node, s->node)) {
		free(hmap_del(&s->due, u->name));
		return;
	}
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		hmap_put(&s->due, u->name, e);
	}
	int64_t period =
		cns->spec.update_period_seconds.set ? cns->spec.update_period_seconds.v : 10;
	/* A new resource (no status yet) is filled at once; then every period; 0: never again. */
	if (!cns->status.last_updated)
		e->next_ms = now_ms();
	else
		e->next_ms = period > 0 ? now_ms() + (uint64_t)period * 1000 : 0;
}

void node_status_free(struct node_status *s)
{
	if (!s)
		return;
	loop_timer_free(s->tick);
	for (struct hmap_iter it = hmap_iter(&s->due); hmap_next(&it);)
		free(it.value);
	hmap_clear(&s->due);
	free(s);
}
