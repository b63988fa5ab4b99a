/*
 * The CNI network-configuration parser on arbitrary input (it reads whatever
 * a runtime pipes in). Beyond not crashing: a refusal carries a message and
 * one of the spec's error codes; an accepted configuration is within its
 * limits, and the result and error documents written for it are valid JSON.
 * The same bytes also go through the CNI_ARGS parser and the checks ADD
 * makes of the identity it gives (with CNI_IFNAME taken from the same
 * arguments): what passes can only make names of [a-z0-9.-], and the
 * interface name is one the kernel takes; a refusal says why, in a valid
 * error document. Error and result documents that carry raw request text
 * (any bytes) are JSON too.
 */
#include <brindle/core/cni.h>
#include <brindle/core/json.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_cni_conf: %s\n", what);
	abort();
}

static void valid_json(const struct strbuf *doc, const char *what)
{
	struct arena *a = arena_new();
	struct jv *v;
	must(json_parse(a, doc->buf, doc->len, &v, NULL) == 0, what);
	must(v->type == JV_OBJECT, what);
	arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	struct cni_conf *c = NULL;
	struct strbuf err = STRBUF_INIT, doc = STRBUF_INIT;
	sb_init(&err);
	sb_init(&doc);
	int code = 0;
	if (cni_conf_parse((const char *)data, size, &c, &code, &err) < 0) {
		must(err.len > 0, "a refusal must say why");
		must(code == CNI_ERR_INCOMPATIBLE_VERSION || code == CNI_ERR_UNSUPPORTED_FIELD ||
			     code == CNI_ERR_DECODE || code == CNI_ERR_INVALID_CONFIG,
		     "refused with an unexpected code");
		cni_error_write(&doc, NULL, code, "invalid network configuration", err.buf);
		valid_json(&doc, "error document is not JSON");
	} else {
		must(cni_version_supported(c->cni_version), "accepted an unsupported version");
		must(c->name && *c->name && !strchr(c->name, '/'), "accepted a bad name");
		must(c->n_ips <= CNI_MAX_IPS && c->n_prev_ips <= CNI_MAX_IPS, "too many addresses");
		for (size_t i = 0; i < c->n_ports; i++)
			must(c->ports[i].name && c->ports[i].port > 0 && c->ports[i].port < 65536,
			     "accepted a bad port");
		struct cni_result r = { .n_ifaces = 2, .ip_iface = 1, .gateway = true };
		snprintf(r.ifaces[0].name, sizeof(r.ifaces[0].name), "cali0123456789a");
		snprintf(r.ifaces[1].name, sizeof(r.ifaces[1].name), "eth0");
		r.ifaces[1].sandbox = c->name; /* any string must be escaped */
		memcpy(r.ips, c->ips, c->n_ips * sizeof(c->ips[0]));
		r.n_ips = c->n_ips;
		cni_result_write(&doc, c->cni_version, &r);
		valid_json(&doc, "result document is not JSON");
		sb_reset(&doc);
		cni_version_write(&doc, c->cni_version);
		valid_json(&doc, "version document is not JSON");
		cni_conf_free(c);
	}
	/* CNI_ARGS is a C string. */
	char *args = malloc(size + 1);
	memcpy(args, data, size);
	args[size] = '\0';
	/* Request text (a path, a name) in the documents on stdout: they must stay JSON. */
	sb_reset(&doc);
	cni_error_write(&doc, "1.0.0", CNI_ERR_INVALID_ENV, args, args);
	valid_json(&doc, "error document with request text is not JSON");
	struct cni_result raw = { .n_ifaces = 2, .ip_iface = 1 };
	snprintf(raw.ifaces[1].name, sizeof(raw.ifaces[1].name), "%s", args);
	raw.ifaces[1].sandbox = args;
	sb_reset(&doc);
	cni_result_write(&doc, "1.0.0", &raw);
	valid_json(&doc, "result document with request text is not JSON");
	struct arena *a = arena_new();
	struct br_labels l;
	sb_reset(&err);
	if (cni_args_parse(a, args, &l, &err) < 0) {
		must(err.len > 0, "CNI_ARGS refusal must say why");
	} else {
		struct cni_identity id;
		const char *cid = labels_get(&l, "CNI_CONTAINERID");
		const char *ifname = labels_get(&l, "CNI_IFNAME");
		if (!cni_container_id_valid(cid))
			cid = "0123abcd";
		if (!ifname)
			ifname = "eth0";
		cni_identity(a, &l, cid, &id);
		sb_reset(&err);
		if (!cni_ifname_valid(ifname)) {
			size_t n = strlen(ifname);
			must(!n || n > 15 || streq(ifname, ".") || streq(ifname, "..") ||
				     strcspn(ifname, "/: \t\n\r\v\f") < n ||
				     strspn(ifname,
					    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789-_.") < n,
			     "refused a plain interface name");
		} else if (cni_identity_check(&id, ifname, &err) < 0) {
			must(err.len > 0, "an identity refusal must say why");
			sb_reset(&doc);
			cni_error_write(&doc, NULL, CNI_ERR_INVALID_ENV, "invalid pod identity",
					err.buf);
			valid_json(&doc, "identity error document is not JSON");
		} else {
			size_t n = strlen(ifname);
			must(n && n < 16 && !strchr(ifname, '/') && !strchr(ifname, ':'),
			     "accepted an interface name the kernel refuses");
			const char *wep =
				cni_wep_name(a, "node-a", id.orchestrator, id.pod, ifname);
			must(strspn(wep, "abcdefghijklmnopqrstuvwxyz0123456789.-") == strlen(wep),
			     "an accepted identity gives an endpoint name outside [a-z0-9.-]");
			must(strspn(id.namespace, "abcdefghijklmnopqrstuvwxyz0123456789-") ==
					     strlen(id.namespace) &&
				     strlen(id.namespace) <= 63,
			     "accepted a namespace that is not a DNS label");
		}
	}
	arena_free(a);
	free(args);
	sb_free(&err);
	sb_free(&doc);
	return 0;
}
