/*
 * What of a resource Brindle accepts and stores but does not act on, so that
 * brindlectl can say so when it is applied (docs/resources.md has the same
 * list, field by field). Every FelixConfiguration field of the "more" part
 * (model_felix.h) is found from the field table; the rest is listed here.
 */
#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

struct no_effect {
	enum br_kind_id kind;
	const char *path; /* "spec.x.y", or "" for the whole resource */
	const char *why;  /* NULL: "no effect" */
};

static const struct no_effect table[] = {
	{ KIND_BGPPEER, "spec.localWorkloadSelector", NULL },
	{ KIND_BGPCONFIGURATION, "spec.serviceLoadBalancerAggregation", NULL },
	{ KIND_BGPCONFIGURATION, "spec.localWorkloadPeeringIPV4", NULL },
	{ KIND_BGPCONFIGURATION, "spec.localWorkloadPeeringIPV6", NULL },
	{ KIND_IPAMCONFIGURATION, "spec.kubeVirtVMAddressPersistence", NULL },
	{ KIND_NETWORKPOLICY, "spec.performanceHints", NULL },
	{ KIND_GLOBALNETWORKPOLICY, "spec.performanceHints", NULL },
	{ KIND_GLOBALNETWORKPOLICY, "spec.doNotTrack",
	  "not implemented: the endpoints it selects are denied (fail closed)" },
	{ KIND_GLOBALNETWORKPOLICY, "spec.preDNAT",
	  "not implemented: the endpoints it selects are denied (fail closed)" },
	{ KIND_GLOBALNETWORKPOLICY, "spec.applyOnForward",
	  "not implemented: the endpoints it selects are denied (fail closed)" },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.logSeverityScreen", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.healthChecks", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.etcdV3CompactionPeriod", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.prometheusMetricsPort", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.debugProfilePort", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.node.syncLabels", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.node.hostEndpoint", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.policy", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.workloadEndpoint", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.serviceAccount", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.namespace", NULL },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "spec.controllers.loadBalancer", NULL },
	{ KIND_CLUSTERINFORMATION, "", "stored; Brindle does not read or write it" },
	{ KIND_FELIXCONFIGURATION, "spec.wireguardEnabled",
	  "Brindle has no WireGuard: traffic between nodes is NOT encrypted" },
	{ KIND_FELIXCONFIGURATION, "spec.wireguardEnabledV6",
	  "Brindle has no WireGuard: traffic between nodes is NOT encrypted" },
};

/* The member at dotted @path of @v (NULL when absent); "" is @v itself. */
static const struct jv *at(const struct jv *v, const char *path)
{
	char part[128];
	while (v && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, path, n);
		part[n] = '\0';
		v = jv_get(v, part);
		path += n + (path[n] == '.');
	}
	return v;
}

static bool set(const struct jv *v)
{
	if (!v)
		return false;
	bool b;
	if (jv_as_bool(v, &b))
		return b;
	return true;
}

static void add(struct strbuf *out, const char *path, const char *why)
{
	sb_addf(out, "%s%s%s%s%s", out->len ? "; " : "", path, why ? " (" : "", why ? why : "",
		why ? ")" : "");
}

size_t model_no_effect(const struct br_object *o, struct strbuf *out)
{
	struct arena *a = arena_new();
	const struct jv *doc = model_encode(a, o);
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		if (table[i].kind != o->kind->id || !set(at(doc, table[i].path)))
			continue;
		add(out, *table[i].path ? table[i].path : "the whole resource", table[i].why);
		n++;
	}
	/* Staged policies are previewed in felix's event log, except for these two actions. */
	const struct jv *sa = at(doc, "spec.stagedAction");
	if ((o->kind->id == KIND_STAGEDNETWORKPOLICY ||
	     o->kind->id == KIND_STAGEDGLOBALNETWORKPOLICY ||
	     o->kind->id == KIND_STAGEDK8SNETWORKPOLICY) &&
	    sa && sa->type == JV_STRING &&
	    (streq(sa->s.text, "Learn") || streq(sa->s.text, "Ignore"))) {
		add(out, "spec.stagedAction",
		    "Learn and Ignore are stored, not previewed; Set and Delete are");
		n++;
	}
	if (o->kind->id == KIND_FELIXCONFIGURATION) {
		/* The fields of the "more" part: stored, no effect. */
		const struct model_struct *d = o->kind->spec;
		size_t lo = offsetof(struct br_felixconfig_spec, more);
		size_t hi = lo + sizeof(struct br_felix_more);
		const struct jv *spec = jv_get(doc, "spec");
		for (size_t i = 0; i < d->n_fields; i++) {
			const struct model_field *f = &d->fields[i];
			if (f->off < lo || f->off >= hi || !jv_get(spec, f->name))
				continue;
			if (streq(f->name, "wireguardEnabled") ||
			    streq(f->name, "wireguardEnabledV6"))
				continue; /* said above, with why */
			char path[160];
			snprintf(path, sizeof(path), "spec.%s", f->name);
			add(out, path, NULL);
			n++;
		}
	}
	arena_free(a);
	return n;
}
