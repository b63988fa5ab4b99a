/*
 * The BGP view as the data the BIRD templates see (bgp-templates/README.md
 * names every key): the node's globals and one object per family with its
 * sessions and prefixes. Pure: a view in, a jv tree out.
 */
#include "bgp_view.h"

static struct jv *opt_str(struct arena *a, const char *s)
{
	return s ? jv_string(a, s) : jv_null(a);
}

static struct jv *opt_int(struct arena *a, int64_t i)
{
	return i ? jv_int(a, i) : jv_null(a);
}

static struct jv *str_list(struct arena *a, const char *const *v, size_t n, const char *key)
{
	struct jv *arr = jv_array(a);
	for (size_t i = 0; i < n; i++) {
		struct jv *o = jv_object(a);
		jv_add(a, o, key, jv_string(a, v[i]));
		jv_push(a, arr, o);
	}
	return arr;
}

static struct jv *session_data(struct arena *a, const struct bgp_session *s)
{
	struct jv *o = jv_object(a);
	jv_add(a, o, "name", jv_string(a, s->name));
	jv_add(a, o, "type",
	       jv_string(a, s->type == BGP_PEER_MESH	 ? "mesh"
			    : s->type == BGP_PEER_GLOBAL ? "global"
							 : "node"));
	jv_add(a, o, "description",
	       jv_string(a, s->peer_node ? arena_printf(a, "%s, node %s", s->origin, s->peer_node)
					 : s->origin));
	jv_add(a, o, "peer_ip", jv_string(a, s->peer_ip));
	jv_add(a, o, "port", opt_int(a, s->port));
	jv_add(a, o, "as", jv_uint(a, s->as));
	jv_add(a, o, "local_as", jv_uint(a, s->local_as));
	jv_add(a, o, "ibgp", jv_bool(a, s->ibgp));
	jv_add(a, o, "passive", jv_bool(a, s->passive));
	jv_add(a, o, "rr_client", jv_bool(a, s->rr_client));
	jv_add(a, o, "rr_cluster_id", opt_str(a, s->rr_cluster_id));
	jv_add(a, o, "source_address", opt_str(a, s->source_address));
	jv_add(a, o, "strict_bind", jv_bool(a, s->strict_bind));
	jv_add(a, o, "password", opt_str(a, s->password));
	jv_add(a, o, "restart_time", opt_int(a, s->restart_time_s));
	jv_add(a, o, "keepalive_time", opt_int(a, s->keepalive_time_s));
	jv_add(a, o, "ttl_security", opt_int(a, s->ttl_security));
	jv_add(a, o, "allow_local_as", opt_int(a, s->allow_local_as));
	jv_add(a, o, "next_hop_self", jv_bool(a, streq(s->next_hop, "self")));
	jv_add(a, o, "next_hop_keep", jv_bool(a, streq(s->next_hop, "keep")));
	jv_add(a, o, "peer_node", opt_str(a, s->peer_node));
	jv_add(a, o, "import_filters", str_list(a, s->import_fns, s->n_import_fns, "fn"));
	jv_add(a, o, "export_filters", str_list(a, s->export_fns, s->n_export_fns, "fn"));
	jv_add(a, o, "custom_import", jv_bool(a, s->n_import_fns > 0));
	jv_add(a, o, "custom_export", jv_bool(a, s->n_export_fns > 0));
	return o;
}

static struct jv *family_data(struct arena *a, const struct bgp_view *v, int f)
{
	const struct bgp_family_view *fv = &v->fam[f];
	struct jv *o = jv_object(a);
	jv_add(a, o, "v", jv_string(a, f == BGP_V4 ? "4" : "6"));
	jv_add(a, o, "ipv", jv_string(a, f == BGP_V4 ? "ipv4" : "ipv6"));
	jv_add(a, o, "host_len", jv_int(a, f == BGP_V4 ? 32 : 128));
	jv_add(a, o, "address", jv_string(a, fv->address));
	jv_add(a, o, "subnet", jv_string(a, fv->subnet));

	struct jv *sessions = jv_array(a);
	for (size_t i = 0; i < fv->n_sessions; i++)
		jv_push(a, sessions, session_data(a, &fv->sessions[i]));
	jv_add(a, o, "sessions", sessions);

	struct jv *blocks = jv_array(a);
	for (size_t i = 0; i < fv->n_blocks; i++) {
		struct jv *b = jv_object(a);
		jv_add(a, b, "cidr", jv_string(a, fv->blocks[i].cidr));
		jv_push(a, blocks, b);
	}
	jv_add(a, o, "blocks", blocks);

	struct jv *statics = jv_array(a);
	for (size_t i = 0; i < fv->n_statics; i++) {
		struct jv *s = jv_object(a);
		jv_add(a, s, "cidr", jv_string(a, fv->statics[i].cidr));
		jv_add(a, s, "why", jv_string(a, fv->statics[i].why));
		jv_push(a, statics, s);
	}
	jv_add(a, o, "statics", statics);

	struct jv *reach = jv_array(a);
	for (size_t i = 0; i < fv->n_reach; i++) {
		struct jv *r = jv_object(a);
		jv_add(a, r, "cidr", jv_string(a, fv->reach[i].cidr));
		jv_add(a, r, "via", jv_string(a, fv->reach[i].via));
		jv_push(a, reach, r);
	}
	jv_add(a, o, "reach", reach);
	jv_add(a, o, "service_ranges",
	       str_list(a, fv->service_ranges, fv->n_service_ranges, "cidr"));

	struct jv *pools = jv_array(a), *no_export = jv_array(a), *tunnel = jv_array(a),
		  *cross = jv_array(a), *exported = jv_array(a);
	for (size_t i = 0; i < fv->n_pools; i++) {
		const struct bgp_pool *p = &fv->pools[i];
		struct jv *po = jv_object(a);
		jv_add(a, po, "cidr", jv_string(a, p->cidr));
		jv_add(a, po, "name", jv_string(a, p->name));
		jv_add(a, po, "mode",
		       jv_string(a, p->mode == BGP_POOL_PLAIN	 ? "plain"
				    : p->mode == BGP_POOL_TUNNEL ? "tunnel"
								 : "cross-subnet"));
		jv_add(a, po, "export", jv_bool(a, p->export));
		jv_push(a, pools, po);
		jv_push(a, p->export ? exported : no_export, po);
		if (p->mode == BGP_POOL_TUNNEL)
			jv_push(a, tunnel, po);
		else if (p->mode == BGP_POOL_CROSS_SUBNET)
			jv_push(a, cross, po);
	}
	jv_add(a, o, "pools", pools);
	jv_add(a, o, "exported_pools", exported);
	jv_add(a, o, "no_export_pools", no_export);
	jv_add(a, o, "tunnel_pools", tunnel);
	jv_add(a, o, "cross_subnet_pools", cross);

	struct jv *comms = jv_array(a);
	for (size_t i = 0; i < fv->n_communities; i++) {
		const struct bgp_community_set *cs = &fv->communities[i];
		struct jv *c = jv_object(a);
		jv_add(a, c, "cidr", jv_string(a, cs->cidr));
		jv_add(a, c, "standard", str_list(a, cs->standard, cs->n_standard, "value"));
		jv_add(a, c, "large", str_list(a, cs->large, cs->n_large, "value"));
		jv_push(a, comms, c);
	}
	jv_add(a, o, "communities", comms);

	struct jv *fns = jv_array(a);
	for (size_t i = 0; i < fv->n_filter_fns; i++) {
		const struct bgp_filter_fn *fn = &fv->filter_fns[i];
		struct jv *fo = jv_object(a), *rules = jv_array(a);
		jv_add(a, fo, "name", jv_string(a, fn->name));
		jv_add(a, fo, "filter", jv_string(a, fn->filter));
		jv_add(a, fo, "direction", jv_string(a, fn->import ? "import" : "export"));
		for (size_t k = 0; k < fn->n_rules; k++) {
			struct jv *r = jv_object(a);
			jv_add(a, r, "cond", opt_str(a, fn->rules[k].cond));
			jv_add(a, r, "action", jv_string(a, fn->rules[k].action));
			jv_push(a, rules, r);
		}
		jv_add(a, fo, "rules", rules);
		jv_push(a, fns, fo);
	}
	jv_add(a, o, "filter_fns", fns);
	return o;
}

struct jv *bgp_view_data(const struct bgp_view *v, struct arena *a)
{
	struct jv *o = jv_object(a);
	jv_add(a, o, "node", jv_string(a, v->node_name));
	jv_add(a, o, "router_id", jv_string(a, v->router_id));
	jv_add(a, o, "as", jv_uint(a, v->as));
	jv_add(a, o, "listen_port", opt_int(a, v->listen_port));
	jv_add(a, o, "log_debug", jv_bool(a, streq(v->log_level, "debug")));
	jv_add(a, o, "log_info", jv_bool(a, streq(v->log_level, "info")));
	jv_add(a, o, "ignored_interfaces",
	       str_list(a, v->ignored_interfaces, v->n_ignored_interfaces, "pattern"));
	struct jv *fams = jv_array(a);
	for (int f = 0; f < 2; f++) {
		struct jv *fd = v->fam[f].enabled ? family_data(a, v, f) : jv_bool(a, false);
		jv_add(a, o, f == BGP_V4 ? "v4" : "v6", fd);
		if (v->fam[f].enabled)
			jv_push(a, fams, fd);
	}
	jv_add(a, o, "families", fams);
	struct jv *problems = str_list(a, v->problems, v->n_problems, "text");
	jv_add(a, o, "problems", problems);
	return o;
}
