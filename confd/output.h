/*
 * confd's edge to the filesystem and to BIRD: reading a template directory,
 * staging a rendered set, checking it with `bird -p -c`, installing it with
 * atomic renames, and asking BIRD to reload over its control socket.
 *
 * What counts as ours: the files of the rendered set in the output
 * directory (and our staging directories, ".stage-*", which are removed).
 * A set that fails the check is never installed; the installed set stays.
 */
#ifndef BRINDLE_CONFD_OUTPUT_H
#define BRINDLE_CONFD_OUTPUT_H

#include "render.h"

/* Every *.mustache file of @dir, compiled. */
int templates_load(const char *dir, struct render_templates **out, struct strbuf *err) must_check;

struct output;

/* @dir must exist. @bird_bin is the BIRD executable used for the check ("bird"). */
struct output *output_new(const char *dir, const char *bird_bin, int check_timeout_ms);
void output_free(struct output *o);

/* True when the files in the directory are exactly @r (so there is nothing to do). */
bool output_installed(const struct output *o, const struct render_output *r);

/*
 * Stage @r in a temporary directory next to the output, check it with
 * `bird -p -c`, and only if BIRD accepts it, rename the files into place
 * (includes first, the main file last) and remove files of the previously
 * installed set that are gone. Returns -EINVAL when BIRD rejects the set
 * (its message in @err), another negative errno when staging or the check
 * itself failed.
 */
int output_install(struct output *o, const struct render_output *r, struct strbuf *err) must_check;

/* `bird -p -c @main_path`: 0, or -EINVAL with BIRD's message in @err. */
int bird_check(const char *bird_bin, const char *main_path, int timeout_ms,
	       struct strbuf *err) must_check;

/*
 * Ask the BIRD at @socket to re-read its configuration (`configure`).
 * -ECONNREFUSED/-ENOENT when BIRD is not there, -EINVAL when it refuses the
 * configuration (its message in @err).
 */
int bird_reload(const char *socket, int timeout_ms, struct strbuf *err) must_check;

#endif
