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

static const struct {
	const char *name;
	int (*fn)(struct ctl *c, int argc, char **argv);
	const char *help;
} subcommands[] = {
	{ "up", lab_cmd_up, "up FILE [--timeout S] [--keep-on-failure]: build a lab" },
	{ "down", lab_cmd_down, "down NAME: remove every namespace, process and file of a lab" },
	{ "status", lab_cmd_status, "status NAME: nodes, BGP sessions, pods" },
	{ "apply", lab_cmd_apply, "apply NAME -f FILE: resources into the lab's datastore" },
	{ "delete", lab_cmd_delete, "delete NAME -f FILE: resources out of it" },
	{ "ns", lab_cmd_ns, "ns add NAME NS [k=v ...] | ns label NAME NS k=v ... [k-]" },
	{ "pod", lab_cmd_pod,
	  "pod add NAME NS/POD --node N [--ip A] [--labels k=v,...] [--port name:proto:port]... "
	  "[--serve proto:port]... [--host-network] | pod delete NAME NS/POD | pod label NAME "
	  "NS/POD k=v ... [k-]" },
	{ "exec", lab_cmd_exec,
	  "exec NAME TARGET -- CMD...: CMD in a node, NS/POD or external host" },
	{ "probe", lab_cmd_probe,
	  "probe NAME --from SRC --to DST --proto tcp|udp|sctp --port N [-o json]" },
	{ "matrix", lab_cmd_matrix,
	  "matrix NAME [--ports P,..] [--protos tcp,..] [--from SRC,..] [--to DST,..] "
	  "[--timeout-ms N] [-o json|table]" },
	{ "export-clab", lab_cmd_export_clab,
	  "export-clab NAME|--file FILE [-o FILE] [--image I]: a containerlab topology" },
};

int cmd_lab(struct ctl *c, int argc, char **argv)
{
	if (argc < 2 || streq(argv[1], "-h") || streq(argv[1], "--help")) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "Usage: brindlectl lab COMMAND\n\n");
		for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++)
			fprintf(f, "  %s\n", subcommands[i].help);
		fprintf(f, "\nSee docs/lab.md.\n");
		return argc < 2 ? CTL_USAGE : CTL_OK;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subcommands); i++)
		if (streq(argv[1], subcommands[i].name))
			return subcommands[i].fn(c, argc - 1, argv + 1);
	ctl_error("lab: unknown command \"%s\" (see brindlectl lab --help)", argv[1]);
	return CTL_USAGE;
}
