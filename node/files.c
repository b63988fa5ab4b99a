/* What node/'s commands share: the environment and atomic file writes (node.h). */
#include "node.h"

#include <brindle/sys/log.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *node_env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

int node_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int r = file_write_whole(path, data, len, mode);
	if (r < 0)
		log_error("writing %s: %s", path, strerror(-r));
	return r;
}
