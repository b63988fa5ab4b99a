/* Reading a descriptor or a file whole into a strbuf, and writing a file whole
 * (lib/sys/strbuf_file.c). */
#ifndef BRINDLE_SYS_STRBUF_FILE_H
#define BRINDLE_SYS_STRBUF_FILE_H

#include <brindle/core/strbuf.h>

/* Read a whole file (or stdin for "-"); negative errno on failure. */
int sb_read_file(struct strbuf *sb, const char *path) must_check;
int sb_read_fd(struct strbuf *sb, int fd) must_check;
/* The same, refusing (-EFBIG, having read at most @max + 1 bytes) what is longer than @max. */
int sb_read_file_max(struct strbuf *sb, const char *path, size_t max) must_check;

#include <sys/types.h>

/* Every directory of @path made (0755) where missing; negative errno on failure. */
int file_make_dirs(const char *path) must_check;
/*
 * @len bytes as the whole of @path, through @path.tmp, fsync and a rename, with
 * @mode: a reader sees the old file or the new one, never half. The directory
 * is made when missing. Negative errno on failure (nothing left behind).
 */
int file_write_whole(const char *path, const void *data, size_t len, mode_t mode) must_check;

#endif
