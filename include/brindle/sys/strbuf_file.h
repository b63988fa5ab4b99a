/* Reading a descriptor or a file whole into a strbuf (lib/sys/strbuf_file.c). */
#ifndef BRINDLE_SYS_STRBUF_FILE_H
#define BRINDLE_SYS_STRBUF_FILE_H

#include <brindle/core/strbuf.h>

/* Read a whole file (or stdin for "-"); negative errno on failure. */
int sb_read_file(struct strbuf *sb, const char *path) must_check;
int sb_read_fd(struct strbuf *sb, int fd) must_check;

#endif
