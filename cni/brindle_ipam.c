/*
 * brindle-ipam: Brindle's block IPAM as a CNI IPAM plugin (a /32, no gateway,
 * no routes: docs/cni.md says why ptp and bridge cannot use that). brindle-cni
 * does the same in process; the lab takes VXLAN tunnel addresses from it. ADD returns the handle's
 * address (the same one on a retry), DEL releases everything of the handle
 * "<network>.<containerID>", CHECK verifies that the handle still holds prevResult's addresses.
 */
#include "plugin.h"

#include <brindle/sys/log.h>

#include <errno.h>
#include <stdlib.h>

__attribute__((noreturn)) static void cmd_add(struct plugin *p)
{
	struct ipam_assigned ips;
	plugin_assign(p, &ips, NULL);
	struct cni_result res = { .ip_iface = -1 };
	memcpy(res.ips, ips.ips, ips.n * sizeof(ips.ips[0]));
	res.n_ips = ips.n;
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	cni_result_write(&out, p->conf->cni_version, &res);
	char *doc = arena_strdup(p->a, sb_str(&out));
	sb_free(&out);
	plugin_succeed(p, doc);
}

__attribute__((noreturn)) static void cmd_del(struct plugin *p)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = plugin_release(p, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, plugin_ipam_code(r), "cannot release the address", details);
	}
	sb_free(&err);
	plugin_succeed(p, NULL);
}

__attribute__((noreturn)) static void cmd_check(struct plugin *p)
{
	if (cni_version_cmp(p->conf->cni_version, "0.4.0") < 0)
		plugin_fail(p, CNI_ERR_INCOMPATIBLE_VERSION,
			    "CHECK needs cniVersion 0.4.0 or later", p->conf->cni_version);
	struct br_ip held[CNI_MAX_IPS];
	size_t n = 0;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = ipam_handle_ips(p->ds, p->handle, held, CNI_MAX_IPS, &n, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, plugin_ipam_code(r), "cannot read the addresses", details);
	}
	sb_free(&err);
	if (!n)
		plugin_fail(p, CNI_ERR_CHECK, "IPAM holds no address for this container",
			    p->handle);
	for (size_t i = 0; i < p->conf->n_prev_ips; i++) {
		bool found = false;
		for (size_t k = 0; k < n; k++)
			found |= ip_equal(&p->conf->prev_ips[i], &held[k]);
		char ip[IP_STRLEN];
		if (!found)
			plugin_fail(p, CNI_ERR_CHECK,
				    "prevResult has an address IPAM does not hold",
				    arena_strdup(p->a, ip_str(&p->conf->prev_ips[i], ip)));
	}
	plugin_succeed(p, NULL);
}

int main(int argc, char **argv)
{
	struct plugin p;
	plugin_start(&p, "brindle-ipam", argc, argv);
	plugin_open_ds(&p);
	switch (p.cmd) {
	case CMD_ADD:
		cmd_add(&p);
	case CMD_DEL:
		cmd_del(&p);
	case CMD_CHECK:
		cmd_check(&p);
	default:
		plugin_fail(&p, CNI_ERR_INVALID_ENV, "unexpected command", NULL);
	}
}
