/* brindlectl: shared declarations of its command files. */
#ifndef BRINDLE_CTL_H
#define BRINDLE_CTL_H

#include <brindle/sys/ds.h>
#include <brindle/core/model.h>

#include <stdbool.h>
#include <stdio.h>

/* Exit codes. */
enum {
	CTL_OK = 0,
	CTL_FAIL = 1,
	CTL_USAGE = 2
};

struct ctl {
	struct ds_config cfg;
	struct ds_config_storage storage;
	struct ds *ds; /* opened on first use */
};

/* Shared helpers (ctl.c). Opens the datastore on first use; prints the error and returns NULL
 * on failure. */
struct ds *ctl_ds(struct ctl *c);

/* "Error: ..." on stderr. */
void ctl_error(const char *fmt, ...) printf_like(1, 2);

/* Flag parsing shared by commands: --flag value, --flag=value, -f value. */
struct ctl_args {
	int argc;
	char **argv;
	int i;
};
/* If argv[i] is flag @name (or @short_name), stores its value and returns true. */
bool ctl_flag_value(struct ctl_args *a, const char *name, const char *short_name,
		    const char **value, bool *bad);
bool ctl_flag_bool(struct ctl_args *a, const char *name, const char *short_name);

/* Resource commands (resource_cmds.c). */
int cmd_apply(struct ctl *c, int argc, char **argv);
int cmd_create(struct ctl *c, int argc, char **argv);
int cmd_replace(struct ctl *c, int argc, char **argv);
int cmd_get(struct ctl *c, int argc, char **argv);
int cmd_delete(struct ctl *c, int argc, char **argv);

/* validate -f FILE: check resources or a lab topology without a datastore (validate.c). */
int cmd_validate(struct ctl *c, int argc, char **argv);

/* node status (node.c). */
int cmd_node(struct ctl *c, int argc, char **argv);
/* IPAM (ipam.c). */
int cmd_ipam(struct ctl *c, int argc, char **argv);
/* The lab (lab.c and lab_*.c, docs/lab.md). */
int cmd_lab(struct ctl *c, int argc, char **argv);
/* datastore migrate lock|export|import|unlock (datastore.c, docs/datastore.md). */
int cmd_datastore(struct ctl *c, int argc, char **argv);
/* Shipped manifests: manifests crds (manifests.c, docs/crds.md). */
int cmd_manifests(struct ctl *c, int argc, char **argv);

/* Output (print.c). */
enum ctl_output {
	OUT_TABLE,
	OUT_WIDE,
	OUT_YAML,
	OUT_JSON,
	OUT_NAME
};
int ctl_parse_output(const char *s, enum ctl_output *out);
/* "ippool.projectcalico.org/name", as kubectl names resources in messages. */
const char *ctl_resource_ref(const struct br_object *o, char *buf, size_t size);
/* "ippool.projectcalico.org" */
const char *ctl_kind_ref(const struct br_kind *k, char *buf, size_t size);
/* @as_list: YAML/JSON as a v1 List (a listing) rather than the object itself. */
void ctl_print(FILE *f, struct br_object *const *objs, size_t n, enum ctl_output out,
	       bool all_namespaces, bool as_list);

#endif
