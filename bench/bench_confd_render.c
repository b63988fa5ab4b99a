/*
 * confd render time: BGP view + templates for one node, from datastore
 * state held in memory, for a 1,000-node mesh and for 5,000 nodes with
 * route reflectors (a client and a reflector). Each figure is the median of
 * several runs, printed next to the goal (50 ms for the 1,000-node mesh) and
 * next to a baseline measured in the same run: the time `bird -p -c` takes
 * to parse the configuration we rendered.
 *
 * Usage: bench_confd_render [TEMPLATE_DIR]   (default: ../bgp-templates
 * relative to the source tree, from BRINDLE_SOURCE_DIR or the build's).
 */
#include "bgp_view.h"
#include "output.h"
#include "render.h"

#include <brindle/core/arena.h>
#include <brindle/core/model.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "."
#endif

#define RUNS 15

struct world {
	struct br_node **nodes;
	size_t n_nodes;
	struct br_bgpconfig *config;
	struct br_bgppeer **peers;
	size_t n_peers;
	struct br_ippool *pool;
	struct br_blockaffinity **affs;
	size_t n_affs;
};

static struct br_node *node(size_t i, const char *cluster)
{
	char name[32];
	snprintf(name, sizeof(name), "node-%04zu", i);
	struct br_node *n = (struct br_node *)model_new(model_kind(KIND_NODE), NULL, name);
	struct arena *a = n->o.arena;
	n->spec.bgp = arena_alloc(a, sizeof(*n->spec.bgp));
	n->spec.bgp->ipv4_address =
		arena_printf(a, "10.100.%zu.%zu/16", (i + 1) / 250, (i + 1) % 250 + 1);
	if (cluster) {
		n->spec.bgp->route_reflector_cluster_id = cluster;
		labels_set(a, &n->o.meta.labels, "route-reflector", "true");
	}
	return n;
}

static struct world *world_new(size_t n, size_t reflectors)
{
	struct world *w = xcalloc(1, sizeof(*w));
	w->nodes = xcalloc(n, sizeof(*w->nodes));
	for (size_t i = 0; i < n; i++)
		w->nodes[w->n_nodes++] = node(i, i < reflectors ? "224.0.0.1" : NULL);
	w->config = (struct br_bgpconfig *)model_new(model_kind(KIND_BGPCONFIGURATION), NULL,
						     "default");
	w->config->spec.node_to_node_mesh_enabled = (struct opt_bool){ true, reflectors == 0 };
	w->peers = xcalloc(2, sizeof(*w->peers));
	struct br_bgppeer *tor =
		(struct br_bgppeer *)model_new(model_kind(KIND_BGPPEER), NULL, "tor");
	tor->spec.peer_ip = "10.100.255.254";
	tor->spec.as_number = (struct opt_asn){ true, 65000 };
	w->peers[w->n_peers++] = tor;
	if (reflectors) {
		struct br_bgppeer *rr = (struct br_bgppeer *)model_new(model_kind(KIND_BGPPEER),
								       NULL, "to-reflectors");
		rr->spec.node_selector = "all()";
		rr->spec.peer_selector = "route-reflector == 'true'";
		w->peers[w->n_peers++] = rr;
	}
	w->pool = (struct br_ippool *)model_new(model_kind(KIND_IPPOOL), NULL, "pods");
	w->pool->spec.cidr = "10.244.0.0/16";
	/* The syncer delivers only this node's affinities; a node has a few blocks. */
	w->affs = xcalloc(n * 2, sizeof(*w->affs));
	for (size_t i = 0; i < n; i++)
		for (size_t b = 0; b < 2; b++) {
			char nm[40];
			snprintf(nm, sizeof(nm), "10.244.%zu.%zu-26", i / 2,
				 (i % 2) * 128 + b * 64);
			struct br_blockaffinity *af = (struct br_blockaffinity *)model_new(
				model_kind(KIND_BLOCKAFFINITY), NULL, nm);
			af->spec.node = w->nodes[i]->o.meta.name;
			af->spec.cidr = arena_printf(af->o.arena, "10.244.%zu.%zu/26", i / 2,
						     (i % 2) * 128 + b * 64);
			af->spec.state = "confirmed";
			w->affs[w->n_affs++] = af;
		}
	return w;
}

static void world_free(struct world *w)
{
	for (size_t i = 0; i < w->n_nodes; i++)
		model_free(&w->nodes[i]->o);
	for (size_t i = 0; i < w->n_peers; i++)
		model_free(&w->peers[i]->o);
	for (size_t i = 0; i < w->n_affs; i++)
		model_free(&w->affs[i]->o);
	model_free(&w->config->o);
	model_free(&w->pool->o);
	free(w->nodes);
	free(w->peers);
	free(w->affs);
	free(w);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Median render time in ns; the last render is left in @out. */
static uint64_t time_render(const struct world *w, const char *node_name,
			    const struct render_templates *t, struct render_output *out,
			    size_t *sessions)
{
	const struct br_bgpconfig *cfg = w->config;
	const struct br_ippool *pool = w->pool;
	struct bgp_input in = {
		.node_name = node_name,
		.nodes = (const struct br_node *const *)w->nodes,
		.n_nodes = w->n_nodes,
		.configs = &cfg,
		.n_configs = 1,
		.peers = (const struct br_bgppeer *const *)w->peers,
		.n_peers = w->n_peers,
		.pools = &pool,
		.n_pools = 1,
	};
	/* The syncer delivers only this node's affinities. */
	const struct br_blockaffinity **mine = xcalloc(w->n_affs + 1, sizeof(*mine));
	for (size_t i = 0; i < w->n_affs; i++)
		if (streq(w->affs[i]->spec.node, node_name))
			mine[in.n_affinities++] = w->affs[i];
	in.affinities = mine;
	uint64_t times[RUNS];
	for (int r = 0; r < RUNS; r++) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		uint64_t t0 = now_ns();
		struct bgp_view *v;
		if (bgp_view_build(&in, &v, &err) < 0) {
			fprintf(stderr, "view: %s\n", sb_str(&err));
			exit(1);
		}
		struct arena *a = arena_new();
		if (r)
			render_output_clear(out);
		if (render_config(t, bgp_view_data(v, a), out, &err) < 0) {
			fprintf(stderr, "render: %s\n", sb_str(&err));
			exit(1);
		}
		times[r] = now_ns() - t0;
		*sessions = v->fam[BGP_V4].n_sessions;
		arena_free(a);
		bgp_view_free(v);
		sb_free(&err);
	}
	free(mine);
	qsort(times, RUNS, sizeof(times[0]), cmp_u64);
	return times[RUNS / 2];
}

/* Median time of `bird -p -c` on @out, in ns. */
static uint64_t time_bird_parse(const struct render_output *out)
{
	char dir[] = "/tmp/brindle-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	struct strbuf p = STRBUF_INIT;
	sb_init(&p);
	for (size_t i = 0; i < out->n; i++) {
		sb_reset(&p);
		sb_addf(&p, "%s/%s", dir, out->files[i].name);
		FILE *f = fopen(p.buf, "w");
		if (!f || fwrite(out->files[i].text.buf, 1, out->files[i].text.len, f) !=
				  out->files[i].text.len) {
			perror(p.buf);
			exit(1);
		}
		fclose(f);
	}
	sb_reset(&p);
	sb_addf(&p, "%s/%s", dir, RENDER_MAIN_FILE);
	uint64_t times[5];
	for (int r = 0; r < 5; r++) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		uint64_t t0 = now_ns();
		if (bird_check("bird", p.buf, 60000, &err) < 0) {
			fprintf(stderr, "bird -p: %s\n", sb_str(&err));
			exit(1);
		}
		times[r] = now_ns() - t0;
		sb_free(&err);
	}
	for (size_t i = 0; i < out->n; i++) {
		sb_reset(&p);
		sb_addf(&p, "%s/%s", dir, out->files[i].name);
		unlink(p.buf);
	}
	rmdir(dir);
	sb_free(&p);
	qsort(times, 5, sizeof(times[0]), cmp_u64);
	return times[2];
}

static void row(const char *what, const struct world *w, const char *node_name,
		const struct render_templates *t, double goal_ms)
{
	struct render_output out = { 0 };
	size_t sessions;
	double ms = (double)time_render(w, node_name, t, &out, &sessions) / 1e6;
	double bird_ms = (double)time_bird_parse(&out) / 1e6;
	size_t bytes = 0;
	for (size_t i = 0; i < out.n; i++)
		bytes += out.files[i].text.len;
	char goal[16] = "-", ratio[16] = "-";
	if (goal_ms > 0) {
		snprintf(goal, sizeof(goal), "%.0f", goal_ms);
		snprintf(ratio, sizeof(ratio), "%.3f", ms / goal_ms);
	}
	printf("%-33s %8zu %7zu %10.2f %8s %7s %10.2f %8.3f\n", what, sessions, bytes / 1024, ms,
	       goal, ratio, bird_ms, ms / bird_ms);
	render_output_clear(&out);
}

int main(int argc, char **argv)
{
	const char *src = getenv("BRINDLE_SOURCE_DIR");
	char tdir[4096];
	if (argc > 1)
		snprintf(tdir, sizeof(tdir), "%s", argv[1]);
	else
		snprintf(tdir, sizeof(tdir), "%s/bgp-templates", src ? src : BENCH_SOURCE_DIR);
	struct render_templates *t;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (templates_load(tdir, &t, &err) < 0) {
		fprintf(stderr, "%s\n", sb_str(&err));
		return 1;
	}
	printf("confd render: BGP view + templates for one node, median of %d runs.\n"
	       "Goal: < 50 ms for a 1,000-node mesh. Baseline (same run): `bird -p -c` parsing "
	       "the rendered files.\n\n",
	       RUNS);
	printf("%-33s %8s %7s %10s %8s %7s %10s %8s\n", "scenario", "sessions", "KiB", "render ms",
	       "goal ms", "ratio", "bird-p ms", "r/bird");
	struct world *mesh = world_new(1000, 0);
	row("1,000-node mesh: a node", mesh, "node-0500", t, 50);
	world_free(mesh);
	struct world *rr = world_new(5000, 3);
	row("5,000 nodes, 3 RRs: a client", rr, "node-2500", t, 0);
	row("5,000 nodes, 3 RRs: a reflector", rr, "node-0001", t, 0);
	world_free(rr);
	render_templates_free(t);
	sb_free(&err);
	return 0;
}
