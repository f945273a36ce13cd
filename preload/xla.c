/*
 * xla.c - XLA's fusions at their Python lines.
 *
 * An XLA program reaches the GPU as fusions compiled from a jitted function; every kernel's
 * Python frame is the line that called the jitted function (`step(params, x, y)`), not the line
 * in it that wrote the op. XLA keeps that line in each HLO instruction's metadata (op_name, and
 * source_file and source_line, or in newer XLA a stack_frame_id into the module's stack-frame
 * tables, read here too) and its GPU backend names a fusion's kernel after the instruction.
 * So, unless the user dumps HLO themselves or AICPROF_XLA_LINES=0, the constructor asks XLA to
 * dump its HLO as text into TRACE.xla/ (xla_lines_setup()); at exit xla_lines_emit() reads the
 * optimized modules (*after_optimizations.txt), writes one "xla" record per instruction that can
 * launch a kernel (a fusion or custom-call anywhere, any instruction of an ENTRY computation)
 * with its metadata, and removes the directory's tree (listed first, walked without following
 * links: XLA may write subdirectories), then writes a note with what it found. The analyzer maps
 * kernel names to these lines (analyzer/lines.c). What XLA dumps besides (before_optimizations,
 * other reports) is removed too, never read. Bounded: 64 MiB of text in all, lines over 64 KiB
 * skipped, 200k records. A directory that exists before the program starts is not used (it is
 * not ours to remove). Nothing here can fail the program: every error leaves the dump unread
 * (and the directory in place, named in a line on stderr when it cannot be removed).
 */
#include "preload/xla.h"
#include "preload/base.h"
#include "preload/jbuf.h"
#include "preload/writer.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dump_dir[1100]; /* "" when this process set no dump */

#define MAX_TEXT    ((size_t)64 << 20)
#define MAX_LINE    ((size_t)64 << 10)
#define MAX_RECORDS 200000

static const char dump_flag[] = "--xla_dump_to=";

/* The value of a flag token in flags (pointer into flags, length in *n), NULL when absent. */
static const char *flag_value(const char *flags, const char *flag, size_t *n)
{
	const char *p = flags;
	size_t fl = strlen(flag);
	while (p && (p = strstr(p, flag))) {
		if (p == flags || p[-1] == ' ' || p[-1] == '\t') {
			const char *v = p + fl;
			*n = strcspn(v, " \t");
			return v;
		}
		p += fl;
	}
	return NULL;
}

void xla_lines_setup(const char *trace_path, int inherited, char *mark, size_t msz, char *note,
                     size_t nsz)
{
	dump_dir[0] = 0;
	const char *xf = getenv("XLA_FLAGS");
	size_t vn = 0;
	const char *v = xf ? flag_value(xf, dump_flag, &vn) : NULL;
	if (v && !inherited) {
		snprintf(note, nsz, "user: the user dumps HLO (--xla_dump_to); not read");
		return;
	}
	if (!shim_cfg.xla_lines) {
		snprintf(note, nsz, "off (AICPROF_XLA_LINES=0)");
		return;
	}
	if (!trace_path || !*trace_path ||
	    snprintf(dump_dir, sizeof(dump_dir), "%s.xla", trace_path) >=
	        (int)sizeof(dump_dir) - 1) {
		dump_dir[0] = 0;
		snprintf(note, nsz, "off (the trace's path is too long)");
		return;
	}
	struct stat st;
	if (!lstat(dump_dir, &st)) {
		snprintf(note, nsz, "off (%.900s exists: it is not aicprof's to fill and remove)",
		         dump_dir);
		dump_dir[0] = 0;
		return;
	}
	/* an inherited dump flag gets this process's directory in place; else ours is appended */
	char flags[4096];
	struct jbuf b = {flags, 0, sizeof(flags) - 1, 0};
	if (xf && v) {
		jb_raw(&b, xf, (size_t)(v - xf));
		jb_s(&b, dump_dir);
		jb_s(&b, v + vn);
	} else {
		if (xf && *xf) {
			jb_s(&b, xf);
			jb_raw(&b, " ", 1);
		}
		jb_s(&b, dump_flag);
		jb_s(&b, dump_dir);
		if (!xf || !strstr(xf, "--xla_dump_hlo_as_text"))
			jb_s(&b, " --xla_dump_hlo_as_text");
	}
	if (b.overflow) {
		dump_dir[0] = 0;
		snprintf(note, nsz, "off (XLA_FLAGS too long to add the dump)");
		return;
	}
	flags[b.len] = 0;
	setenv("XLA_FLAGS", flags, 1);
	snprintf(note, nsz, "HLO dumped to %.900s and read at exit (set by aicprof)", dump_dir);
	size_t ml = strlen(mark);
	if (ml + 11 < msz)
		snprintf(mark + ml, msz - ml, "%sxla_lines", ml ? "," : "");
}

/* The quoted string after key= in s (escapes kept as their second character); "" when absent. */
static void meta_str(const char *s, const char *key, char *out, size_t on)
{
	out[0] = 0;
	const char *p = strstr(s, key);
	if (!p || p[strlen(key)] != '"')
		return;
	p += strlen(key) + 1;
	size_t n = 0;
	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 < on)
			out[n++] = *p;
	}
	out[n] = 0;
}

int xla_hlo_line(const char *s, char *name, size_t nn, char *op, size_t on, char *file, size_t fn,
                 int *line, int *kernel, int *frame)
{
	*frame = 0;
	const char *p = s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!strncmp(p, "ROOT ", 5))
		p += 5;
	if (*p == '%')
		p++;
	size_t k = 0;
	while (p[k] && p[k] != ' ' && p[k] != '=')
		k++;
	*kernel = 0;
	if (on)
		op[0] = 0;
	if (fn)
		file[0] = 0;
	*line = 0;
	if (!k || strncmp(p + k, " = ", 3) || !nn)
		return 0;
	const char *md = strstr(p + k, "metadata={");
	size_t i = 0;
	for (; i < k && i + 1 < nn; i++) {
		char c = p[i];
		name[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		              ? c
		              : '_';
	}
	name[i] = 0;
	/* the op: after the shape, which may be a tuple in parentheses */
	const char *q = p + k + 3;
	if (*q == '(') {
		int depth = 0;
		for (; *q; q++) {
			depth += *q == '(';
			depth -= *q == ')';
			if (!depth) {
				q++;
				break;
			}
		}
	} else {
		while (*q && *q != ' ')
			q++;
	}
	while (*q == ' ')
		q++;
	*kernel = !strncmp(q, "fusion(", 7) || !strncmp(q, "custom-call(", 12);
	if (!md)
		return 0;
	meta_str(md, "op_name=", op, on);
	meta_str(md, "source_file=", file, fn);
	const char *sl = strstr(md, "source_line=");
	*line = sl ? atoi(sl + 12) : 0;
	const char *sf = strstr(md, "stack_frame_id=");
	*frame = sf ? atoi(sf + 15) : 0;
	if (*frame < 0)
		*frame = 0;
	return (file[0] && *line > 0) || *frame > 0;
}

/*
 * The module's stack-frame tables: newer XLA prints metadata={... stack_frame_id=N} and, once
 * per module before its computations, the tables it indexes:
 *   FileNames      N "path"
 *   FunctionNames  N "name"
 *   FileLocations  N {file_name_id=F function_name_id=G line=L ...}
 *   StackFrames    N {file_location_id=K parent_frame_id=P}
 * each section ending at a blank line. A frame's own location is the innermost: its line.
 */
#define MAX_IDS 1000000
struct tables {
	char **names[2]; /* FileNames, FunctionNames: id -> string */
	int nnames[2];
	int (*locs)[3]; /* FileLocations: id -> file id, function id, line */
	int nlocs;
	int *frames; /* StackFrames: id -> file location id */
	int nframes;
};

static int grow_to(void **a, int *n, int id, size_t elem)
{
	if (id < 0 || id >= MAX_IDS)
		return -1;
	if (id < *n)
		return 0;
	int nn = *n ? *n : 64;
	while (nn <= id)
		nn *= 2;
	void *na = realloc(*a, (size_t)nn * elem);
	if (!na)
		return -1;
	memset((char *)na + (size_t)*n * elem, 0, (size_t)(nn - *n) * elem);
	*a = na, *n = nn;
	return 0;
}

/* The number after key= where key is a whole word ("line=" is not the tail of "end_line="). */
static int kv(const char *s, const char *key)
{
	for (const char *p = strstr(s, key); p; p = strstr(p + 1, key))
		if (p == s || p[-1] == ' ' || p[-1] == '{')
			return atoi(p + strlen(key));
	return 0;
}

/* One line of the tables' part of a module (section is the current one, -1 none). */
static void table_line(struct tables *t, int *section, const char *buf)
{
	static const char *const heads[] = {"FileNames", "FunctionNames", "FileLocations",
	                                    "StackFrames"};
	size_t n = strcspn(buf, "\r\n");
	if (!n) {
		*section = -1;
		return;
	}
	for (int i = 0; i < 4; i++)
		if (n == strlen(heads[i]) && !strncmp(buf, heads[i], n)) {
			*section = i;
			return;
		}
	if (*section < 0 || buf[0] < '0' || buf[0] > '9')
		return;
	int id = atoi(buf);
	const char *rest = strchr(buf, ' ');
	if (!rest)
		return;
	rest++;
	if (*section < 2 && *rest == '"') {
		char v[1024];
		meta_str(rest - 1, " ", v, sizeof(v)); /* the quoted string after the space */
		if (grow_to((void **)&t->names[*section], &t->nnames[*section], id, sizeof(char *)))
			return;
		free(t->names[*section][id]);
		t->names[*section][id] = strdup(v);
	} else if (*section == 2) {
		if (grow_to((void **)&t->locs, &t->nlocs, id, sizeof(*t->locs)))
			return;
		t->locs[id][0] = kv(rest, "file_name_id=");
		t->locs[id][1] = kv(rest, "function_name_id=");
		t->locs[id][2] = kv(rest, "line=");
	} else if (*section == 3) {
		if (grow_to((void **)&t->frames, &t->nframes, id, sizeof(int)))
			return;
		t->frames[id] = kv(rest, "file_location_id=");
	}
}

/* The frame's file, function and line; 0 when the tables do not have it. */
static int frame_at(const struct tables *t, int frame, const char **file, const char **func,
                    int *line)
{
	if (frame <= 0 || frame >= t->nframes)
		return 0;
	int loc = t->frames[frame];
	if (loc <= 0 || loc >= t->nlocs)
		return 0;
	int fi = t->locs[loc][0], gi = t->locs[loc][1];
	*file = fi > 0 && fi < t->nnames[0] ? t->names[0][fi] : NULL;
	*func = gi > 0 && gi < t->nnames[1] ? t->names[1][gi] : NULL;
	*line = t->locs[loc][2];
	return *file && *line > 0;
}

/*
 * A fusion that XLA made from others (a multi-output or merged fusion) may carry no source in
 * its own metadata (newer XLA writes only scheduling_name there); the instructions of the
 * computation it calls keep theirs. comps[] holds, per non-ENTRY computation of the module, the
 * first of its instructions with a source (pass one), and a kernel without one takes its
 * callee's (calls=%name).
 */
#define MAX_COMPS 65536
struct comp {
	char *name, *op, *file;
	int line, frame;
};
struct comps {
	struct comp *c;
	int n, a, cur; /* cur: the computation being read, -1 none */
};

static void comps_line(struct comps *cs, const char *buf)
{
	if (buf[0] == '}') {
		cs->cur = -1;
		return;
	}
	if (buf[0] != ' ' && buf[0] != '\t') {
		size_t n = strcspn(buf, "\r\n");
		cs->cur = -1;
		if (n < 2 || buf[n - 1] != '{' || !strncmp(buf, "ENTRY ", 6) ||
		    !strncmp(buf, "HloModule", 9) || cs->n >= MAX_COMPS)
			return;
		const char *p = buf[0] == '%' ? buf + 1 : buf;
		size_t k = strcspn(p, " (");
		if (!k || k > 400)
			return;
		if (cs->n == cs->a) {
			int na = cs->a ? 2 * cs->a : 64;
			struct comp *nc = realloc(cs->c, (size_t)na * sizeof(*nc));
			if (!nc)
				return;
			cs->c = nc, cs->a = na;
		}
		struct comp *c = &cs->c[cs->n];
		memset(c, 0, sizeof(*c));
		c->name = strndup(p, k);
		if (!c->name)
			return;
		cs->cur = cs->n++;
		return;
	}
	if (cs->cur < 0 || cs->c[cs->cur].op)
		return;
	char name[64], op[1024], file[1024];
	int line, kernel, frame;
	if (!xla_hlo_line(buf, name, sizeof(name), op, sizeof(op), file, sizeof(file), &line,
	                  &kernel, &frame))
		return;
	struct comp *c = &cs->c[cs->cur];
	c->op = strdup(op);
	c->file = strdup(file);
	c->line = line;
	c->frame = frame;
}

static int comp_cmp(const void *a, const void *b)
{
	return strcmp(((const struct comp *)a)->name, ((const struct comp *)b)->name);
}

/* The computation that a kernel instruction calls (calls=%name), NULL when unknown or without
 * a source; cs sorted by name (comp_cmp). */
static const struct comp *callee(const struct comps *cs, const char *buf)
{
	const char *p = strstr(buf, "calls=");
	if (!p || !cs->n)
		return NULL;
	p += 6;
	if (*p == '%')
		p++;
	char key[404];
	size_t k = strcspn(p, ", }\r\n");
	if (!k || k >= sizeof(key))
		return NULL;
	memcpy(key, p, k);
	key[k] = 0;
	struct comp probe = {.name = key};
	const struct comp *c = bsearch(&probe, cs->c, (size_t)cs->n, sizeof(*cs->c), comp_cmp);
	return c && c->op ? c : NULL;
}

static void comps_free(struct comps *cs)
{
	for (int i = 0; i < cs->n; i++) {
		free(cs->c[i].name);
		free(cs->c[i].op);
		free(cs->c[i].file);
	}
	free(cs->c);
	memset(cs, 0, sizeof(*cs));
}

static void tables_free(struct tables *t)
{
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < t->nnames[k]; i++)
			free(t->names[k][i]);
		free(t->names[k]);
	}
	free(t->locs);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}

/* The module's name from a dump file's: module_0003.jit_step.sm_9.0_gpu_after_... -> jit_step */
static void module_of(const char *fname, char *out, size_t on)
{
	const char *a = strchr(fname, '.');
	const char *b = a ? strchr(a + 1, '.') : NULL;
	if (!a || !b || (size_t)(b - a - 1) >= on) {
		snprintf(out, on, "%s", fname);
		return;
	}
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = 0;
}

static size_t text_read, records;
/* for the note: the first metadata seen without a source line, and the dump's first names, so
 * that a dump in another layout says what it looked like */
static char odd_meta[160], first_names[200];
static char cwd[1024];
static size_t cwd_len;

static void emit_file(const char *path, const char *fname)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char mod[256];
	module_of(fname, mod, sizeof(mod));
	char *buf = malloc(MAX_LINE + 2);
	char *rec = malloc(3 * MAX_LINE + 512);
	char name[512], op[1024], file[1024];
	int in_entry = 0, line, kernel, frame, skipping = 0, section = -1;
	/* first pass: the stack-frame tables (before the computations, but read whole) */
	struct tables t = {0};
	struct comps cs = {NULL, 0, 0, -1};
	size_t pass1 = 0;
	while (buf && fgets(buf, (int)MAX_LINE + 1, f) && (pass1 += strlen(buf)) <= MAX_TEXT) {
		table_line(&t, &section, buf);
		comps_line(&cs, buf);
	}
	if (cs.n)
		qsort(cs.c, (size_t)cs.n, sizeof(*cs.c), comp_cmp);
	rewind(f);
	while (buf && rec && records < MAX_RECORDS && fgets(buf, (int)MAX_LINE + 1, f)) {
		size_t n = strlen(buf);
		text_read += n;
		if (text_read > MAX_TEXT)
			break;
		if (n && buf[n - 1] != '\n' && !feof(f)) {
			skipping = 1; /* the rest of an over-long line: skipped */
			continue;
		}
		if (skipping) {
			skipping = 0;
			continue;
		}
		if (!strncmp(buf, "ENTRY ", 6))
			in_entry = 1;
		else if (buf[0] == '}')
			in_entry = 0;
		const char *func = NULL;
		int ok = xla_hlo_line(buf, name, sizeof(name), op, sizeof(op), file, sizeof(file),
		                      &line, &kernel, &frame);
		if (!ok && kernel) { /* a fusion without a source of its own: its callee's */
			const struct comp *c = callee(&cs, buf);
			if (c) {
				snprintf(file, sizeof(file), "%s", c->file ? c->file : "");
				if (!op[0])
					snprintf(op, sizeof(op), "%s", c->op ? c->op : "");
				line = c->line;
				frame = c->frame;
				ok = 1;
			}
		}
		if (ok && !(file[0] && line > 0)) {
			const char *ff = NULL;
			ok = frame_at(&t, frame, &ff, &func, &line);
			if (ok)
				snprintf(file, sizeof(file), "%s", ff);
		}
		if (!ok) {
			const char *md = strstr(buf, "metadata={");
			if (md && !odd_meta[0]) {
				snprintf(odd_meta, sizeof(odd_meta), "%.150s", md);
				odd_meta[strcspn(odd_meta, "\n")] = 0;
			}
			continue;
		}
		if (!(kernel || in_entry))
			continue;
		struct jbuf b = {rec, 0, 3 * MAX_LINE + 512, 0};
		jb_s(&b, "{\"t\":\"xla\"");
		jb_key(&b, "mod"), jb_str(&b, mod);
		jb_key(&b, "name"), jb_str(&b, name);
		jb_key(&b, "op"), jb_str(&b, op);
		/* relative to the working directory, as the shim's sites say (sites.c) */
		jb_key(&b, "file"),
		    jb_str(&b, cwd_len && !strncmp(file, cwd, cwd_len) ? file + cwd_len : file);
		jb_key(&b, "line"), jb_u64(&b, (uint64_t)line);
		if (func)
			jb_key(&b, "func"), jb_str(&b, func);
		jb_key(&b, "k"), jb_u64(&b, (uint64_t)kernel);
		jb_s(&b, "}");
		if (!b.overflow) {
			writer_meta(rec, b.len);
			records++;
		}
	}
	tables_free(&t);
	comps_free(&cs);
	free(buf);
	free(rec);
	fclose(f);
}

/* The dump's tree, listed before anything is read or removed: removing entries while readdir
 * walks them may skip some, and XLA may write into subdirectories. */
struct entry {
	char *path;
	int dir;
};
static struct entry *ents;
static size_t nents, aents;
static int walk_failed;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if (nents == aents) {
		size_t na = aents ? 2 * aents : 64;
		struct entry *ne = na < (1u << 20) ? realloc(ents, na * sizeof(*ents)) : NULL;
		if (!ne) {
			walk_failed = 1;
			return 1;
		}
		ents = ne, aents = na;
	}
	ents[nents].path = strdup(path);
	ents[nents].dir = flag == FTW_DP;
	if (ents[nents].path)
		nents++;
	/* a link or something unreadable is listed, removed as what it is, never followed */
	return 0;
}

void xla_lines_emit(int write)
{
	if (!dump_dir[0])
		return;
	struct stat st;
	if (lstat(dump_dir, &st) || !S_ISDIR(st.st_mode)) {
		dump_dir[0] = 0;
		return; /* XLA never ran in this process */
	}
	if (getcwd(cwd, sizeof(cwd) - 1)) {
		cwd_len = strlen(cwd);
		if (cwd_len && cwd[cwd_len - 1] != '/')
			cwd[cwd_len++] = '/', cwd[cwd_len] = 0;
	}
	nents = 0;
	walk_failed = 0;
	if (nftw(dump_dir, collect, 16, FTW_DEPTH | FTW_PHYS))
		walk_failed = 1;
	size_t files = 0, read = 0, left = 0;
	static const char tail[] = "after_optimizations.txt";
	for (size_t i = 0; write && i < nents; i++) {
		const char *base = strrchr(ents[i].path, '/');
		base = base ? base + 1 : ents[i].path;
		size_t n = strlen(base);
		if (ents[i].dir || lstat(ents[i].path, &st) || !S_ISREG(st.st_mode))
			continue;
		files++;
		size_t fl = strlen(first_names);
		if (files <= 3 && fl + n + 3 < sizeof(first_names))
			snprintf(first_names + fl, sizeof(first_names) - fl, "%s%s", fl ? ", " : "",
			         ents[i].path + strlen(dump_dir) + 1);
		if (n >= sizeof(tail) - 1 && !strcmp(base + n - (sizeof(tail) - 1), tail)) {
			emit_file(ents[i].path, base);
			read++;
		}
	}
	/* depth first: a directory comes after what it holds */
	for (size_t i = 0; i < nents; i++) {
		if (ents[i].dir ? rmdir(ents[i].path) : unlink(ents[i].path))
			left++;
		free(ents[i].path);
	}
	free(ents);
	ents = NULL;
	nents = aents = 0;
	if (write) {
		char note[1600];
		struct jbuf b = {note, 0, sizeof(note), 0};
		jb_s(&b, "{\"t\":\"note\",\"level\":\"info\",\"text\":");
		char text[700];
		snprintf(
		    text, sizeof(text),
		    "xla_lines: %zu files in the HLO dump, %zu optimized modules read, %zu xla "
		    "records, %zu entries not removed; files: %s; metadata without a source: %s",
		    files, read, records, left, first_names[0] ? first_names : "none",
		    odd_meta[0] ? odd_meta : "none");
		jb_str(&b, text);
		jb_s(&b, "}");
		if (!b.overflow)
			writer_meta(note, b.len);
	}
	if (left || walk_failed)
		shim_say("XLA's HLO dump %s could not be removed whole", dump_dir);
	dump_dir[0] = 0;
}

void xla_lines_after_fork(void)
{
	dump_dir[0] = 0;
}
