/*
 * Where a program of Brindle finds its siblings and its files: in the build
 * tree it was built in (it runs from there), else under the install prefix it
 * runs from (the directory above its own bin/ or sbin/, so an installed tree
 * can be moved, or staged with DESTDIR), else under the prefix it was
 * configured with (lib/sys/install.c, include/brindle/paths.h).
 */
#ifndef BRINDLE_SYS_INSTALL_H
#define BRINDLE_SYS_INSTALL_H

#include <brindle/core/arena.h>

#include <stdbool.h>

/* The directory of the running program, or "." when unknown. */
const char *install_exe_dir(struct arena *a);
/* Whether the running program is one of the build tree's (BRINDLE_BUILD_DIR/<component>/). */
bool install_in_build_tree(struct arena *a);
/*
 * @rel (a path of the install layout, relative to the prefix unless
 * absolute) under the prefix the running program is in (the directory above
 * its own) or else under the configured BRINDLE_INSTALL_PREFIX, whichever
 * exists (access @mode) first; when neither does, the first (for messages).
 */
const char *install_find(struct arena *a, const char *rel, int mode);

#endif
