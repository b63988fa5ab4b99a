/*
 * brindlectl: resources in and out of the datastore (apply, create, replace,
 * get, delete), node status, ipam and the lab. Global flags select the
 * datastore like calicoctl's: --datastore (or --datastore-type), --kubeconfig, --context,
 * --etcd-endpoints, --etcd-ca-cert-file, --etcd-cert-file, --etcd-key-file,
 * each also read from the environment (ds_config_from_env: BRINDLE_DATASTORE_TYPE,
 * BRINDLE_KUBECONFIG or KUBECONFIG, BRINDLE_ETCD_ENDPOINTS, ...).
 */
#include "ctl.h"

#include <brindle/sys/http.h>
#include <brindle/sys/log.h>
#include <brindle/version.h>

#include <stdlib.h>

static int cmd_version(struct ctl *c, int argc, char **argv)
{
	printf("brindlectl version %s\n", BRINDLE_VERSION);
	printf("transport: %s\n", http_library_version());
	return CTL_OK;
}

static const struct ctl_flag no_flags[] = { { 0 } };

static const struct ctl_cmd commands[] = {
	{ "apply", NULL, "create or update resources from files", ctl_apply_flags, NULL,
	  cmd_apply },
	{ "create", NULL, "create resources from files; fails if one exists", ctl_apply_flags, NULL,
	  cmd_create },
	{ "replace", NULL, "replace existing resources from files", ctl_apply_flags, NULL,
	  cmd_replace },
	{ "get", "[KIND [NAME...]]", "show resources: named ones, all of a kind, or those in files",
	  ctl_get_flags, NULL, cmd_get },
	{ "delete", "[KIND NAME...]", "delete resources by name or as named in files",
	  ctl_delete_flags, NULL, cmd_delete },
	{ "validate", NULL, "check files as apply reads them, without a datastore",
	  ctl_validate_flags, NULL, cmd_validate },
	{ "node", NULL, "this node's BGP sessions from BIRD", NULL, ctl_node_cmds, NULL },
	{ "ipam", NULL, "IP address management: show, check, release", NULL, ctl_ipam_cmds, NULL },
	{ "lab", NULL, "a multi-node cluster in namespaces on this machine (docs/lab.md)", NULL,
	  ctl_lab_cmds, NULL },
	{ "datastore", NULL, "move the cluster's data from etcd to Kubernetes", NULL,
	  ctl_datastore_cmds, NULL },
	{ "manifests", NULL, "print the manifests Brindle ships", NULL, ctl_manifests_cmds, NULL },
	{ "help", "[COMMAND...]", "help of brindlectl or of a command", no_flags, NULL, NULL },
	{ "version", NULL, "print the version", no_flags, NULL, cmd_version },
	{ 0 },
};

enum {
	G_DATASTORE,
	G_DATASTORE_TYPE,
	G_KUBECONFIG,
	G_ETCD_ENDPOINTS,
	G_ETCD_CA,
	G_ETCD_CERT,
	G_ETCD_KEY,
	G_CONTEXT,
};

static const struct ctl_flag global_flags[] = {
	[G_DATASTORE] = { "--datastore", NULL, "TYPE",
			  "etcdv3 or kubernetes [BRINDLE_DATASTORE_TYPE, DATASTORE_TYPE]" },
	[G_DATASTORE_TYPE] = { "--datastore-type", NULL, "TYPE", "the same as --datastore" },
	[G_KUBECONFIG] = { "--kubeconfig", NULL, "FILE",
			   "kubernetes: the kubeconfig; none: in-cluster [BRINDLE_KUBECONFIG, "
			   "KUBECONFIG]" },
	[G_ETCD_ENDPOINTS] = { "--etcd-endpoints", NULL, "URLS",
			       "comma-separated, http(s)://host:port or unix:PATH "
			       "[BRINDLE_ETCD_ENDPOINTS]" },
	[G_ETCD_CA] = { "--etcd-ca-cert-file", NULL, "FILE",
			"the CA of etcd's certificate [BRINDLE_ETCD_CA_CERT_FILE]" },
	[G_ETCD_CERT] = { "--etcd-cert-file", NULL, "FILE",
			  "client certificate [BRINDLE_ETCD_CERT_FILE]" },
	[G_ETCD_KEY] = { "--etcd-key-file", NULL, "FILE", "its key [BRINDLE_ETCD_KEY_FILE]" },
	[G_CONTEXT] = { "--context", NULL, "NAME",
			"kubernetes: the kubeconfig's context to use (default: current-context)" },
	{ 0 },
};

static const struct ctl_cmd root = {
	"brindlectl",
	NULL,
	"Brindle's resources in and out of the datastore, node status, IPAM and the lab.\n"
	"Global flags (environment variable in brackets) may appear anywhere. See "
	"docs/brindlectl.md.",
	global_flags,
	commands,
	NULL
};

static bool is_help(const char *s)
{
	return streq(s, "-h") || streq(s, "--help");
}

static const struct ctl_cmd *find_sub(const struct ctl_cmd *cmd, const char *name)
{
	for (size_t k = 0; cmd->subs && cmd->subs[k].name; k++)
		if (streq(cmd->subs[k].name, name))
			return &cmd->subs[k];
	return NULL;
}

/* Follows words[0..n) down the tree while they name subcommands; returns how many did. */
static size_t walk(const struct ctl_cmd **cmd, struct strbuf *path, char **words, size_t n)
{
	size_t i = 0;
	for (; i < n; i++) {
		const struct ctl_cmd *sub = find_sub(*cmd, words[i]);
		if (!sub)
			break;
		*cmd = sub;
		sb_addf(path, " %s", sub->name);
	}
	return i;
}

/* brindlectl help [COMMAND...] */
static int help(char **words, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (is_help(words[k])) {
			ctl_help(stdout, "brindlectl help", find_sub(&root, "help"));
			return CTL_OK;
		}
	const struct ctl_cmd *cmd = &root;
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	sb_adds(&path, "brindlectl");
	size_t used = walk(&cmd, &path, words, n);
	int ret = CTL_OK;
	if (used < n) {
		ctl_error("%s: no command \"%s\" (see %s --help)", sb_str(&path), words[used],
			  sb_str(&path));
		ret = CTL_USAGE;
	} else {
		ctl_help(stdout, sb_str(&path), cmd);
	}
	sb_free(&path);
	return ret;
}

/* Finds the command rest[] names and runs it, or prints its help when asked anywhere before
 * a "--". */
static int dispatch(struct ctl *c, char **rest, size_t n)
{
	if (streq(rest[0], "help"))
		return help(rest + 1, n - 1);
	const struct ctl_cmd *cmd = &root;
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	sb_adds(&path, "brindlectl");
	size_t i = 0;
	for (;;) {
		const struct ctl_cmd *sub = i < n ? find_sub(cmd, rest[i]) : NULL;
		if (!sub)
			break;
		cmd = sub;
		sb_addf(&path, " %s", sub->name);
		i++;
		if (cmd->fn)
			break;
	}
	/* help of the deepest command named, including subs of a command that parses itself */
	for (size_t k = i; k < n && !streq(rest[k], "--"); k++) {
		if (!is_help(rest[k]))
			continue;
		const struct ctl_cmd *h = cmd;
		walk(&h, &path, rest + i, k - i);
		ctl_help(stdout, sb_str(&path), h);
		sb_free(&path);
		return CTL_OK;
	}
	int ret = CTL_USAGE;
	if (cmd->fn) {
		ret = cmd->fn(c, (int)(n - i + 1), rest + i - 1);
	} else if (i < n) {
		ctl_error("%s: unknown command \"%s\" (see %s --help)", sb_str(&path), rest[i],
			  sb_str(&path));
	} else {
		ctl_help(stderr, sb_str(&path), cmd);
	}
	sb_free(&path);
	return ret;
}

int main(int argc, char **argv)
{
	struct ctl c = { 0 };
	log_init("brindlectl", LOG_WARNING, LOG_TEXT, 2);

	/* Global flags may appear anywhere (before a "--"); everything else goes to the
	 * command. */
	char **rest = xcalloc((size_t)argc + 1, sizeof(char *));
	size_t nrest = 0;
	const char *g[CTL_MAX_FLAGS] = { 0 };
	bool dashdash = false;
	for (int i = 1; i < argc; i++) {
		int r = 0;
		dashdash = dashdash || streq(argv[i], "--");
		for (size_t k = 0; !dashdash && global_flags[k].name && r == 0; k++) {
			r = ctl_flag_match(&global_flags[k], argc, argv, &i, &g[k]);
			if (r < 0) {
				free(rest);
				return CTL_USAGE;
			}
		}
		if (!r)
			rest[nrest++] = argv[i];
	}
	c.cfg.type = g[G_DATASTORE] ? g[G_DATASTORE] : g[G_DATASTORE_TYPE];
	c.cfg.kubeconfig = g[G_KUBECONFIG];
	c.cfg.kube_context = g[G_CONTEXT];
	c.cfg.etcd_ca_file = g[G_ETCD_CA];
	c.cfg.etcd_cert_file = g[G_ETCD_CERT];
	c.cfg.etcd_key_file = g[G_ETCD_KEY];
	int ret = CTL_USAGE;
	if (g[G_ETCD_ENDPOINTS]) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (ds_config_set_endpoints(&c.cfg, &c.storage, g[G_ETCD_ENDPOINTS], &err) < 0) {
			ctl_error("--etcd-endpoints: %s", sb_str(&err));
			sb_free(&err);
			goto out;
		}
		sb_free(&err);
	}
	if (nrest == 0) {
		ctl_help(stderr, "brindlectl", &root);
		goto out;
	}
	if (is_help(rest[0])) {
		ctl_help(stdout, "brindlectl", &root);
		ret = CTL_OK;
		goto out;
	}
	ret = dispatch(&c, rest, nrest);
out:
	ds_close(c.ds);
	ds_config_free_storage(&c.storage);
	free(rest);
	return ret;
}
