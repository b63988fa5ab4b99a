/*
 * brindlectl validate: read files as apply would (decode, default, validate)
 * and say what is wrong with them, without a datastore. Every file is read and
 * every problem printed ("FILE: document N: FIELD: message"); nothing is
 * written anywhere. --topology checks a lab topology file instead (lab up's
 * checks, nothing built).
 */
#include "ctl.h"
#include "../lab/topology.h"

#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
	V_FILENAME,
	V_NAMESPACE,
	V_TOPOLOGY
};

const struct ctl_flag ctl_validate_flags[] = {
	[V_FILENAME] = { "--filename", "-f", "FILE",
			 "a file, - for standard input, or a directory of *.yaml, *.yml, *.json; "
			 "repeatable" },
	[V_NAMESPACE] = { "--namespace", "-n", "NS",
			  "namespace of namespaced kinds not given in the file (default: "
			  "default)" },
	[V_TOPOLOGY] = { "--topology", NULL, NULL,
			 "the files are lab topologies: lab up's checks, nothing built" },
	{ 0 },
};

static bool manifest_name(const char *name)
{
	return name[0] != '.' && (str_has_suffix(name, ".yaml") || str_has_suffix(name, ".yml") ||
				  str_has_suffix(name, ".json"));
}

struct seen {
	struct br_object **v;
	size_t n, cap;
};

/* One file: its problems on stderr; returns how many there were. */
static size_t validate_file(const char *path, const char *ns, bool topology, struct seen *seen)
{
	const char *source = streq(path, "-") ? "<stdin>" : path;
	struct strbuf text = STRBUF_INIT;
	sb_init(&text);
	int r = sb_read_file(&text, path);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", source, strerror(-r));
		sb_free(&text);
		return 1;
	}
	size_t problems = 0;
	if (topology) {
		struct arena *a = arena_new();
		struct strbuf err = STRBUF_INIT;
		struct lab_topology *t;
		sb_init(&err);
		if (lab_topology_parse(a, source, text.buf, text.len, &t, &err) < 0) {
			fprintf(stderr, "%s", sb_str(&err));
			for (size_t i = 0; i < err.len; i++)
				problems += err.buf[i] == '\n';
			if (!problems)
				problems = 1;
		} else {
			printf("%s: lab topology %s, valid\n", source, t->name);
		}
		sb_free(&err);
		arena_free(a);
		sb_free(&text);
		return problems;
	}
	struct model_errors errs = { 0 };
	struct br_object **objs;
	size_t n;
	if (model_read(source, text.buf, text.len, ns, &objs, &n, &errs) < 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		problems = errs.n ? errs.n : 1;
		model_errors_clear(&errs);
		sb_free(&text);
		return problems;
	}
	/* apply refuses an object named twice in one invocation; so does validate. */
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < seen->n; j++) {
			if (objs[i]->kind == seen->v[j]->kind &&
			    streq(objs[i]->meta.name, seen->v[j]->meta.name) &&
			    streq(objs[i]->meta.namespace, seen->v[j]->meta.namespace)) {
				char ref[256];
				fprintf(stderr, "%s: %s appears more than once in the input\n",
					source, ctl_resource_ref(objs[i], ref, sizeof(ref)));
				problems++;
				break;
			}
		}
		GROW(seen->v, seen->cap, seen->n + 1);
		seen->v[seen->n++] = objs[i];
	}
	free(objs);
	if (!problems)
		printf("%s: %zu resource%s, valid\n", source, n, n == 1 ? "" : "s");
	sb_free(&text);
	return problems;
}

static size_t validate_path(const char *path, const char *ns, bool topology, struct seen *seen)
{
	struct stat st;
	if (streq(path, "-") || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return validate_file(path, ns, topology, seen);
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	size_t problems = 0;
	for (int i = 0; i < n; i++) {
		if (manifest_name(names[i]->d_name)) {
			struct strbuf p = STRBUF_INIT;
			sb_init(&p);
			sb_addf(&p, "%s/%s", path, names[i]->d_name);
			problems += validate_file(p.buf, ns, topology, seen);
			sb_free(&p);
		}
		free(names[i]);
	}
	free(names);
	return problems;
}

int cmd_validate(struct ctl *c, int argc, char **argv)
{
	(void)c;
	struct ctl_parsed p;
	int ret = ctl_parse("validate", ctl_validate_flags, argc, argv, 1, &p);
	if (ret != CTL_OK)
		goto out;
	ret = CTL_USAGE;
	if (p.n_pos) {
		ctl_error("validate: unexpected argument \"%s\" (files come from -f FILE; see "
			  "brindlectl validate --help)",
			  p.pos[0]);
		goto out;
	}
	if (p.n[V_FILENAME] == 0) {
		ctl_error("validate: no file (-f FILE; see brindlectl validate --help)");
		goto out;
	}
	struct seen seen = { 0 };
	size_t problems = 0;
	for (size_t i = 0; i < p.n[V_FILENAME]; i++)
		problems += validate_path(p.all[V_FILENAME][i], p.value[V_NAMESPACE],
					  p.value[V_TOPOLOGY] != NULL, &seen);
	model_free_all(seen.v, seen.n);
	if (problems)
		ctl_error("%zu problem%s found", problems, problems == 1 ? "" : "s");
	ret = problems ? CTL_FAIL : CTL_OK;
out:
	ctl_parsed_free(&p);
	return ret;
}
