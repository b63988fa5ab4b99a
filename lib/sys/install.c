/*
 * Locating the build tree or the install prefix a program runs from. Reads
 * /proc/self/exe and tests paths with access(); owns nothing.
 */
#include <brindle/paths.h>
#include <brindle/sys/install.h>

#include <limits.h>
#include <string.h>
#include <unistd.h>

const char *install_exe_dir(struct arena *a)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return ".";
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return ".";
	*slash = '\0';
	return arena_strdup(a, buf[0] ? buf : "/");
}

bool install_in_build_tree(struct arena *a)
{
	const char *dir = install_exe_dir(a);
	size_t n = strlen(BRINDLE_BUILD_DIR);
	/* Programs are built in <build>/<component>; a prefix inside the build tree is not it. */
	return strncmp(dir, BRINDLE_BUILD_DIR, n) == 0 && dir[n] == '/' &&
	       !strchr(dir + n + 1, '/');
}

/* @rel under the prefix the running program is in; not checked. */
static const char *prefix_path(struct arena *a, const char *rel)
{
	if (rel[0] == '/')
		return rel;
	const char *dir = install_exe_dir(a);
	const char *slash = strrchr(dir, '/');
	if (!slash) /* "." */
		return arena_printf(a, "../%s", rel);
	return arena_printf(a, "%.*s/%s", (int)(slash - dir), dir, rel);
}

const char *install_find(struct arena *a, const char *rel, int mode)
{
	const char *here = prefix_path(a, rel);
	if (access(here, mode) == 0 || rel[0] == '/')
		return here;
	const char *configured = arena_printf(a, "%s/%s", BRINDLE_INSTALL_PREFIX, rel);
	return access(configured, mode) == 0 ? configured : here;
}
