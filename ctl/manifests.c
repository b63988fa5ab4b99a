/*
 * brindlectl manifests: the manifests Brindle ships, printed from the code
 * that defines them. "manifests crds" prints Calico's kinds as
 * CustomResourceDefinitions (deploy/crds.yaml is this output; docs/crds.md).
 * Needs no datastore.
 */
#include "ctl.h"

#include <brindle/core/model_crd.h>

static void manifests_usage(FILE *f)
{
	fprintf(f, "Usage: brindlectl manifests crds\n\n"
		   "  crds   Calico's kinds as CustomResourceDefinitions in "
		   "crd.projectcalico.org/v1,\n"
		   "         generated from Brindle's resource model (deploy/crds.yaml)\n");
}

int cmd_manifests(struct ctl *c, int argc, char **argv)
{
	(void)c;
	if (argc == 2 && (streq(argv[1], "-h") || streq(argv[1], "--help"))) {
		manifests_usage(stdout);
		return CTL_OK;
	}
	if (argc != 2 || !streq(argv[1], "crds")) {
		if (argc >= 2)
			ctl_error("unknown manifest \"%s\"", argv[1]);
		manifests_usage(stderr);
		return CTL_USAGE;
	}
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	model_crds_yaml(&out);
	bool ok = fwrite(out.buf, 1, out.len, stdout) == out.len && fflush(stdout) == 0;
	sb_free(&out);
	if (!ok) {
		ctl_error("writing the manifests to standard output failed");
		return CTL_FAIL;
	}
	return CTL_OK;
}
