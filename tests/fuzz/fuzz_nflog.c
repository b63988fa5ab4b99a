/*
 * NFLOG messages, as the kernel hands packets to felix's event log: the
 * input is a stream of netlink messages. Every message goes through
 * nflog_parse and, when it parses, through the event log's line formatter
 * against a small policy state. Besides not crashing or reading past a
 * message: the prefix is a terminated string, the ICMP fields are set only
 * for ICMP, and every line is one JSON object.
 */
#include "calc/eventlog.h"
#include "calc/policy_internal.h"

#include <brindle/core/arena.h>
#include <brindle/core/json.h>
#include <brindle/sys/nflog.h>

#include <libmnl/libmnl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_nflog: %s\n", what);
		abort();
	}
}

/* A node with one endpoint and one policy, so prefixes can name both. */
static struct pol *state(void)
{
	static struct pol *p;
	if (p)
		return p;
	static const char yaml[] =
		"apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
		"metadata: {name: fuzz}\nspec:\n  selector: all()\n"
		"  ingress: [{action: Deny}]\n---\n"
		"apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: n-k8s-p-eth0, namespace: default}\n"
		"spec: {orchestrator: k8s, node: n, pod: p, endpoint: eth0,\n"
		"  interfaceName: cali0123456789a, ipNetworks: [10.0.0.1/32]}\n";
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	p = pol_new("n", AF_INET);
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	pol_set_config(p, &cfg);
	check(model_read("fuzz", yaml, sizeof(yaml) - 1, NULL, &objs, &n, &errs) == 0,
	      "the state does not read");
	for (size_t i = 0; i < n; i++) {
		struct ds_update u = { .kind = objs[i]->kind,
				       .scope = objs[i]->kind->namespaced ? objs[i]->meta.namespace
									   : NULL,
				       .name = objs[i]->meta.name,
				       .obj = objs[i] };
		pol_update(p, &u);
		model_free(objs[i]);
	}
	free(objs);
	pol_flush(p);
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	/* aligned, as a socket buffer is */
	uint32_t *buf = malloc(size + 4);
	memcpy(buf, data, size);
	const struct nlmsghdr *h = (const void *)buf;
	int len = (int)size;
	struct strbuf line;
	sb_init(&line);
	/* mnl_nlmsg_ok compares nlmsg_len as an int: a length over 2 GB would pass */
	for (; mnl_nlmsg_ok(h, len) && h->nlmsg_len <= (uint32_t)len;
	     h = mnl_nlmsg_next(h, &len)) {
		struct nflog_event ev;
		if (nflog_parse(h, &ev) != 0)
			continue;
		check(memchr(ev.prefix, '\0', sizeof(ev.prefix)) != NULL, "prefix not terminated");
		bool icmp = ev.proto == IPPROTO_ICMP || ev.proto == IPPROTO_ICMPV6;
		check(icmp || (ev.icmp_type == -1 && ev.icmp_code == -1), "ICMP fields on non-ICMP");
		/* "@@@@@@@@@@@@" in a prefix's hash place stands for the state's policy */
		if (strlen(ev.prefix) >= 17 && memcmp(ev.prefix + 5, "@@@@@@@@@@@@", 12) == 0) {
			char hash[13];
			policy_log_hash("gnp/fuzz", hash);
			memcpy(ev.prefix + 5, hash, 12);
		}
		sb_reset(&line);
		eventlog_format(state(), &ev, ev.indev ? "cali0123456789a" : NULL, NULL,
				1700000000000000ull, &line);
		struct arena *a = arena_new();
		struct jv *v = NULL;
		struct strbuf err;
		sb_init(&err);
		int r = json_parse(a, sb_str(&line), line.len, &v, &err);
		if (r < 0 || v->type != JV_OBJECT)
			fprintf(stderr, "line: %s: %s\n", sb_str(&line), sb_str(&err));
		check(r == 0 && v->type == JV_OBJECT, "the event line is not a JSON object");
		sb_free(&err);
		arena_free(a);
	}
	sb_free(&line);
	free(buf);
	return 0;
}
