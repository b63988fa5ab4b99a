/*
 * brindlectl manifests: the manifests Brindle ships, printed from the code
 * that defines them. "manifests crds" prints Calico's kinds as
 * CustomResourceDefinitions (deploy/crds.yaml is this output; docs/crds.md).
 * Needs no datastore.
 */
#include "ctl.h"

#include <brindle/core/model_crd.h>

static int manifests_crds(struct ctl *c, int argc, char **argv)
{
	(void)c;
	if (argc > 1) {
		ctl_error("manifests crds: unexpected argument \"%s\"", argv[1]);
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

const struct ctl_cmd ctl_manifests_cmds[] = {
	{ "crds", NULL,
	  "Calico's kinds as CustomResourceDefinitions in crd.projectcalico.org/v1, generated "
	  "from Brindle's resource model (deploy/crds.yaml)",
	  NULL, NULL, manifests_crds },
	{ 0 },
};
