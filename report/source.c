/*
 * source.c - reads the user's source files for the report's source lines (see source.h).
 *
 * Each file is read once, whole, and split into lines in place (a table of line starts);
 * a file that cannot be found is remembered as absent, so a thousand nodes of one missing
 * file cost one failed open per directory. A file with a NUL byte in its first 4 KiB is not
 * text and is treated as absent.
 *
 * The names come from the trace, which is input: a hostile one may say "/etc/shadow",
 * "../../.ssh/id_rsa" or "/proc/self/mem", and its header's cwd may be "/" or a home. So each
 * directory the cache is given is a tree of the program only when its real path is none of:
 * "/", a home directory or a directory holding one (an ancestor of $HOME or of a passwd
 * entry's home, /root, /home/NAME), a system directory or a directory below one (/usr, /etc,
 * /proc, /sys, /dev, /boot, /run, /bin, /sbin, /lib*, /var but for its tmp), a shared
 * directory itself (/tmp, /var/tmp, /opt, /srv, /mnt, /media), nor a path with a hidden
 * component (".ssh", ".config"). A refused directory is not looked in at all. A file is read
 * only when (1) its name ends in a source extension (.py, .c, .cu, ...), (2) its real path
 * (symbolic links and ".." resolved by realpath) lies inside the real path of the directory it
 * was looked up in, or, for an absolute name, inside one of the accepted trees, with no hidden
 * component and no site-packages or dist-packages component below the tree (library code is
 * not the program's), and (3) what was opened is a regular file of at most SRC_MAX bytes:
 * opened with O_NONBLOCK|O_NOCTTY (a FIFO swapped in cannot block), checked with fstat on the
 * open descriptor, and read no further than SRC_MAX.
 */
#include "report/source.h"
#include "lib/util.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC_MAX (8 << 20)

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

void srccache_release(struct srccache *c)
{
	for (int i = 0; i < c->nr; i++) {
		free(c->files[i].name);
		free(c->files[i].text);
		free(c->files[i].line);
	}
	free(c->files);
	for (int i = 0; i < c->nr_dirs; i++) {
		free(c->dirs[i]);
		free(c->real[i]);
	}
	free(c->dirs);
	free(c->real);
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

/* Source files by name: what a traced program's launch sites can be. */
static int source_name_ok(const char *file)
{
	static const char *const ext[] = {".py",  ".pyx", ".c",  ".cc",  ".cpp", ".cxx", ".cu",
	                                  ".cuh", ".h",   ".hh", ".hpp", ".hxx", ".inl", ".f90"};
	const char *slash = strrchr(file, '/');
	const char *dot = strrchr(slash ? slash + 1 : file, '.');
	if (!dot)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(ext); i++)
		if (!strcmp(dot, ext[i]))
			return 1;
	return 0;
}

/* Whether real path p is dir (a real path) or below it. */
static int path_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return p[0] == '/';
	return !strncmp(p, dir, n) && (p[n] == '/' || p[n] == 0);
}

/* Whether real path p is an ancestor of dir, or dir itself. */
static int path_holds(const char *p, const char *dir)
{
	return path_under(dir, p);
}

/* Whether real path p has a component starting with '.' at or after offset from. */
static int path_hidden(const char *p, size_t from)
{
	for (const char *s = p + from; (s = strchr(s, '/')); s++)
		if (s[1] == '.')
			return 1;
	return 0;
}

/* Whether real path p has a component naming a library install (site-packages, ...). */
static int path_library(const char *p, size_t from)
{
	static const char *const lib[] = {"/site-packages/", "/dist-packages/"};
	for (size_t i = 0; i < ARRAY_SIZE(lib); i++)
		if (strstr(p + from, lib[i]))
			return 1;
	return 0;
}

/* Whether real directory p holds or is a home directory (see the header). */
static int path_holds_home(const char *p)
{
	if (!strcmp(p, "/root") || (!strncmp(p, "/home/", 6) && p[6] && !strchr(p + 6, '/')))
		return 1;
	const char *env = getenv("HOME");
	char *h = env && *env ? realpath(env, NULL) : NULL;
	int hit = h && path_holds(p, h);
	free(h);
	if (hit)
		return 1;
	struct passwd *pw;
	setpwent();
	while (!hit && (pw = getpwent()))
		if (pw->pw_dir && pw->pw_dir[0] == '/' && strcmp(pw->pw_dir, "/"))
			hit = path_holds(p, pw->pw_dir);
	endpwent();
	return hit;
}

/* Whether real directory p may be a tree of the program (see the header). */
static int tree_ok(const char *p)
{
	static const char *const sys[] = {"/bin",   "/boot",  "/dev",    "/etc",  "/lib",
	                                  "/lib32", "/lib64", "/libx32", "/proc", "/run",
	                                  "/sbin",  "/sys",   "/usr",    "/var"};
	static const char *const shared[] = {"/tmp", "/var/tmp", "/opt", "/srv", "/mnt", "/media"};
	for (size_t i = 0; i < ARRAY_SIZE(shared); i++)
		if (!strcmp(p, shared[i]))
			return 0;
	for (size_t i = 0; i < ARRAY_SIZE(sys); i++)
		if (path_holds(p, sys[i]) || (path_under(p, sys[i]) && !path_under(p, "/var/tmp")))
			return 0;
	return !path_hidden(p, 0) && !path_library(p, 0) && !path_holds_home(p);
}

void srccache_add_dir(struct srccache *c, const char *dir)
{
	if (!dir || !*dir)
		return;
	for (int i = 0; i < c->nr_dirs; i++)
		if (!strcmp(c->dirs[i], dir))
			return;
	char *real = realpath(dir, NULL);
	if (real && !tree_ok(real)) {
		free(real);
		real = NULL;
	}
	ALLOC_GROW(c->dirs, c->nr_dirs, c->alloc_dirs);
	ALLOC_GROW(c->real, c->nr_real, c->alloc_real);
	c->dirs[c->nr_dirs++] = xstrdup(dir);
	c->real[c->nr_real++] = real;
}

/*
 * Reads path whole if its real path lies under one of the real directories base[0..nbase) and
 * it is a regular file of at most SRC_MAX bytes of text; NULL otherwise.
 */
static char *read_text(const char *path, char *const *base, int nbase, size_t *len)
{
	char *real = realpath(path, NULL);
	if (!real)
		return NULL;
	int under = 0;
	for (int i = 0; i < nbase && !under; i++)
		under = base[i] && path_under(real, base[i]) &&
		        !path_hidden(real, strlen(base[i])) && !path_library(real, strlen(base[i]));
	if (!under) {
		free(real);
		return NULL;
	}
	int fd = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	free(real);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SRC_MAX) {
		close(fd);
		return NULL;
	}
	size_t cap = (size_t)st.st_size, n = 0;
	char *buf = xmalloc(cap + 1);
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
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
	if (!source_name_ok(file))
		return sf;
	char **real = c->real;
	if (file[0] == '/') {
		sf->text = read_text(file, real, c->nr_dirs, &len);
	} else {
		for (int i = 0; i < c->nr_dirs && !sf->text; i++) {
			if (!real[i])
				continue;
			char *p = path_join(c->dirs[i], file);
			sf->text = read_text(p, &real[i], 1, &len);
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
