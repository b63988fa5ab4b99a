/*
 * brindlectl: what every command file shares: error messages, flag parsing and
 * the datastore, opened on first use. Calls nothing of the command files.
 */
#include "ctl.h"

#include <stdarg.h>
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

bool ctl_flag_value(struct ctl_args *a, const char *name, const char *short_name,
		    const char **value, bool *bad)
{
	const char *arg = a->argv[a->i];
	size_t n = strlen(name);
	if (strncmp(arg, name, n) == 0 && arg[n] == '=') {
		*value = arg + n + 1;
		return true;
	}
	if (strcmp(arg, name) == 0 || (short_name && strcmp(arg, short_name) == 0)) {
		if (a->i + 1 >= a->argc) {
			ctl_error("flag %s needs a value", arg);
			*bad = true;
			return true;
		}
		*value = a->argv[++a->i];
		return true;
	}
	if (short_name && strncmp(arg, short_name, strlen(short_name)) == 0 &&
	    arg[strlen(short_name)] == '=') {
		*value = arg + strlen(short_name) + 1;
		return true;
	}
	return false;
}

bool ctl_flag_bool(struct ctl_args *a, const char *name, const char *short_name)
{
	const char *arg = a->argv[a->i];
	return strcmp(arg, name) == 0 || (short_name && strcmp(arg, short_name) == 0);
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
