/*
 * brindlectl lab: a multi-node Brindle cluster on this machine, built from a
 * topology file with the product's own programs (docs/lab.md). This file
 * dispatches the subcommands; lab_up.c builds and removes labs, lab_probe.c
 * makes connections between their parts, lab_proc.c keeps track of what a
 * lab owns.
 */
#include "lab.h"
#include "lab_clab.h"

#include <stdlib.h>
#include <string.h>

/* lab apply|delete NAME -f FILE...: brindlectl's own apply/delete against the lab's etcd. */
static int lab_resources(int (*fn)(struct ctl *, int, char **), int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		ctl_error("usage: brindlectl lab %s NAME -f FILE", argv[0]);
		return CTL_USAGE;
	}
	struct lab l;
	lab_init(&l, argv[1]);
	if (!lab_name_valid(argv[1]) || lab_load(&l) < 0) {
		if (!lab_name_valid(argv[1]))
			ctl_error("\"%s\" is not a lab name", argv[1]);
		lab_free(&l);
		return CTL_FAIL;
	}
	/* argv[0] stays the command name; the lab's name is dropped */
	char **rest = arena_new_array(l.a, char *, (size_t)argc);
	rest[0] = argv[0];
	for (int i = 2; i < argc; i++)
		rest[i - 1] = argv[i];
	int r = lab_ctl_cmd(&l, fn, argc - 1, rest, false);
	lab_free(&l);
	return r;
}

static int lab_cmd_apply(struct ctl *c, int argc, char **argv)
{
	return lab_resources(cmd_apply, argc, argv);
}

static int lab_cmd_delete(struct ctl *c, int argc, char **argv)
{
	return lab_resources(cmd_delete, argc, argv);
}

static const struct ctl_cmd ns_cmds[] = {
	{ "add", "NAME NS [k=v ...]", "create a namespace in the lab, with labels", NULL, NULL,
	  NULL },
	{ "label", "NAME NS k=v ... [k-]", "set (k=v) or remove (k-) a namespace's labels", NULL,
	  NULL, NULL },
	{ 0 },
};

static const struct ctl_cmd pod_cmds[] = {
	{ "add", "NAME NS/POD", "make a pod as lab up makes the topology's", lab_pod_add_flags,
	  NULL, NULL },
	{ "delete", "NAME NS/POD", "remove a pod, its endpoint and its address", NULL, NULL, NULL },
	{ "label", "NAME NS/POD k=v ... [k-]", "set (k=v) or remove (k-) a pod's labels", NULL,
	  NULL, NULL },
	{ 0 },
};

const struct ctl_cmd ctl_lab_cmds[] = {
	{ "up", "FILE", "build a lab from a topology file", lab_up_flags, NULL, lab_cmd_up },
	{ "down", "NAME", "remove every namespace, process and file of a lab", NULL, NULL,
	  lab_cmd_down },
	{ "status", "NAME", "nodes, BGP sessions, pods", NULL, NULL, lab_cmd_status },
	{ "apply", "NAME", "brindlectl apply against the lab's datastore", ctl_apply_flags, NULL,
	  lab_cmd_apply },
	{ "delete", "NAME [KIND NAME...]", "brindlectl delete against the lab's datastore",
	  ctl_delete_flags, NULL, lab_cmd_delete },
	{ "ns", NULL, "the lab's namespaces", NULL, ns_cmds, lab_cmd_ns },
	{ "pod", NULL, "the lab's pods", NULL, pod_cmds, lab_cmd_pod },
	{ "exec", "NAME TARGET -- CMD...",
	  "run CMD in a node, ns/pod, external host or BGP peer; its exit status is ours", NULL,
	  NULL, lab_cmd_exec },
	{ "probe", "NAME", "one connection from SRC to DST: allowed or denied", lab_probe_flags,
	  NULL, lab_cmd_probe },
	{ "matrix", "NAME", "who reaches whom: probes between every source and destination",
	  lab_matrix_flags, NULL, lab_cmd_matrix },
	{ "export-clab", "[NAME]", "the lab (or a topology --file) as a containerlab topology",
	  lab_export_clab_flags, NULL, lab_cmd_export_clab },
	{ 0 },
};
