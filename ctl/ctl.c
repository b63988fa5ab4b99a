/*
 * brindlectl: what every command file shares: error messages, flag parsing and
 * the datastore, opened on first use. Calls nothing of the command files.
 */
#include "ctl.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void ctl_error(const char *fmt, ...)
{
	va_list ap;
	fputs("Error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static bool has_value_suffix(const char *arg, const char *name, const char **value)
{
	size_t n = strlen(name);
	if (strncmp(arg, name, n) != 0 || arg[n] != '=')
		return false;
	*value = arg + n + 1;
	return true;
}

int ctl_flag_match(const struct ctl_flag *f, int argc, char **argv, int *i, const char **value)
{
	const char *arg = argv[*i];
	if (streq(arg, f->name) || (f->short_name && streq(arg, f->short_name))) {
		if (!f->arg) {
			*value = "";
			return 1;
		}
		if (*i + 1 >= argc) {
			ctl_error("flag %s needs a value (%s)", arg, f->arg);
			return -1;
		}
		*value = argv[++*i];
		return 1;
	}
	if (f->arg && (has_value_suffix(arg, f->name, value) ||
		       (f->short_name && has_value_suffix(arg, f->short_name, value))))
		return 1;
	return 0;
}

int ctl_parse(const char *cmd, const struct ctl_flag *flags, int argc, char **argv, int first,
	      struct ctl_parsed *p)
{
	memset(p, 0, sizeof(*p));
	p->pos = xcalloc((size_t)argc + 1, sizeof(char *));
	for (int i = first; i < argc; i++) {
		const char *arg = argv[i];
		int r = 0;
		size_t k = 0;
		for (; flags && flags[k].name && r == 0; k++) {
			assert(k < CTL_MAX_FLAGS);
			const char *v;
			r = ctl_flag_match(&flags[k], argc, argv, &i, &v);
			if (r < 0)
				return CTL_USAGE;
			if (r == 0)
				continue;
			p->value[k] = v;
			if (!p->all[k])
				p->all[k] = xcalloc((size_t)argc, sizeof(char *));
			p->all[k][p->n[k]++] = v;
		}
		if (r)
			continue;
		if (arg[0] == '-' && arg[1] != '\0') {
			ctl_error("%s: unknown flag %s (see brindlectl %s --help)", cmd, arg, cmd);
			return CTL_USAGE;
		}
		p->pos[p->n_pos++] = argv[i];
	}
	return CTL_OK;
}

void ctl_parsed_free(struct ctl_parsed *p)
{
	for (size_t k = 0; k < CTL_MAX_FLAGS; k++)
		free(p->all[k]);
	free(p->pos);
	memset(p, 0, sizeof(*p));
}

/* "-f, --filename FILE"; "    --force" when others of the table have a short name */
static void flag_synopsis(struct strbuf *sb, const struct ctl_flag *f, bool indent)
{
	if (f->short_name)
		sb_addf(sb, "%s, ", f->short_name);
	else if (indent)
		sb_adds(sb, "    ");
	sb_adds(sb, f->name);
	if (f->arg)
		sb_addf(sb, " %s", f->arg);
}

static void print_flags(FILE *f, const char *heading, const struct ctl_flag *flags)
{
	if (!flags || !flags[0].name)
		return;
	int width = 0;
	bool indent = false;
	for (size_t k = 0; flags[k].name; k++)
		indent = indent || flags[k].short_name;
	for (size_t k = 0; flags[k].name; k++) {
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		flag_synopsis(&sb, &flags[k], indent);
		if ((int)sb.len > width)
			width = (int)sb.len;
		sb_free(&sb);
	}
	fprintf(f, "\n%s:\n", heading);
	for (size_t k = 0; flags[k].name; k++) {
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		flag_synopsis(&sb, &flags[k], indent);
		fprintf(f, "  %-*s  %s\n", width, sb_str(&sb), flags[k].help);
		sb_free(&sb);
	}
}

void ctl_help(FILE *f, const char *path, const struct ctl_cmd *cmd)
{
	bool has_flags = cmd->flags && cmd->flags[0].name;
	fprintf(f, "Usage: %s", path);
	if (cmd->subs && !cmd->args)
		fprintf(f, " COMMAND");
	if (cmd->args)
		fprintf(f, " %s", cmd->args);
	fprintf(f, "%s\n\n%s\n", has_flags ? " [flags]" : "", cmd->summary);
	if (cmd->subs) {
		int width = 0;
		for (size_t k = 0; cmd->subs[k].name; k++)
			if ((int)strlen(cmd->subs[k].name) > width)
				width = (int)strlen(cmd->subs[k].name);
		fprintf(f, "\nCommands:\n");
		for (size_t k = 0; cmd->subs[k].name; k++)
			fprintf(f, "  %-*s  %s\n", width, cmd->subs[k].name, cmd->subs[k].summary);
	}
	print_flags(f, cmd->subs ? "Global flags (every command takes them)" : "Flags", cmd->flags);
	if (cmd->subs)
		fprintf(f, "\nRun \"%s COMMAND --help\" for a command's arguments and flags.\n",
			path);
}

struct ds *ctl_ds(struct ctl *c)
{
	if (c->ds)
		return c->ds;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ds_config_from_env(&c->cfg, &c->storage, &err) < 0 ||
	    ds_open(&c->cfg, &c->ds, &err) < 0) {
		ctl_error("%s", sb_str(&err));
		c->ds = NULL;
	}
	sb_free(&err);
	return c->ds;
}
