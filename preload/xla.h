/*
 * xla.h - XLA's fusions at their Python lines (xla.c): the shim asks XLA to dump its optimized
 * HLO beside the trace, and at exit turns each kernel-launching instruction's name and source
 * metadata into "xla" records of the trace (docs/trace-format.md), then removes the dump.
 */
#ifndef AICPROF_XLA_H
#define AICPROF_XLA_H

#include <stddef.h>

/*
 * From the constructor, before XLA reads its flags: unless AICPROF_XLA_LINES=0 or the user set
 * --xla_dump_to, appends --xla_dump_to=TRACE.xla and --xla_dump_hlo_as_text to XLA_FLAGS
 * (TRACE: the trace's path, known from the output pattern, the pid and the rank). A flag that a
 * parent process under the shim set (inherited, named in AICPROF_ENV_SET as "xla_lines") gets
 * this process's directory in place. Adds "xla_lines" to mark when it set the flag and writes what
 * it did into note (the header's "xla_lines"). Never fails the program: a path too long, or no
 * room in XLA_FLAGS, leaves the flags as they were with the reason in note.
 */
void xla_lines_setup(const char *trace_path, int inherited, char *mark, size_t msz, char *note,
                     size_t nsz);

/*
 * At exit, before the trace's last flush: reads the *after_optimizations.txt files of the dump
 * directory set up above (at most 64 MiB in all, lines over 64 KiB skipped), writes one "xla"
 * record per fusion or custom-call instruction (and per instruction of an ENTRY computation)
 * that carries source metadata, through writer_meta(), and removes the directory's files and
 * the directory. write 0: only removes them (a process that used XLA but never CUDA, so
 * records nothing). Does nothing when no directory was set up or XLA never wrote one.
 */
void xla_lines_emit(int write);

/* In a forked child: the dump is the parent's, never read or removed here. */
void xla_lines_after_fork(void);

/*
 * One line of HLO text: when it is an instruction whose metadata has a source file and line,
 * or a stack_frame_id (newer XLA: an index into the module's stack-frame tables), sets name (the
 * instruction's name with every character outside [A-Za-z0-9_] made '_', as XLA's GPU backend
 * names the kernel), op (metadata op_name, "" when absent), file (source_file, "" when absent),
 * *line (source_line, 0 when absent), *frame (stack_frame_id, 0 when absent) and *kernel (1 for
 * a fusion or custom-call), and returns 1; returns 0 for any other line. Exported for
 * tests/unit/test-xla.c.
 */
int xla_hlo_line(const char *s, char *name, size_t nn, char *op, size_t on, char *file, size_t fn,
                 int *line, int *kernel, int *frame);

#endif
