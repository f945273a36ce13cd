/*
 * source.c - reads the user's source files for the report's source lines (see source.h).
 *
 * Each file is read once, whole, and split into lines in place (a table of line starts);
 * a file that cannot be found is remembered as absent, so a thousand nodes of one missing
 * file cost one failed open per directory. A file with a NUL byte in its first 4 KiB is not
 * text and is treated as absent.
 */
#include "report/source.h"
#include "analyzer/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct srcfile {
	char *name;  /* as asked for */
	char *text;  /* NULL when absent */
	char **line; /* line[i] is line i+1, NUL-terminated */
	long nr_lines;
};

void srccache_init(struct srccache *c)
{
	memset(c, 0, sizeof(*c));
}

void srccache_add_dir(struct srccache *c, const char *dir)
{
	if (!dir || !*dir)
		return;
	for (int i = 0; i < c->nr_dirs; i++)
		if (!strcmp(c->dirs[i], dir))
			return;
	ALLOC_GROW(c->dirs, c->nr_dirs, c->alloc_dirs);
	c->dirs[c->nr_dirs++] = xstrdup(dir);
}

void srccache_release(struct srccache *c)
{
	for (int i = 0; i < c->nr; i++) {
		free(c->files[i].name);
		free(c->files[i].text);
		free(c->files[i].line);
	}
	free(c->files);
	for (int i = 0; i < c->nr_dirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	memset(c, 0, sizeof(*c));
}

int source_split(const char *loc, char **file, long *line)
{
	if (!loc)
		return -1;
	const char *colon = strrchr(loc, ':');
	if (!colon || colon == loc || !isdigit((unsigned char)colon[1]))
		return -1;
	char *end;
	long l = strtol(colon + 1, &end, 10);
	if (*end || l <= 0)
		return -1;
	*file = xmalloc((size_t)(colon - loc) + 1);
	memcpy(*file, loc, (size_t)(colon - loc));
	(*file)[colon - loc] = 0;
	*line = l;
	return 0;
}

/* Reads path whole if it is a regular file under 8 MiB of text; NULL otherwise. */
static char *read_text(const char *path, size_t *len)
{
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (8 << 20))
		return NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = xmalloc((size_t)st.st_size + 1);
	size_t n = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	buf[n] = 0;
	if (memchr(buf, 0, n < 4096 ? n : 4096)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static struct srcfile *srccache_open(struct srccache *c, const char *file)
{
	for (int i = 0; i < c->nr; i++)
		if (!strcmp(c->files[i].name, file))
			return &c->files[i];
	ALLOC_GROW(c->files, c->nr, c->alloc);
	struct srcfile *sf = &c->files[c->nr++];
	memset(sf, 0, sizeof(*sf));
	sf->name = xstrdup(file);
	size_t len = 0;
	if (file[0] == '/') {
		sf->text = read_text(file, &len);
	} else {
		for (int i = 0; i < c->nr_dirs && !sf->text; i++) {
			char *p = path_join(c->dirs[i], file);
			sf->text = read_text(p, &len);
			free(p);
		}
	}
	if (!sf->text)
		return sf;
	long alloc = 0;
	char *s = sf->text;
	while (s < sf->text + len) {
		ALLOC_GROW(sf->line, sf->nr_lines, alloc);
		sf->line[sf->nr_lines++] = s;
		char *nl = memchr(s, '\n', (size_t)(sf->text + len - s));
		if (!nl)
			break;
		*nl = 0;
		s = nl + 1;
	}
	return sf;
}

const char *source_line(struct srccache *c, const char *file, long line)
{
	if (!file || !*file || line <= 0)
		return NULL;
	struct srcfile *sf = srccache_open(c, file);
	if (!sf->text || line > sf->nr_lines)
		return NULL;
	char *s = sf->line[line - 1];
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = 0;
	if (n > 240) {
		n = 240;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		s[n] = 0;
	}
	return s;
}
