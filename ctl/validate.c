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

static int usage(FILE *f)
{
	fprintf(f, "Usage: brindlectl validate -f FILE [-f FILE...] [-n NS]\n"
		   "       brindlectl validate --topology -f FILE [-f FILE...]\n\n"
		   "Checks resources as apply reads them (every kind apply takes; -f - for "
		   "standard input,\n"
		   "a directory for its *.yaml, *.yml and *.json), or lab topology files, and "
		   "prints\n"
		   "every problem. Needs no datastore and writes nothing. Exit 0 when every file "
		   "is valid.\n");
	return f == stdout ? CTL_OK : CTL_USAGE;
}

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
	struct ctl_args a = { argc, argv, 1 };
	const char **files = xcalloc((size_t)argc, sizeof(char *));
	size_t n_files = 0;
	const char *ns = NULL;
	bool topology = false;
	int ret = CTL_USAGE;
	for (; a.i < argc; a.i++) {
		const char *v;
		bool bad = false;
		if (ctl_flag_value(&a, "--filename", "-f", &v, &bad)) {
			if (!bad)
				files[n_files++] = v;
		} else if (ctl_flag_value(&a, "--namespace", "-n", &v, &bad)) {
			ns = v;
		} else if (ctl_flag_bool(&a, "--topology", NULL)) {
			topology = true;
		} else if (ctl_flag_bool(&a, "--help", "-h")) {
			ret = usage(stdout);
			goto out;
		} else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0') {
			ctl_error("validate: unknown flag %s (see brindlectl validate --help)",
				  argv[a.i]);
			goto out;
		} else {
			ctl_error("validate: unexpected argument \"%s\" (files come from -f FILE)",
				  argv[a.i]);
			goto out;
		}
		if (bad)
			goto out;
	}
	if (n_files == 0) {
		usage(stderr);
		goto out;
	}
	struct seen seen = { 0 };
	size_t problems = 0;
	for (size_t i = 0; i < n_files; i++)
		problems += validate_path(files[i], ns, topology, &seen);
	model_free_all(seen.v, seen.n);
	if (problems)
		ctl_error("%zu problem%s found", problems, problems == 1 ? "" : "s");
	ret = problems ? CTL_FAIL : CTL_OK;
out:
	free(files);
	return ret;
}
