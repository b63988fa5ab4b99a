/*
 * brindlectl: resources in and out of the datastore (apply, create, replace,
 * get, delete), node status, ipam and the lab. Global flags select the
 * datastore like calicoctl's: --datastore (or --datastore-type), --kubeconfig,
 * --etcd-endpoints, --etcd-ca-cert-file, --etcd-cert-file, --etcd-key-file,
 * each also read from the environment (ds_config_from_env: BRINDLE_DATASTORE_TYPE,
 * BRINDLE_KUBECONFIG or KUBECONFIG, BRINDLE_ETCD_ENDPOINTS, ...).
 */
#include "ctl.h"

#include <brindle/sys/log.h>
#include <brindle/version.h>

#include <stdlib.h>

static int cmd_version(struct ctl *c, int argc, char **argv)
{
	printf("brindlectl version %s\n", BRINDLE_VERSION);
	return CTL_OK;
}

static const struct {
	const char *name;
	int (*fn)(struct ctl *c, int argc, char **argv);
	const char *help;
} commands[] = {
	{ "apply", cmd_apply, "create or update resources from files (-f FILE, - for stdin)" },
	{ "create", cmd_create, "create resources from files; fails if one exists" },
	{ "replace", cmd_replace, "replace existing resources from files" },
	{ "get", cmd_get, "show resources: get KIND [NAME...] [-n NS | -A] or get -f FILE" },
	{ "delete", cmd_delete, "delete resources: delete KIND NAME... [-n NS] or delete -f FILE" },
	{ "validate", cmd_validate, "check files as apply reads them, without a datastore" },
	{ "node", cmd_node, "node status [--ready]: this node's BGP sessions from BIRD" },
	{ "ipam", cmd_ipam, "IP addresses: ipam show [--show-blocks], ipam check, ipam release" },
	{ "lab", cmd_lab, "a multi-node cluster in namespaces on this machine (lab --help)" },
	{ "datastore", cmd_datastore,
	  "datastore migrate lock|export|import|unlock: move from etcd to Kubernetes" },
	{ "manifests", cmd_manifests, "print shipped manifests: manifests crds (the CRDs)" },
	{ "version", cmd_version, "print the version" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: brindlectl [global flags] COMMAND [args]\n\nCommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nGlobal flags (or the environment variable in brackets):\n"
		   "  --datastore TYPE            etcdv3 or kubernetes (also --datastore-type)\n"
		   "                              [BRINDLE_DATASTORE_TYPE, DATASTORE_TYPE]\n"
		   "  --kubeconfig FILE           kubernetes: the kubeconfig; none: in-cluster\n"
		   "                              [BRINDLE_KUBECONFIG, KUBECONFIG]\n"
		   "  --etcd-endpoints URLS       comma-separated, http(s)://host:port or "
		   "unix:PATH [BRINDLE_ETCD_ENDPOINTS]\n"
		   "  --etcd-ca-cert-file FILE    [BRINDLE_ETCD_CA_CERT_FILE]\n"
		   "  --etcd-cert-file FILE       [BRINDLE_ETCD_CERT_FILE]\n"
		   "  --etcd-key-file FILE        [BRINDLE_ETCD_KEY_FILE]\n"
		   "\nSee docs/brindlectl.md.\n");
}

int main(int argc, char **argv)
{
	struct ctl c = { 0 };
	log_init("brindlectl", LOG_WARNING, LOG_TEXT, 2);

	/* Global flags may appear anywhere; everything else goes to the command. */
	char **rest = xcalloc((size_t)argc + 1, sizeof(char *));
	int nrest = 0;
	struct ctl_args a = { argc, argv, 1 };
	const char *endpoints = NULL;
	for (; a.i < argc; a.i++) {
		const char *v;
		bool bad = false;
		if (ctl_flag_value(&a, "--datastore-type", NULL, &v, &bad) ||
		    ctl_flag_value(&a, "--datastore", NULL, &v, &bad)) {
			c.cfg.type = v;
		} else if (ctl_flag_value(&a, "--kubeconfig", NULL, &v, &bad)) {
			c.cfg.kubeconfig = v;
		} else if (ctl_flag_value(&a, "--etcd-endpoints", NULL, &v, &bad)) {
			endpoints = v;
		} else if (ctl_flag_value(&a, "--etcd-ca-cert-file", NULL, &v, &bad)) {
			c.cfg.etcd_ca_file = v;
		} else if (ctl_flag_value(&a, "--etcd-cert-file", NULL, &v, &bad)) {
			c.cfg.etcd_cert_file = v;
		} else if (ctl_flag_value(&a, "--etcd-key-file", NULL, &v, &bad)) {
			c.cfg.etcd_key_file = v;
		} else if (nrest == 0 && (streq(argv[a.i], "-h") || streq(argv[a.i], "--help"))) {
			usage(stdout);
			free(rest);
			return CTL_OK;
		} else {
			rest[nrest++] = argv[a.i];
			continue;
		}
		if (bad) {
			free(rest);
			return CTL_USAGE;
		}
	}
	int ret = CTL_USAGE;
	if (endpoints) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (ds_config_set_endpoints(&c.cfg, &c.storage, endpoints, &err) < 0) {
			ctl_error("--etcd-endpoints: %s", sb_str(&err));
			sb_free(&err);
			goto out;
		}
		sb_free(&err);
	}
	if (nrest == 0) {
		usage(stderr);
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (streq(rest[0], commands[i].name)) {
			ret = commands[i].fn(&c, nrest, rest);
			goto out;
		}
	}
	ctl_error("unknown command \"%s\" (see brindlectl --help)", rest[0]);
out:
	ds_close(c.ds);
	ds_config_free_storage(&c.storage);
	free(rest);
	return ret;
}
