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
	/*
	 * Set by `brindlectl lab` for a lab on Kubernetes, which plays the
	 * cluster's administrator: apply, create, replace and delete offer it
	 * each object first (@o NULL for a delete). It returns 1 for an object
	 * that is not its own (the datastore writes it), 0 when it wrote it
	 * (*what: "created", "configured", "deleted"...), or a negative errno
	 * after saying why.
	 */
	int (*cluster_write)(struct ctl *c, const struct br_kind *k, const char *ns,
			     const char *name, struct br_object *o, const char **what);
	void *cluster_arg;
};

/* Shared helpers (ctl.c). Opens the datastore on first use; prints the error and returns NULL
 * on failure. */
struct ds *ctl_ds(struct ctl *c);

/* "Error: ..." on stderr. */
void ctl_error(const char *fmt, ...) printf_like(1, 2);

/*
 * Commands and their flags are tables: the parser reads the flags from them and --help,
 * "brindlectl help COMMAND" and docs/brindlectl.md's test print them from the same tables.
 * A flag table ends with an entry whose name is NULL; a command table likewise.
 */
struct ctl_flag {
	const char *name;	/* "--filename" */
	const char *short_name; /* "-f", or NULL */
	const char *arg;	/* the value's placeholder ("FILE"); NULL: a switch */
	const char *help;
};

struct ctl_cmd {
	const char *name;
	const char *args;    /* what follows the name besides flags: "KIND [NAME...]", or NULL */
	const char *summary; /* one line */
	const struct ctl_flag *flags; /* NULL: takes none */
	const struct ctl_cmd *subs;   /* NULL: a leaf */
	/* argv[0] is the command's own name. A command with subs and no fn is dispatched to
	 * the sub named by the next word; one with both gets the words itself (its subs are
	 * only for help). */
	int (*fn)(struct ctl *c, int argc, char **argv);
};

#define CTL_MAX_FLAGS 16

/* Flags and positional words of one command line; values point into argv. */
struct ctl_parsed {
	const char *value[CTL_MAX_FLAGS]; /* the last value; "" for a given switch; NULL: absent */
	const char **all[CTL_MAX_FLAGS];  /* every value in order */
	size_t n[CTL_MAX_FLAGS];	  /* how often each flag was given */
	char **pos;
	size_t n_pos;
};

/* Parses argv[first..] against @flags (indexed as in the table): --flag value, --flag=value,
 * -f value, -f=value; "-" alone is a positional word. An unknown flag or a missing value is
 * an error naming @cmd and pointing to its --help; returns CTL_USAGE then, else CTL_OK. Free
 * with ctl_parsed_free even on error. */
int ctl_parse(const char *cmd, const struct ctl_flag *flags, int argc, char **argv, int first,
	      struct ctl_parsed *p) must_check;
void ctl_parsed_free(struct ctl_parsed *p);

/* Matches argv[*i] against one flag; on a match stores its value ("" for a switch), advances
 * *i past a separate value and returns 1; returns 0 when it is not this flag, -1 (printed)
 * when its value is missing. */
int ctl_flag_match(const struct ctl_flag *f, int argc, char **argv, int *i,
		   const char **value) must_check;

/* Help of @cmd, reached by @path ("brindlectl ipam release"). */
void ctl_help(FILE *f, const char *path, const struct ctl_cmd *cmd);

/* Command tables of the files below; the top level is in main.c. */
extern const struct ctl_cmd ctl_ipam_cmds[];
extern const struct ctl_cmd ctl_datastore_cmds[];
extern const struct ctl_cmd ctl_node_cmds[];
extern const struct ctl_cmd ctl_manifests_cmds[];
extern const struct ctl_cmd ctl_lab_cmds[];
extern const struct ctl_flag ctl_apply_flags[], ctl_get_flags[], ctl_delete_flags[];

/* Resource commands (resource_cmds.c). */
int cmd_apply(struct ctl *c, int argc, char **argv);
int cmd_create(struct ctl *c, int argc, char **argv);
int cmd_replace(struct ctl *c, int argc, char **argv);
int cmd_get(struct ctl *c, int argc, char **argv);
int cmd_delete(struct ctl *c, int argc, char **argv);

/* validate -f FILE: check resources or a lab topology without a datastore (validate.c). */
int cmd_validate(struct ctl *c, int argc, char **argv);
extern const struct ctl_flag ctl_validate_flags[];

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
