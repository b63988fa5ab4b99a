/*
 * BGPFilter resources as BIRD functions (pure). Each filter a session names
 * (BGPPeer filters) becomes, per family and direction with rules, a function
 * of "if <match> then accept|reject;" lines, in the filter's order; a
 * session's import or export filter calls its filters' functions in the
 * order the BGPPeer lists them and then Brindle's own, as Calico does. A rule
 * that matches nothing it can decide on falls through to the next.
 *
 * Every piece of a condition is a value the model has validated (a CIDR of
 * the rule's family, an interface pattern of [A-Za-z0-9*._:@-]), printed
 * again from its parsed form, so nothing of the resource reaches BIRD's
 * syntax unchecked.
 */
#include "bgp_view.h"

#include <brindle/core/arena.h>
#include <brindle/core/hash.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* "brindle_bgpfilter_<name, '_' for other characters, cut>_<8 hex of the name>_<dir>_v<4|6>" */
static const char *fn_name(struct arena *a, const char *filter, bool import, int f)
{
	char clean[33];
	size_t n = 0;
	for (const char *p = filter; *p && n < sizeof(clean) - 1; p++)
		clean[n++] = isalnum((unsigned char)*p) ? *p : '_';
	clean[n] = '\0';
	uint8_t d[32];
	hash_digest(HASH_SHA1, filter, strlen(filter), d);
	return arena_printf(a, "brindle_bgpfilter_%s_%02x%02x%02x%02x_%s_v%d", clean, d[0], d[1],
			    d[2], d[3], import ? "import" : "export", f == BGP_V4 ? 4 : 6);
}

/* The condition of @r in BIRD's syntax, or NULL when it matches every route. */
static const char *rule_cond(struct arena *a, const struct br_bgpfilter_rule *r, int f)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	struct br_cidr c;
	if (r->cidr && r->match_operator && cidr_parse(r->cidr, false, &c) == 0) {
		char buf[CIDR_STRLEN];
		cidr_mask(&c);
		const char *text = cidr_str(&c, buf);
		int host = f == BGP_V4 ? 32 : 128;
		int64_t min = r->prefix_length && r->prefix_length->min.set
				      ? r->prefix_length->min.v
				      : c.len;
		int64_t max = r->prefix_length && r->prefix_length->max.set
				      ? r->prefix_length->max.v
				      : host;
		if (streq(r->match_operator, "Equal"))
			sb_addf(&sb, "net = %s", text);
		else if (streq(r->match_operator, "NotEqual"))
			sb_addf(&sb, "net != %s", text);
		else
			sb_addf(&sb, "net %s [ %s{%" PRId64 ",%" PRId64 "} ]",
				streq(r->match_operator, "NotIn") ? "!~" : "~", text, min, max);
	}
	if (r->source && streq(r->source, "RemotePeers"))
		sb_addf(&sb, "%ssource = RTS_BGP", sb.len ? " && " : "");
	if (r->iface && *r->iface)
		sb_addf(&sb, "%sifname ~ \"%s\"", sb.len ? " && " : "", r->iface);
	const char *out = sb.len ? arena_printf(a, "( %s )", sb_str(&sb)) : NULL;
	sb_free(&sb);
	return out;
}

/* The rules of @bf for family @f and one direction. */
static void rules_of(const struct br_bgpfilter *bf, int f, bool import,
		     const struct br_bgpfilter_rule **v, size_t *n)
{
	const struct br_bgpfilter_spec *s = &bf->spec;
	if (f == BGP_V4) {
		*v = import ? s->import_v4 : s->export_v4;
		*n = import ? s->n_import_v4 : s->n_export_v4;
	} else {
		*v = import ? s->import_v6 : s->export_v6;
		*n = import ? s->n_import_v6 : s->n_export_v6;
	}
}

static const struct bgp_filter_fn *fn_for(struct arena *a, struct bgp_family_view *fv,
					  const struct br_bgpfilter *bf, int f, bool import,
					  size_t *cap)
{
	const struct br_bgpfilter_rule *rules;
	size_t n;
	rules_of(bf, f, import, &rules, &n);
	if (!n)
		return NULL;
	const char *name = fn_name(a, bf->o.meta.name, import, f);
	for (size_t i = 0; i < fv->n_filter_fns; i++)
		if (streq(fv->filter_fns[i].name, name))
			return &fv->filter_fns[i];
	if (fv->n_filter_fns == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct bgp_filter_fn *nv = arena_new_array(a, struct bgp_filter_fn, ncap);
		if (fv->n_filter_fns)
			memcpy(nv, fv->filter_fns, fv->n_filter_fns * sizeof(*nv));
		fv->filter_fns = nv;
		*cap = ncap;
	}
	struct bgp_filter_fn *fn = &fv->filter_fns[fv->n_filter_fns++];
	*fn = (struct bgp_filter_fn){ .name = name,
				      .filter = bf->o.meta.name,
				      .import = import,
				      .rules = arena_new_array(a, struct bgp_filter_rule_text, n),
				      .n_rules = n };
	for (size_t i = 0; i < n; i++)
		fn->rules[i] = (struct bgp_filter_rule_text){
			.cond = rule_cond(a, &rules[i], f),
			.action = streq(rules[i].action, "Accept") ? "accept" : "reject",
		};
	return fn;
}

void bgp_filters_load(struct arena *a, struct bgp_family_view *fv, int f)
{
	size_t cap = 0;
	for (size_t i = 0; i < fv->n_sessions; i++) {
		struct bgp_session *s = &fv->sessions[i];
		if (!s->n_filters)
			continue;
		s->import_fns = arena_new_array(a, const char *, s->n_filters + 1);
		s->export_fns = arena_new_array(a, const char *, s->n_filters + 1);
		for (size_t k = 0; k < s->n_filters; k++) {
			const struct bgp_filter_fn *im =
				fn_for(a, fv, s->filters[k], f, true, &cap);
			const struct bgp_filter_fn *ex =
				fn_for(a, fv, s->filters[k], f, false, &cap);
			if (im)
				s->import_fns[s->n_import_fns++] = im->name;
			if (ex)
				s->export_fns[s->n_export_fns++] = ex->name;
		}
	}
}
