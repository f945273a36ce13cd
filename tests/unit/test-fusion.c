/*
 * test-fusion.c - unit tests of fusion/: the op table, the group parser on the fixtures of
 * tests/fusion (good ones parse to the expected structure; each bad one fails with a message
 * naming the file and the fault), and the emitted code (vectorised path, kept values written,
 * dropout's keep probability and scaling, alignment fallback, the reference and the checks of
 * the bench harness); index maps: their parse rules, the map function, the kernel's loads,
 * the CPU check's second form and the refusals of the forms that cannot read through one.
 */
#include "fusion/fusion.h"

#include <cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static char *fixture(const char *name)
{
	const char *top = getenv("AICPROF_TOP");
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/tests/fusion/%s", top && *top ? top : ".", name);
	return sb.buf;
}

static void parse_ok(const char *name, struct fgroup *g)
{
	char *p = fixture(name);
	struct strbuf err = STRBUF_INIT;
	int rc = fgroup_parse_file(p, g, &err);
	if (rc)
		print_error("%s\n", err.buf);
	assert_int_equal(rc, 0);
	strbuf_release(&err);
	free(p);
}

/* Parses a bad fixture; the message must name the file and contain each of the needles. */
static void parse_bad(const char *name, const char *needle1, const char *needle2)
{
	char *p = fixture(name);
	struct fgroup g;
	struct strbuf err = STRBUF_INIT;
	assert_int_equal(fgroup_parse_file(p, &g, &err), -1);
	assert_non_null(err.buf);
	if (!strstr(err.buf, name) || !strstr(err.buf, needle1) ||
	    (needle2 && !strstr(err.buf, needle2)))
		print_error("message: %s\n", err.buf);
	assert_non_null(strstr(err.buf, name));
	assert_non_null(strstr(err.buf, needle1));
	if (needle2)
		assert_non_null(strstr(err.buf, needle2));
	assert_null(g.values);
	strbuf_release(&err);
	free(p);
}

static void test_optable(void **state)
{
	(void)state;
	static const char *vocab[] = {"add",
	                              "sub",
	                              "mul",
	                              "div",
	                              "neg",
	                              "relu",
	                              "gelu",
	                              "gelu_tanh",
	                              "silu",
	                              "sigmoid",
	                              "tanh",
	                              "exp",
	                              "log",
	                              "sqrt",
	                              "rsqrt",
	                              "scale",
	                              "add_scalar",
	                              "cast",
	                              "where",
	                              "masked_fill",
	                              "dropout",
	                              "layer_norm",
	                              "rms_norm",
	                              "softmax",
	                              "log_softmax",
	                              "log_softmax_backward",
	                              "layer_norm_backward",
	                              "rms_norm_backward",
	                              "col_sum",
	                              "gelu_backward",
	                              "gelu_tanh_backward",
	                              "relu_backward",
	                              "silu_backward",
	                              "sigmoid_backward",
	                              "tanh_backward",
	                              "abs",
	                              "sin",
	                              "cos",
	                              "pow",
	                              "threshold_backward",
	                              "gt",
	                              "lt",
	                              "ge",
	                              "le",
	                              "eq",
	                              "ne",
	                              "fill"};
	for (size_t i = 0; i < ARRAY_SIZE(vocab); i++) {
		const struct fop *op = fop_lookup(vocab[i]);
		assert_non_null(op);
		assert_string_equal(op->name, vocab[i]);
		if (op->kind == FOP_EW) {
			assert_non_null(op->expr);
			assert_non_null(op->ref);
		}
	}
	assert_int_equal(fop_count, ARRAY_SIZE(vocab));
	assert_null(fop_lookup("frobnicate"));
	assert_null(fop_lookup(""));
	assert_int_equal(fop_lookup("softmax")->kind, FOP_REDUCE);
	assert_int_equal(fop_lookup("dropout")->need, FOP_NEED_P);
	assert_int_equal(fop_lookup("layer_norm")->max_args, 3);
	assert_int_equal(fop_lookup("log_softmax_backward")->kind, FOP_REDUCE);
	assert_int_equal(fop_lookup("log_softmax_backward")->min_args, 2);
	assert_int_equal(fop_lookup("layer_norm_backward")->max_args, 5);
	assert_int_equal(fop_lookup("col_sum")->kind, FOP_COLSUM);
	assert_int_equal(fop_lookup("col_sum")->max_args, 1);
	assert_int_equal(fop_lookup("gelu_backward")->min_args, 2);
	assert_non_null(strstr(fop_lookup("gelu_backward")->expr, "erff($1"));
	enum fdtype t;
	assert_int_equal(fdtype_parse("bfloat16", &t), 0);
	assert_int_equal(t, FD_BF16);
	assert_int_equal(fdtype_parse("fp32", &t), 0);
	assert_int_equal(t, FD_F32);
	assert_int_equal(fdtype_parse("int8", &t), -1);
	assert_int_equal(fdtype_size(FD_F16), 2);
	assert_string_equal(fdtype_ctype(FD_BF16), "__nv_bfloat16");
}

static void test_parse_mlp(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("mlp.json", &g);
	assert_string_equal(g.name, "mlp_gelu_dropout_add");
	assert_int_equal(g.kind, FG_CHAIN);
	assert_int_equal(g.dtype, FD_BF16);
	assert_int_equal(g.numel, 33554432);
	assert_int_equal(g.ninputs, 2);
	assert_int_equal(g.nops, 3);
	assert_int_equal(g.nvalues, 5);
	assert_int_equal(g.ndrop, 1);
	assert_int_equal(g.ops[1].drop, 0);
	assert_true(g.ops[1].p > 0.0999 && g.ops[1].p < 0.1001);
	assert_int_equal(g.ops[2].arg[0], g.ops[1].out);
	assert_int_equal(g.ops[2].arg[1], 1);
	assert_int_equal(g.nwrites, 1);
	assert_string_equal(g.values[g.writes[0].value].name, "y");
	assert_int_equal(g.values[0].id, 12);
	assert_int_equal(fgroup_max_vec(&g), 8);
	/* fused: h, res read and y written once; unfused: 3 reads, 3 writes and one more read */
	assert_true(fgroup_bytes_fused(&g) == 3.0 * 33554432 * 2);
	assert_true(fgroup_bytes_unfused(&g) == 7.0 * 33554432 * 2);
	char *key = fgroup_key(&g);
	assert_non_null(strstr(key, "ew:bf16:"));
	assert_non_null(strstr(key, "gelu(0)"));
	free(key);
	fgroup_release(&g);
}

static void test_parse_rows(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("attn.json", &g);
	assert_int_equal(g.kind, FG_ROW);
	assert_int_equal(g.numel, 65536L * 1024);
	assert_int_equal(g.red, 2);
	assert_true(g.ops[1].causal);
	assert_true(g.ops[1].num < 0 && isinf(g.ops[1].num));
	assert_int_equal(g.nwrites, 2);
	assert_true(g.writes[1].kept);
	assert_string_equal(g.values[g.writes[1].value].name, "p");
	fgroup_release(&g);

	parse_ok("ln_gelu.json", &g);
	assert_int_equal(g.red, 0);
	assert_int_equal(g.values[1].numel, 4096);
	assert_int_equal(g.ops[0].nargs, 3);
	assert_true(g.ops[0].num > 0.9e-5 && g.ops[0].num < 1.1e-5);
	fgroup_release(&g);

	parse_ok("f32chain.json", &g);
	assert_int_equal(g.dtype, FD_F32);
	assert_int_equal(fgroup_max_vec(&g), 4);
	assert_int_equal(g.nops, 4);
	fgroup_release(&g);

	/* a column group's vector width comes from what streams at full size (bf16 y, dy, x), not
	 * from its f32 per-column mean and invstd nor its f32 column sums */
	parse_ok("bnr.json", &g);
	assert_int_equal(g.kind, FG_COL);
	assert_int_equal(fgroup_max_vec(&g), 8);
	fgroup_release(&g);
	/* ... but a full-size f32 input holds it to 4 */
	parse_ok("gbb.json", &g);
	assert_int_equal(fgroup_max_vec(&g), 4);
	fgroup_release(&g);
	/* a row group keeps the rule of every value: RMSNorm over bf16, computed in f32 (the
	 * streamed tensors alone would give 8) */
	parse_ok("rms_bf16.json", &g);
	assert_int_equal(g.kind, FG_ROW);
	assert_int_equal(fgroup_max_vec(&g), 4);
	fgroup_release(&g);
}

/* A column group: layer norm's dgamma and dbeta after the cast of dy (tests/fusion/gbb.json). */
static void test_parse_cols(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("gbb.json", &g);
	assert_int_equal(g.kind, FG_COL);
	assert_int_equal(g.rows, 4096);
	assert_int_equal(g.cols, 1024);
	assert_int_equal(g.numel, 4096L * 1024);
	assert_int_equal(g.ncolsum, 2);
	assert_int_equal(g.red, -1);
	assert_true(g.values[1].per_row && g.values[2].per_row);
	assert_int_equal(g.values[1].numel, 4096);
	/* the col_sums' results are per column, the per-element values are not */
	assert_false(g.values[g.ops[3].out].per_col);
	assert_true(g.values[g.ops[4].out].per_col);
	assert_int_equal(g.values[g.ops[4].out].numel, 1024);
	assert_int_equal(g.nwrites, 2);
	assert_int_equal(fgroup_write_numel(&g, 0), 1024);
	/* fused: dy16 (bf16), x (f32), mean and rstd read once, dgamma and dbeta written once */
	assert_true(fgroup_bytes_fused(&g) == 4194304.0 * 6 + 4096 * 8 + 1024 * 8);
	/* unfused: the cast, sub, two muls over all elements, then the two column sums */
	double full = 4194304.0;
	double unf = (full * 2 + full * 4) + (full * 4 + 4096 * 4 + full * 4) +
	             (full * 4 + 4096 * 4 + full * 4) + (full * 8 + full * 4) +
	             (full * 4 + 1024 * 4) + (full * 4 + 1024 * 4);
	assert_true(fgroup_bytes_unfused(&g) == unf);
	char *key = fgroup_key(&g);
	assert_non_null(strstr(key, "col:f32:4096x1024:"));
	free(key);
	fgroup_release(&g);

	/* batch norm's per-channel sums: a kept full-size write, an op on a sum and a
	 * per-channel input (tests/fusion/bnb.json) */
	parse_ok("bnb.json", &g);
	assert_int_equal(g.kind, FG_COL);
	assert_int_equal(g.ncolsum, 2);
	assert_int_equal(g.nwrites, 4);
	assert_true(g.writes[3].kept);
	assert_int_equal(g.writes[3].dtype, FD_BF16);
	assert_int_equal(fgroup_write_numel(&g, 3), 8192L * 256);
	assert_int_equal(fgroup_write_numel(&g, 2), 256);
	assert_true(g.values[g.ops[6].out].per_col);
	fgroup_release(&g);

	/* ResNet's batch norm backward reduce (tests/fusion/bnr.json, the analyzer's group for
	 * batch_norm_backward_reduce_channels_last_kernel): four per-channel writes, grad_bias a
	 * cast of sum_dy (one write a value), relu's backward kept */
	parse_ok("bnr.json", &g);
	assert_int_equal(g.kind, FG_COL);
	assert_int_equal(g.ncolsum, 2);
	assert_int_equal(g.nwrites, 5);
	for (int w = 0; w < 4; w++) {
		assert_false(g.writes[w].kept);
		assert_int_equal(g.writes[w].dtype, FD_F32);
		assert_int_equal(fgroup_write_numel(&g, w), 128);
	}
	assert_true(g.writes[4].kept);
	assert_int_equal(fgroup_write_numel(&g, 4), 6272L * 128);
	assert_true(g.values[g.ops[7].out].per_col); /* the cast of a sum */
	assert_false(g.values[g.ops[2].out].per_col);
	fgroup_release(&g);
}

static void test_parse_bad(void **state)
{
	(void)state;
	parse_bad("bad-unknown-op.json", "ops[1]", "unknown op 'frobnicate'");
	parse_bad("bad-missing-field.json", "ops[0] (dropout)", "missing field 'p'");
	parse_bad("bad-wrong-type.json", "'numel'", "must be a number, not a string");
	parse_bad("bad-undefined-arg.json", "undefined name 'bias'", NULL);
	parse_bad("bad-cycle.json", "'b' is defined by a later op", "cycle");
	parse_bad("no-such-file.json", "cannot open", NULL);
}

/* Parses text (a group) and expects failure with needle in the message. */
static void parse_text_bad(const char *text, const char *needle)
{
	cJSON *j = cJSON_Parse(text);
	assert_non_null(j);
	struct fgroup g;
	struct strbuf err = STRBUF_INIT;
	assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &err), -1);
	if (!strstr(err.buf, needle))
		print_error("message: %s\n", err.buf);
	assert_non_null(strstr(err.buf, "t.json: "));
	assert_non_null(strstr(err.buf, needle));
	strbuf_release(&err);
	cJSON_Delete(j);
}

#define HEAD    "{\"kind\": \"elementwise-chain\", \"dtype\": \"f32\", \"numel\": 64, "
#define COLHEAD "{\"kind\": \"column-reduction\", \"dtype\": \"f32\", \"rows\": 4, \"cols\": 16, "
#define ROWHEAD                                                                                    \
	"{\"kind\": \"reduction-epilogue\", \"dtype\": \"bf16\", \"rows\": 4, \"cols\": 16, "

static void test_parse_rules(void **state)
{
	(void)state;
	/* fill: "value" required and a number (or inf/-inf/nan), no tensor arguments, and a
	 * group reads at least one tensor */
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"fill\", "
	                    "\"args\": [], \"out\": \"c\"}], \"outputs\": [{\"name\": \"c\"}]}",
	               "ops[0] (fill): missing field 'value'");
	parse_text_bad(
	    HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"fill\", "
	         "\"args\": [], \"value\": \"zero\", \"out\": \"c\"}], "
	         "\"outputs\": [{\"name\": \"c\"}]}",
	    "ops[0] (fill): field 'value' must be a number, \"inf\", \"-inf\" or \"nan\", "
	    "not \"zero\"");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"fill\", "
	                    "\"args\": [], \"value\": [1], \"out\": \"c\"}], "
	                    "\"outputs\": [{\"name\": \"c\"}]}",
	               "ops[0] (fill): field 'value' must be a number, not an array");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"fill\", "
	                    "\"args\": [\"x\"], \"value\": 1, \"out\": \"c\"}], "
	                    "\"outputs\": [{\"name\": \"c\"}]}",
	               "'fill' takes 0 arguments, not 1");
	parse_text_bad(HEAD "\"inputs\": [], \"ops\": [{\"op\": \"fill\", \"args\": [], "
	                    "\"value\": 1, \"out\": \"c\"}], \"outputs\": [{\"name\": \"c\"}]}",
	               "'inputs' is empty: a group reads at least one tensor");
	{
		cJSON *j = cJSON_Parse(HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": "
		                            "\"fill\", \"args\": [], \"value\": \"-inf\", \"out\": "
		                            "\"c\"}, {\"op\": \"add\", \"args\": [\"x\", \"c\"], "
		                            "\"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}");
		struct fgroup g;
		struct strbuf err = STRBUF_INIT;
		assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &err), 0);
		assert_true(g.ops[0].num < 0 && isinf(g.ops[0].num));
		fgroup_release(&g);
		strbuf_release(&err);
		cJSON_Delete(j);
	}
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 3}], \"ops\": [{\"op\": "
	                    "\"relu\", \"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": "
	                    "[{\"name\": \"y\"}]}",
	               "does not divide");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"add\", \"args\": "
	               "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "takes 2 arguments, not 1");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"relu\", \"args\": "
	               "[\"x\"], \"out\": \"x\"}], \"outputs\": [{\"name\": \"x\"}]}",
	               "defined twice");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"softmax\", "
	               "\"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "must be \"reduction-epilogue\"");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"dropout\", "
	                    "\"args\": [\"x\"], \"p\": 1.0, \"out\": \"y\"}], \"outputs\": "
	                    "[{\"name\": \"y\"}]}",
	               "'p' must be in [0, 1)");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"relu\", \"args\": "
	               "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"x\"}]}",
	               "is an input");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"dtype\": \"int8\"}], \"ops\": [], "
	                    "\"outputs\": []}",
	               "'ops' is empty");
	parse_text_bad(ROWHEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"scale\", "
	               "\"args\": [\"x\"], \"scalar\": 2, \"out\": \"s\"}, {\"op\": "
	               "\"exp\", \"args\": [\"s\"], \"out\": \"e\"}, {\"op\": \"softmax\", "
	               "\"args\": [\"e\"], \"out\": \"p\"}, {\"op\": \"add\", \"args\": "
	               "[\"p\", \"s\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "uses prologue value 's' after the reduction");
	parse_text_bad(ROWHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"relu\", "
	                       "\"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": "
	                       "\"y\"}]}",
	               "needs one of softmax");
	/* log_softmax_backward reads the forward's result per element, not per column */
	parse_text_bad(ROWHEAD "\"inputs\": [{\"name\": \"dy\"}, {\"name\": \"y\", \"numel\": "
	                       "16}], \"ops\": [{\"op\": \"log_softmax_backward\", \"args\": "
	                       "[\"dy\", \"y\"], \"out\": \"g\"}], \"outputs\": [{\"name\": "
	                       "\"g\"}]}",
	               "the forward's result) must be an input of all 64 elements");
	/* layer_norm_backward: mean and rstd one a row (per_row), only in a row group */
	parse_text_bad(
	    ROWHEAD "\"inputs\": [{\"name\": \"dy\"}, {\"name\": \"x\"}, {\"name\": "
	            "\"m\", \"numel\": 4}, {\"name\": \"r\", \"numel\": 4, \"per_row\": "
	            "true}], \"ops\": [{\"op\": \"layer_norm_backward\", \"args\": "
	            "[\"dy\", \"x\", \"m\", \"r\"], \"out\": \"g\"}], \"outputs\": "
	            "[{\"name\": \"g\"}]}",
	    "args[2] of layer_norm_backward must be an input: x of all 64 elements, mean "
	    "and rstd per_row");
	parse_text_bad(ROWHEAD "\"inputs\": [{\"name\": \"x\"}, {\"name\": \"m\", \"numel\": 8, "
	                       "\"per_row\": true}], \"ops\": [{\"op\": \"softmax\", \"args\": "
	                       "[\"x\"], \"out\": \"g\"}], \"outputs\": [{\"name\": \"g\"}]}",
	               "'m' is per_row: 8 elements, not the group's 4 rows");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\"}, {\"name\": \"m\", \"per_row\": true}], "
	               "\"ops\": [{\"op\": \"relu\", \"args\": [\"x\"], \"out\": \"g\"}], "
	               "\"outputs\": [{\"name\": \"g\"}]}",
	               "per_row needs rows: a row group, a column group, or a chain with \"cols\"");
	/* a chain with "cols": its per-row inputs hold one value a row */
	parse_text_bad(HEAD "\"cols\": 7, \"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": "
	                    "\"relu\", \"args\": [\"x\"], \"out\": \"g\"}], \"outputs\": "
	                    "[{\"name\": \"g\"}]}",
	               "cols 7 does not divide the chain's 64 elements");
	parse_text_bad(HEAD "\"cols\": 16, \"inputs\": [{\"name\": \"x\"}, {\"name\": \"m\", "
	                    "\"numel\": 8, \"per_row\": true}], \"ops\": [{\"op\": \"mul\", "
	                    "\"args\": [\"x\", \"m\"], \"out\": \"g\"}], \"outputs\": "
	                    "[{\"name\": \"g\"}]}",
	               "'m' is per_row: 8 elements, not the group's 4 rows");
	{
		cJSON *j = cJSON_Parse(
		    HEAD "\"cols\": 16, \"inputs\": [{\"name\": \"x\"}, {\"name\": \"m\", "
		         "\"per_row\": true}], \"ops\": [{\"op\": \"mul\", \"args\": [\"x\", "
		         "\"m\"], \"out\": \"g\"}], \"outputs\": [{\"name\": \"g\"}]}");
		struct fgroup g;
		struct strbuf err = STRBUF_INIT;
		assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &err), 0);
		assert_int_equal(g.rows, 4);
		assert_int_equal(g.cols, 16);
		assert_true(fgroup_rowed(&g));
		assert_int_equal(g.values[1].per_row, 1);
		assert_int_equal(g.values[1].numel, 4);
		fgroup_release(&g);
		strbuf_release(&err);
		cJSON_Delete(j);
	}
	/* column groups: col_sum only there, over full-size values; after it per-column values */
	parse_text_bad(
	    HEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"col_sum\", "
	         "\"args\": [\"x\"], \"out\": \"s\"}], \"outputs\": [{\"name\": \"s\"}]}",
	    "'col_sum' sums over the rows; the group's kind must be \"column-reduction\"");
	parse_text_bad(COLHEAD "\"inputs\": [{\"name\": \"m\", \"per_row\": true}], \"ops\": "
	                       "[{\"op\": \"col_sum\", \"args\": [\"m\"], \"out\": \"s\"}], "
	                       "\"outputs\": [{\"name\": \"s\"}]}",
	               "the input of col_sum must have all 64 elements (rows x cols), not 4");
	parse_text_bad(COLHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"relu\", "
	                       "\"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": "
	                       "\"y\"}]}",
	               "a \"column-reduction\" group needs a col_sum op");
	parse_text_bad(COLHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"relu\", "
	                       "\"args\": [\"x\"], \"out\": \"y\"}, {\"op\": \"col_sum\", "
	                       "\"args\": [\"y\"], \"out\": \"s\"}], \"outputs\": [{\"name\": "
	                       "\"y\"}]}",
	               "writes at least one per-column value");
	/* an op on a column sum and a full-size value */
	parse_text_bad(COLHEAD
	               "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"col_sum\", "
	               "\"args\": [\"x\"], \"out\": \"s\"}, {\"op\": \"mul\", \"args\": "
	               "[\"s\", \"x\"], \"out\": \"t\"}], \"outputs\": [{\"name\": \"t\"}]}",
	               "args[1] 'x': after a col_sum an op may read only per-column values and "
	               "inputs of 16 elements (cols)");
	parse_text_bad(COLHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s\"}, {\"op\": \"dropout\", \"p\": "
	                       "0.1, \"args\": [\"s\"], \"out\": \"t\"}], \"outputs\": [{\"name\": "
	                       "\"t\"}]}",
	               "dropout on per-column values is not supported");
	parse_text_bad(COLHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s1\"}, {\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s2\"}, {\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s3\"}, {\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s4\"}, {\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s5\"}], \"outputs\": [{\"name\": "
	                       "\"s1\"}]}",
	               "more than 4 col_sum ops in one group");
	parse_text_bad(ROWHEAD "\"inputs\": [{\"name\": \"x\"}], \"ops\": [{\"op\": \"col_sum\", "
	                       "\"args\": [\"x\"], \"out\": \"s\"}], \"outputs\": [{\"name\": "
	                       "\"s\"}]}",
	               "the group's kind must be \"column-reduction\"");
	parse_text_bad("{\"kind\": \"gemm-epilogue\", \"dtype\": \"f32\"}", "unsupported kind");
}

static char *emit(void (*fn)(struct strbuf *, const struct fgroup *), const struct fgroup *g)
{
	struct strbuf sb = STRBUF_INIT;
	fn(&sb, g);
	return sb.buf;
}

static void test_emit_chain(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("mlp.json", &g);
	char *m = emit(emit_math, &g);
	/* the math: gelu, dropout keeping 1-p and scaling by 1/(1-p), add */
	assert_non_null(strstr(m, "__host__ __device__"));
	assert_non_null(strstr(m, "mlp_gelu_dropout_add_elem(const float *in, const float *u"));
	assert_non_null(strstr(m, "erff(v0 * 0.707106781f)"));
	assert_non_null(strstr(m, "(u[0] < 0.899999976f ? v2 * 1.11111116f : 0.f)"));
	assert_non_null(strstr(m, "const float v4 = (v3 + v1);"));
	assert_non_null(strstr(m, "o[0] = v4;"));
	char *k = emit(emit_kernel, &g);
	/* the bf16 vectorised path: 8 elements (16 bytes), alignment checked, fallback, tail */
	assert_non_null(strstr(k, "#define mlp_gelu_dropout_add_MAX_VEC 8"));
	assert_non_null(strstr(k, "mlp_gelu_dropout_add_kernel<8, 4>"));
	assert_non_null(strstr(k, "aic_ld<V>(a.in_h + i, x[0]);"));
	assert_non_null(strstr(k, "aic_st<V>(a.w_y + i, y[0]);"));
	assert_non_null(strstr(k, "aic_aligned(a.in_h, (size_t)v * 2)"));
	assert_non_null(strstr(k, "vec /= 2;"));
	assert_non_null(strstr(k, "for (long i = nvec * V + threadIdx.x; i < a.n;"));
	assert_non_null(strstr(k, "base += step"));
	/* a block a tile: no cap of a few waves (the grid-stride loop covers only grids past
	 * gridDim.x's limit); docs/perf.md, session 19 */
	assert_non_null(strstr(k, "if (grid > 0x7fffffffL)"));
	assert_null(strstr(k, "aic_sm_count() * (2048 / block) * 8"));
	assert_non_null(strstr(k, "curand_init(seed, grp, offset, &st)"));
	assert_non_null(strstr(k, "return _curand_uniform4(st.output);"));
	assert_non_null(strstr(k, "aic_uniforms<V>(a.seed, a.offset + 0ull, i, u[0]);"));
	assert_null(strstr(k, "extern __shared__"));
	char *b = emit(emit_bench, &g);
	assert_non_null(strstr(b, "static void run_ref(long off)"));
	assert_non_null(strstr(b, "ref0<4><<<"));
	assert_non_null(strstr(b, "ref2<1><<<"));
	assert_non_null(strstr(b, "cudaMemset(w[0], 0xFF"));
	assert_non_null(strstr(b, "misaligned"));
	assert_non_null(strstr(b, "peak_gbs()"));
	/* the floor at the group's size: a copy of the fused kernel's own bytes, in the JSON */
	assert_non_null(strstr(b, "const double same = copy_us(BYTES_FUSED, samples);"));
	assert_non_null(strstr(b, "\\\"copy_us\\\":%.3f"));
	assert_non_null(strstr(b, "static const double TOL[1] = {0.01};"));
	char *bind = emit(emit_binding, &g);
	assert_non_null(strstr(bind, "#include <torch/extension.h>"));
	assert_non_null(strstr(bind, "std::vector<torch::Tensor> mlp_gelu_dropout_add_forward("
	                             "torch::Tensor h, torch::Tensor res, int64_t seed"));
	assert_non_null(strstr(bind, "mlp_gelu_dropout_add_elem"));
	assert_null(strstr(bind, "#include \"mlp_gelu_dropout_add_math.h\""));
	char *py = emit(emit_module, &g);
	/* the module: the C ABI through ctypes, a custom op, the fused backward */
	assert_non_null(strstr(py, "ctypes.CDLL(so)"));
	assert_non_null(strstr(py, "@torch.library.custom_op(\"aicprof::mlp_gelu_dropout_add\""));
	assert_non_null(strstr(py, "_op.register_autograd(_backward, setup_context=_setup)"));
	assert_non_null(strstr(py, "_FUSED_BWD = True"));
	assert_non_null(strstr(py, "_GRAD_OF = [0, 1]"));
	/* one vector a thread by default: two cost registers and occupancy (session 19) */
	assert_non_null(strstr(py, "_DEFAULT = (256, 8, 1)"));
	char *ch = emit(emit_capi_h, &g);
	assert_non_null(strstr(ch, "extern \"C\" {"));
	assert_non_null(strstr(ch, "int mlp_gelu_dropout_add_run(const void *const *in"));
	assert_non_null(strstr(ch, "int mlp_gelu_dropout_add_bwd_run("));
	free(ch);
	assert_non_null(strstr(py, "gen.set_offset(offset + 4 * _NDROP)"));
	free(m);
	free(k);
	free(b);
	free(bind);
	free(py);
	fgroup_release(&g);

	parse_ok("f32chain.json", &g);
	k = emit(emit_kernel, &g);
	/* fp32: at most 4 elements (16 bytes) a vector */
	assert_non_null(strstr(k, "#define f32_chain_MAX_VEC 4"));
	assert_null(strstr(k, "f32_chain_kernel<8,"));
	/* the kept intermediate t0 is still written */
	assert_non_null(strstr(k, "float *w_t0; /* kept */"));
	assert_non_null(strstr(k, "aic_st<V>(a.w_t0 + i, y[1]);"));
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "o[1] = v2;"));
	b = emit(emit_bench, &g);
	assert_non_null(strstr(b, "static const double TOL[2] = {1e-05, 1e-05};"));
	free(k);
	free(m);
	free(b);
	fgroup_release(&g);
}

static void test_emit_rows(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("attn.json", &g);
	char *m = emit(emit_math, &g);
	assert_non_null(strstr(m, "attn_softmax_pro("));
	assert_non_null(strstr(m, "((col > row % 1024L) ? (-INFINITY) : v1)"));
	assert_non_null(strstr(m, "expf(v2 - s0) * s1"));
	/* the kept softmax output p is written, in the epilogue, with the dropout output */
	assert_non_null(strstr(m, "o[0] = v4;"));
	assert_non_null(strstr(m, "o[1] = v3;"));
	char *k = emit(emit_kernel, &g);
	assert_non_null(strstr(k, "extern __shared__ float aic_xs[];"));
	assert_non_null(strstr(k, "aic_block_reduce<true>(acc, red)"));
	assert_non_null(strstr(k, "aic_st<V>(a.w_p + i, y[1]);"));
	assert_non_null(strstr(k, "if (a.cols % v)"));
	/* short rows: one warp a row, the row in registers, shuffles; chosen at run time */
	assert_non_null(strstr(k, "attn_softmax_wkernel(const attn_softmax_args a)"));
	assert_non_null(strstr(k, "const float s0 = aic_warp_reduce<true>(acc);"));
	assert_non_null(strstr(k, "acc2 = aic_warp_reduce<false>(acc2);"));
	assert_non_null(strstr(k, "xs[q][j] = v;"));
	assert_non_null(strstr(k, "if (a.cols <= 32L * vec * attn_softmax_WARP_K) {"));
	/* K, the vectors a lane, from the row: the fewest of 1, 2, 4, 8 that hold it */
	assert_non_null(strstr(k, "while (32L * vec * wk < a.cols)"));
	assert_non_null(
	    strstr(k, "attn_softmax_wkernel<8, 4><<<(unsigned)wgrid, block, 0, s>>>(a);"));
	assert_non_null(strstr(k, "case 132:"));
	{ /* the warp kernel has no shared memory and no barrier */
		const char *w = strstr(k, "attn_softmax_wkernel(const");
		const char *e = strstr(w, "\n}\n");
		assert_non_null(e);
		char *body = strndup(w, (size_t)(e - w));
		assert_null(strstr(body, "__syncthreads"));
		assert_null(strstr(body, "__shared__"));
		free(body);
	}
	free(m);
	free(k);
	fgroup_release(&g);

	parse_ok("ln_gelu.json", &g);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "((v0 - s0) * s1 * v1 + v2)"));
	k = emit(emit_kernel, &g);
	/* weight and bias: row vectors read at column c, vectorised only when m % v == 0 */
	assert_non_null(strstr(k, "aic_ld<V>(a.in_weight + c, x[1]);"));
	assert_non_null(strstr(k, "if (a.m_weight % v)"));
	assert_non_null(strstr(k, "aic_rsqrt(acc2 / (float)cols + 9.99999975e-06f)"));
	free(m);
	free(k);
	fgroup_release(&g);
}

/* A column group's code: the summands in <name>_col, the two kernels without atomics, the
 * per-column writes of cols elements in the harness and the CPU check, no fused backward. */
static void test_emit_cols(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("gbb.json", &g);
	char *m = emit(emit_math, &g);
	assert_non_null(strstr(m, "cast_gamma_beta_col(const float *in, const float *u, long row"));
	assert_non_null(strstr(m, "s[0] = v7; /* col_sum -> dgamma */"));
	assert_non_null(strstr(m, "s[1] = v4; /* col_sum -> dbeta */"));
	assert_non_null(strstr(m, "cast_gamma_beta_fin(const float *s"));
	char *k = emit(emit_kernel, &g);
	/* mean and rstd one a row; partials in a workspace added in order; no atomics */
	assert_non_null(strstr(k, "x[1][j] = aic_to_float(a.in_mean[row]);"));
	assert_non_null(strstr(k, "aic_ws_alloc((void **)&ws, (size_t)2 * chunks * a.cols"));
	/* the workspace pool keeps what it hands out across synchronizations */
	assert_non_null(strstr(k, "cudaMemPoolAttrReleaseThreshold, &keep"));
	assert_non_null(strstr(k, "cudaMallocFromPoolAsync(p, bytes, pools[dev], s)"));
	assert_non_null(strstr(k, "const unsigned fy = chunks > 64 ? 32 : 8;"));
	assert_non_null(
	    strstr(k, "cast_gamma_beta_finish<<<(unsigned)((a.cols + 31) / 32), dim3(32, fy)"));
	/* the column kernel's tile: as many lanes as the columns need, its partials indexed by
	 * them; the shared memory within 48 KiB */
	assert_non_null(strstr(k, "while (tx > 1 && (long)(tx / 2) * vec >= a.cols)"));
	assert_non_null(
	    strstr(k, "const long c = ((long)blockIdx.x * blockDim.x + threadIdx.x) * V;"));
	assert_non_null(
	    strstr(k, "while (vec > 1 && (size_t)2 * by * 32 * vec * sizeof(float) > 48 * 1024)"));
	/* the block's rows of threads added by every thread of the block, one (k, j, x) each, into
	 * row 0, which the first row of threads then reads */
	assert_non_null(
	    strstr(k, "o < 2u * V * blockDim.x;\n\t     o += blockDim.x * blockDim.y)"));
	assert_non_null(strstr(k, "aic_cs[((long)k * blockDim.y * V + j) * blockDim.x + x] = t;"));
	assert_non_null(strstr(
	    k,
	    "const float t = aic_cs[((long)k * blockDim.y * V + j) * blockDim.x + threadIdx.x];"));
	/* the finish: 8 (32) rows of threads split the chunks, added in order in shared memory */
	assert_non_null(strstr(k, "for (long q = threadIdx.y; q < nchunk; q += blockDim.y)"));
	assert_non_null(strstr(k, "t += aic_fs[(k * blockDim.y + y) * 32 + threadIdx.x];"));
	/* one chunk: the column kernel finishes, no workspace, no second launch */
	assert_non_null(strstr(k, "cudaError_t e = chunks == 1 ? cudaSuccess"));
	assert_non_null(strstr(k, "a.w_dgamma[c + j] = aic_from_float<float>(o[0]);"));
	assert_non_null(strstr(k, "if (a.rows > 1024 && most > (a.rows + 63) / 64)"));
	/* a short column: one chunk, one column a thread, 16 rows of threads */
	assert_non_null(strstr(k, "const bool shortc = a.rows <= 512;"));
	assert_non_null(strstr(k, "if (shortc) {\n\t\tvec = 1;\n\t\tby = 16;\n\t}"));
	assert_non_null(strstr(k, "cudaFreeAsync(ws, s)"));
	assert_non_null(strstr(k, "a.w_dgamma[c] = aic_from_float<float>(o[0]);"));
	assert_null(strstr(k, "atomicAdd"));
	assert_null(strstr(k, "aic_aligned(a.in_mean")); /* read one a row: no vector access */
	char *b = emit(emit_bench, &g);
	assert_non_null(strstr(b, "CK(cudaMemset(w[0], 0xFF, 1024L * 4));"));
	assert_non_null(strstr(b, "x1[j] = aic_to_float(a1[(i + j) / COLS]);"));
	assert_non_null(strstr(b, "\"kind\\\":\\\"column-reduction\\\""));
	/* the tuner tries ept 1, 2 and 4: chunks of a whole, a half and a quarter wave */
	assert_non_null(strstr(b, "for (int e2 = 1; e2 <= 4; e2 *= 2)"));
	assert_non_null(strstr(k, "if (ept != 1 && ept != 2 && ept != 4)\n\t\tept = 1;"));
	assert_non_null(strstr(k, "+ tiles - 1) / tiles / ept;"));
	char *c = emit(emit_cpucheck, &g);
	assert_non_null(strstr(c, "ROWS = 64L, COLS = 1024L"));
	assert_non_null(strstr(c, "t += r[7][row * COLS + c];"));
	assert_non_null(strstr(c, "const long NW = COLS;"));
	char *py = emit(emit_module, &g);
	assert_non_null(strstr(py, "HAS_BACKWARD = False"));
	assert_non_null(strstr(py, "_PER_COL = [True, True]"));
	char *capi = emit(emit_capi, &g);
	assert_non_null(strstr(capi, "if (in_numel[1] * 1024LL != n)"));
	free(m);
	free(k);
	free(b);
	free(c);
	free(py);
	free(capi);
	struct fgroup bw;
	struct strbuf err = STRBUF_INIT;
	int grad_of[64];
	assert_int_equal(fgroup_backward(&g, &bw, grad_of, &err), -1);
	assert_non_null(strstr(err.buf, "a column group has no fused backward"));
	strbuf_release(&err);
	fgroup_release(&g);

	/* the kept value is stored by the first kernel, the per-channel input read at the column
	 * by the second */
	parse_ok("bnb.json", &g);
	k = emit(emit_kernel, &g);
	assert_non_null(strstr(k, "aic_st<V>(a.w_g + i, y[3]);"));
	assert_non_null(strstr(k, "aic_to_float(a.in_invstd[c])"));
	assert_non_null(strstr(k, "if (!aic_aligned(a.w_g, (size_t)v * 2))"));
	assert_null(strstr(k, "aic_aligned(a.w_sum_dy"));
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "const float v11 = (v10 * v4); /* grad_weight = mul */"));
	free(k);
	free(m);
	fgroup_release(&g);

	/* bnr.json: the per-channel mean is read at the column in the first kernel (vector
	 * loads), inv_std in the second; all four sums' writes by the second */
	parse_ok("bnr.json", &g);
	k = emit(emit_kernel, &g);
	assert_non_null(strstr(k, "aic_ld<V>(a.in_mean + c, x[3]);"));
	/* the mean read once, before the rows, whose loop is unrolled by 4 */
	{
		const char *h = strstr(k, "aic_ld<V>(a.in_mean + c, x[3]);");
		const char *loop = strstr(
		    k, "\t\tfor (long row = r0 + threadIdx.y; row < r1; row += blockDim.y) {");
		assert_true(h && loop && h < loop);
		const char *end = strstr(loop, "/* [k][y][j][x]");
		const char *again = strstr(loop, "a.in_mean");
		assert_true(end && (!again || again > end)); /* not in the row loop */
		assert_non_null(strstr(k, "#pragma unroll 4\n\t\tfor (long row"));
	}
	assert_non_null(strstr(k, "aic_to_float(a.in_invstd[c])"));
	assert_non_null(strstr(k, "a.w_grad_weight[c] = aic_from_float<float>(o[2]);"));
	assert_non_null(strstr(k, "a.w_grad_bias[c] = aic_from_float<float>(o[3]);"));
	assert_non_null(strstr(k, "aic_st<V>(a.w_g + i, y[4]);"));
	assert_null(strstr(k, "atomicAdd"));
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "const float v7 = (v2 - v3); /* xmu = sub */"));
	assert_non_null(strstr(m, "s[0] = v6; /* col_sum -> sum_dy */"));
	assert_non_null(strstr(m, "s[1] = v8; /* col_sum -> sum_dy_xmu */"));
	assert_non_null(strstr(m, "const float v12 = aic_round_f32(v9); /* grad_bias = cast */"));
	char *cc = emit(emit_cpucheck, &g);
	assert_non_null(strstr(cc, "ROWS = 64L, COLS = 128L"));
	free(cc);
	free(k);
	free(m);
	fgroup_release(&g);
}

/* The fused backward: reverse mode over the chain, dropout with the forward's ordinal. */
static void test_backward(void **state)
{
	(void)state;
	struct fgroup g, b;
	struct strbuf err = STRBUF_INIT;
	int grad_of[8];
	parse_ok("mlp.json", &g);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	assert_string_equal(b.name, "mlp_gelu_dropout_add_bwd");
	assert_int_equal(b.ninputs, 3); /* h, res, gy_y */
	assert_string_equal(b.values[2].name, "gy_y");
	assert_int_equal(b.nwrites, 2);
	assert_int_equal(grad_of[0], 0);
	assert_int_equal(grad_of[1], 1);
	char *m = emit(emit_math, &b);
	/* dh = gelu_backward(dropout(gy), h) with the same keep test; dres = gy */
	assert_non_null(strstr(m, "= (u[0] < 0.899999976f ? v2 * 1.11111116f : 0.f);"));
	assert_non_null(strstr(m, "(v3 * (0.5f * (1.f + erff(v0 * 0.707106781f))"));
	assert_non_null(strstr(m, "= (v2 * 1.f);"));
	assert_int_equal(b.ndrop, 1);
	free(m);
	fgroup_release(&b);
	fgroup_release(&g);

	parse_ok("f32chain.json", &g);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	assert_int_equal(b.ninputs, 4); /* a, b, gy_t3, gy_t0 (kept) */
	m = emit(emit_math, &b);
	/* the forward recomputed up to sigmoid's result, then sigmoid_backward and the kept
	 * value's gradient summed in before mul's rule */
	assert_non_null(strstr(m, "/* t2 = sigmoid */"));
	assert_non_null(strstr(m, "= (v2 * 3.f); /* d3 = scale */"));
	assert_non_null(strstr(m, "(v7 * v6 * (1.f - v6)); /* d4 = sigmoid_backward */"));
	assert_non_null(strstr(m, "= (v3 + v8); /* d5 = add */"));
	assert_non_null(strstr(m, "= (v9 * v1); /* d6 = mul */"));
	assert_non_null(strstr(m, "= (v9 * v0); /* d7 = mul */"));
	free(m);
	fgroup_release(&b);
	fgroup_release(&g);

	/* row groups and broadcast inputs have none, with the reason */
	parse_ok("ln_gelu.json", &g);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), -1);
	assert_non_null(strstr(err.buf, "row group"));
	assert_null(b.values);
	fgroup_release(&g);
	strbuf_release(&err);
}

/* The ops real models need (GPT-2's tanh GELU, Llama's pow/rsqrt/silu/sin/cos, the ATen
 * backward kernels): their fp32 and double math, and the backward rules of pow, sin, cos. */
static void test_model_ops(void **state)
{
	(void)state;
	struct fgroup g, b;
	struct strbuf err = STRBUF_INIT;
	int grad_of[8];
	parse_ok("gelu_tanh_chain.json", &g);
	assert_int_equal(g.nops, 8);
	assert_true(g.ops[0].num == 3);
	char *m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= aic_pow(v0, 3.f); /* t0 = pow */"));
	assert_non_null(strstr(m, "= tanhf(v4); /* t4 = tanh */"));
	free(m);
	m = emit(emit_cpucheck, &g);
	assert_non_null(strstr(m, "pow(v0, (double)3.f)"));
	free(m);
	/* d/dx: tanh's rule on its result, then pow's (dy * 3) * pow(x, 2) */
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	m = emit(emit_math, &b);
	assert_non_null(strstr(m, "(1.f - v6 * v6)); /* d9 = tanh_backward */"));
	assert_non_null(strstr(m, "= aic_pow(v0, 2.f); /* d13 = pow */"));
	assert_non_null(strstr(m, "= (v14 * 3.f); /* d14 = scale */"));
	assert_non_null(strstr(m, "= (v16 * v15); /* d15 = mul */"));
	free(m);
	fgroup_release(&b);
	fgroup_release(&g);

	/* a group whose writes are all bf16 takes sigmoid's and silu's fast forms on the GPU, its
	 * backward too; with an f32 write the exact ones */
	cJSON *sj = cJSON_Parse(
	    "{\"kind\": \"elementwise-chain\", \"dtype\": \"bf16\", \"numel\": 64, \"inputs\": "
	    "[{\"name\": \"g\"}, {\"name\": \"u\"}], \"ops\": [{\"op\": \"silu\", \"args\": "
	    "[\"g\"], \"out\": \"t\"}, {\"op\": \"mul\", \"args\": [\"t\", \"u\"], \"out\": "
	    "\"y\"}], \"outputs\": [{\"name\": \"y\"}]}");
	assert_non_null(sj);
	assert_int_equal(fgroup_parse(sj, "s.json", "s", &g, &err), 0);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= aic_silu_fast(v0); /* t = silu */"));
	free(m);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	m = emit(emit_math, &b);
	assert_non_null(
	    strstr(m, "aic_sigmoid_fast(v0) * (1.f + v0 * (1.f - aic_sigmoid_fast(v0))))"));
	free(m);
	fgroup_release(&b);
	g.writes[0].dtype = FD_F32;
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= aic_silu(v0); /* t = silu */"));
	free(m);
	fgroup_release(&g);
	cJSON_Delete(sj);
	/* GELU's tanh form keeps tanhf in a bf16 group (its fast form measured slower) */
	parse_ok("geglu.json", &g);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "tanhf(0.797884561f * (v0 + "));
	free(m);
	fgroup_release(&g);

	parse_ok("ops_chain.json", &g);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= sinf(v3); /* t2 = sin */"));
	assert_non_null(strstr(m, "= cosf(v1); /* t3 = cos */"));
	free(m);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	assert_int_equal(b.nwrites, 2);
	m = emit(emit_math, &b);
	assert_non_null(strstr(m, "= cosf(v4); /* d37 = cos */")); /* sin: dy * cos(x) */
	free(m);
	fgroup_release(&b);
	fgroup_release(&g);

	/* the backward kernels and comparisons: math, and no backward of a backward */
	parse_ok("ops_nobwd.json", &g);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= (v0 <= 0.f ? 0.f : v1); /* t0 = threshold_backward */"));
	assert_non_null(strstr(m, "= (v0 > v2 ? 1.f : 0.f); /* c0 = gt */"));
	assert_non_null(strstr(m, "= aic_pow(v9, 1.5f); /* t7 = pow */"));
	free(m);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), -1);
	assert_non_null(strstr(err.buf, "'threshold_backward' has no backward rule"));
	fgroup_release(&g);

	/* fill: a constant, its literal in the math, still written where kept; its gradient is
	 * none and the others' are as without it */
	parse_ok("fill_chain.json", &g);
	assert_int_equal(g.ops[0].nargs, 0);
	assert_true(g.ops[2].num == -2.5);
	m = emit(emit_math, &g);
	assert_non_null(strstr(m, "= 0.375f; /* c0 = fill */"));
	assert_non_null(strstr(m, "= (-2.5f); /* d = fill */") ||
	                strstr(m, "= -2.5f; /* d = fill */"));
	free(m);
	m = emit(emit_kernel, &g);
	assert_non_null(strstr(m, "__nv_bfloat16 *w_c; /* kept */"));
	free(m);
	assert_int_equal(g.nwrites, 2);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	assert_int_equal(b.nwrites, 2); /* dx = dz * c, dy = dz */
	m = emit(emit_math, &b);
	assert_non_null(strstr(m, "= 0.375f; /* c0 = fill */")); /* c recomputed for dx */
	free(m);
	fgroup_release(&b);
	fgroup_release(&g);

	/* scale(add(a, b)): both gradients are one computed value; each is written from a value
	 * of its own (GPT-2's residual add + dropout backward declared one write twice) */
	cJSON *j = cJSON_Parse(
	    "{\"kind\": \"elementwise-chain\", \"dtype\": \"f32\", \"numel\": 64, \"inputs\": "
	    "[{\"name\": \"a\"}, {\"name\": \"b\"}], \"ops\": [{\"op\": \"add\", \"args\": "
	    "[\"a\", \"b\"], \"out\": \"t\"}, {\"op\": \"scale\", \"args\": [\"t\"], "
	    "\"scalar\": 2, \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}");
	assert_non_null(j);
	assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &err), 0);
	assert_int_equal(fgroup_backward(&g, &b, grad_of, &err), 0);
	assert_int_equal(b.nwrites, 2);
	assert_true(b.writes[0].value != b.writes[1].value);
	fgroup_release(&b);
	fgroup_release(&g);
	cJSON_Delete(j);
	strbuf_release(&err);
}

static void test_write_group(void **state)
{
	(void)state;
	struct fgroup g;
	parse_ok("ln_gelu.json", &g);
	char dir[] = "/tmp/aicprof-test-fusion-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fusion_write_group(dir, &g), 0);
	static const char *files[] = {"_math.h",   "_kernel.cu",   "_binding.cu", ".py",
	                              "_bench.cu", "_cpucheck.cu", ".meta.json"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct strbuf p = STRBUF_INIT;
		strbuf_addf(&p, "%s/ln_gelu/ln_gelu%s", dir, files[i]);
		FILE *f = fopen(p.buf, "r");
		assert_non_null(f);
		fclose(f);
		unlink(p.buf);
		strbuf_release(&p);
	}
	struct strbuf p = STRBUF_INIT;
	strbuf_addf(&p, "%s/ln_gelu", dir);
	rmdir(p.buf);
	rmdir(dir);
	strbuf_release(&p);
	fgroup_release(&g);
}

/* A row group with rms_norm has a fused backward: a row group (rms_norm_backward, the
 * gradients and the row vectors' summands) and a column group (their col_sums). */
static void test_row_backward(void **state)
{
	(void)state;
	struct fgroup g, b, c;
	struct strbuf err = STRBUF_INIT;
	int grad_of[64];
	parse_ok("rms_bf16.json", &g);
	assert_int_equal(fgroup_row_backward(&g, &b, &c, grad_of, &err), 0);
	assert_int_equal(b.kind, FG_ROW);
	assert_string_equal(b.name, "rms_bf16_bwd");
	assert_string_equal(b.ops[b.red].op->name, "rms_norm_backward");
	assert_int_equal(b.ninputs, 3); /* x, w, gy_y */
	assert_string_equal(b.values[2].name, "gy_y");
	assert_int_equal(b.values[1].numel, 512);
	/* dx in x's bf16, then w's summand kept in f32 */
	assert_int_equal(b.nwrites, 2);
	assert_int_equal(b.writes[0].dtype, FD_BF16);
	assert_false(b.writes[0].kept);
	assert_int_equal(b.writes[1].dtype, FD_F32);
	assert_true(b.writes[1].kept);
	assert_int_equal(grad_of[0], 0);
	assert_int_equal(grad_of[1], FGROUP_GRAD_COL);
	/* the column group: dw = cast(col_sum(s_w)) to bf16, per column */
	assert_int_equal(c.kind, FG_COL);
	assert_string_equal(c.name, "rms_bf16_bwdc");
	assert_int_equal(c.ncolsum, 1);
	assert_string_equal(c.ops[0].op->name, "col_sum");
	assert_string_equal(c.ops[1].op->name, "cast");
	assert_int_equal(c.writes[0].dtype, FD_BF16);
	assert_true(c.values[c.writes[0].value].per_col);
	/* the math: gw = gy * w in the prologue, handed to the sums as o[nwrites]; the
	 * epilogue recomputes it and normalises with s0 = r, s1 = mean(gw * x) */
	char *m = emit(emit_math, &b);
	assert_non_null(strstr(m, "o[2] = v"));
	assert_non_null(strstr(m, "(v4 - v3 * s0 * s0 * s1)); /* d2 = rms_norm_backward */"));
	assert_non_null(strstr(m, "(v3 * s0); /* d3 = rms_norm */"));
	char *k = emit(emit_kernel, &b);
	assert_non_null(strstr(k, "{ acc += v * v; acc1 += o[2] * v; }"));
	assert_non_null(strstr(k, "const float s0 = aic_rsqrt(aic_warp_reduce<false>(acc) / "
	                          "(float)cols + 9.99999997e-07f);"));
	assert_non_null(
	    strstr(k, "const float s1 = aic_block_reduce<false>(acc1, red) / (float)cols;"));
	free(m);
	free(k);
	/* the C ABI: one _bwd_run, the row kernel then the column sums through a workspace */
	char *h = emit(emit_capi_h, &g);
	assert_non_null(strstr(h, "out[]: dx dw (cols)."));
	assert_non_null(strstr(h, "int rms_bf16_bwd_run("));
	char *cu = emit(emit_capi, &g);
	assert_non_null(strstr(cu, "#include \"rms_bf16_bwdc_kernel.cu\""));
	assert_non_null(strstr(cu, "a.w_d6 = ws + (size_t)0 * n;"));
	assert_non_null(strstr(cu, "c.w_dw = (__nv_bfloat16 *)out[1];"));
	assert_non_null(strstr(cu, "rc = (int)rms_bf16_bwdc_launch(c, block, vec, ept, s);"));
	char *py = emit(emit_module, &g);
	assert_non_null(strstr(py, "_FUSED_BWD = True\n"));
	assert_non_null(strstr(py, "_GRAD_OF = [0, 1]\n_BWD_OF = [0, 1]\n"));
	assert_non_null(strstr(py, "for i, d in zip(_BWD_OF, _BWD_DTYPES)]"));
	char *ck = NULL;
	{
		struct strbuf sb = STRBUF_INIT;
		emit_bwd_cpucheck(&sb, &b, &g, grad_of);
		ck = sb.buf;
	}
	/* bf16 rounding inside: the directional derivatives are skipped, said so */
	assert_non_null(strstr(ck, "# skip: the forward rounds to 16 bits"));
	free(ck);
	free(h);
	free(cu);
	free(py);
	fgroup_release(&b);
	fgroup_release(&c);
	fgroup_release(&g);

	/* rms_norm's own weight, a residual in the epilogue, a kept prologue value */
	parse_ok("rms_res.json", &g);
	assert_int_equal(fgroup_row_backward(&g, &b, &c, grad_of, &err), 0);
	assert_int_equal(grad_of[0], 0);                   /* dx */
	assert_int_equal(grad_of[1], FGROUP_GRAD_COL);     /* dg */
	assert_int_equal(grad_of[2], 1);                   /* dres */
	assert_int_equal(grad_of[3], FGROUP_GRAD_COL + 1); /* db */
	assert_int_equal(c.ncolsum, 2);
	assert_int_equal(b.ninputs, 6); /* x, g, res, b, gy_z, gy_xs */
	{
		struct strbuf sb = STRBUF_INIT;
		emit_bwd_cpucheck(&sb, &b, &g, grad_of);
		ck = sb.buf;
	}
	assert_non_null(strstr(ck, "gradients vs the forward's directional derivative"));
	assert_non_null(strstr(ck, "gf[1][i % COLS] += f[2][i];"));
	free(ck);
	fgroup_release(&b);
	fgroup_release(&c);
	fgroup_release(&g);

	/* none: another reduction, a non-linear epilogue, dropout */
	parse_ok("ln_gelu.json", &g);
	assert_int_equal(fgroup_row_backward(&g, &b, &c, grad_of, &err), -1);
	assert_non_null(strstr(err.buf, "unless its reduction is rms_norm"));
	assert_null(b.values);
	assert_null(c.values);
	fgroup_release(&g);
	static const char *const bad[][2] = {
	    {"[{\"op\": \"rms_norm\", \"args\": [\"x\"], \"eps\": 1e-6, \"out\": \"h\"}, "
	     "{\"op\": \"silu\", \"args\": [\"h\"], \"out\": \"y\"}]",
	     "not linear"},
	    {"[{\"op\": \"rms_norm\", \"args\": [\"x\"], \"eps\": 1e-6, \"out\": \"h\"}, "
	     "{\"op\": \"dropout\", \"args\": [\"h\"], \"p\": 0.1, \"out\": \"y\"}]",
	     "dropout"},
	};
	for (size_t t = 0; t < ARRAY_SIZE(bad); t++) {
		struct strbuf txt = STRBUF_INIT, e2 = STRBUF_INIT;
		strbuf_addf(&txt,
		            "{\"kind\": \"reduction-epilogue\", \"dtype\": \"f32\", \"rows\": 4, "
		            "\"cols\": 16, \"inputs\": [{\"name\": \"x\"}], \"ops\": %s, "
		            "\"outputs\": [{\"name\": \"y\"}]}",
		            bad[t][0]);
		cJSON *j = cJSON_Parse(txt.buf);
		assert_non_null(j);
		assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &e2), 0);
		strbuf_reset(&err);
		assert_int_equal(fgroup_row_backward(&g, &b, &c, grad_of, &err), -1);
		if (!strstr(err.buf, bad[t][1]))
			print_error("message: %s\n", err.buf);
		assert_non_null(strstr(err.buf, bad[t][1]));
		fgroup_release(&g);
		cJSON_Delete(j);
		strbuf_release(&txt);
		strbuf_release(&e2);
	}
	/* rms_norm_backward is the derivation's, not a description's */
	parse_text_bad(ROWHEAD "\"inputs\": [{\"name\": \"x\"}, {\"name\": \"g\"}], \"ops\": "
	                       "[{\"op\": \"rms_norm_backward\", \"args\": [\"x\", \"g\"], "
	                       "\"eps\": 1e-6, \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "belongs to a fused backward");
	strbuf_release(&err);
}

/* q * cos + r: q a transposed view, cos [s, d] broadcast over the heads (a middle dimension) */
#define MAPGROUP                                                                                   \
	"{\"kind\": \"elementwise-chain\", \"dtype\": \"f32\", \"numel\": 4096, \"inputs\": ["     \
	"{\"name\": \"q\", \"dtype\": \"bf16\", \"numel\": 4096, \"map\": {\"offset\": 0, "        \
	"\"sizes\": [16, 32, 8], \"strides\": [1, 128, 16]}}, "                                    \
	"{\"name\": \"cos\", \"numel\": 512, \"map\": {\"sizes\": [16, 8, 32], \"strides\": "      \
	"[1, 0, 16]}, \"via\": [{\"sizes\": [16, 32, 8], \"strides\": [1, 128, 16]}, "             \
	"{\"sizes\": [16, 8, 32], \"strides\": [1, 512, 16]}, {\"sizes\": [4096], "                \
	"\"strides\": [1]}, {\"sizes\": [16, 8, 32], \"strides\": [1, 0, 16]}]}, "                 \
	"{\"name\": \"r\"}], \"ops\": [{\"op\": \"mul\", \"args\": [\"q\", "                       \
	"\"cos\"], \"out\": \"a\"}, {\"op\": \"add\", \"args\": [\"a\", \"r\"], \"out\": "         \
	"\"y\"}], "                                                                                \
	"\"outputs\": [{\"name\": \"y\"}]}"

static void test_index_maps(void **state)
{
	(void)state;
	cJSON *j = cJSON_Parse(MAPGROUP);
	struct fgroup g;
	struct strbuf err = STRBUF_INIT;
	assert_int_equal(fgroup_parse(j, "t.json", "t", &g, &err), 0);
	cJSON_Delete(j);
	assert_true(fgroup_mapped(&g));
	assert_int_equal(g.values[0].map.dims, 3);
	assert_int_equal(g.values[1].map.stride[1], 0);
	assert_int_equal(g.values[1].numel, 512);
	assert_int_equal(g.values[2].map.dims, 0);
	assert_int_equal(g.values[0].nvia, 0);
	assert_int_equal(g.values[1].nvia, 4);
	assert_int_equal(g.values[1].via[1].stride[1], 512);
	char *m = emit(emit_math, &g);
	assert_non_null(strstr(m, "AIC_HD long t_map_q(long i)\n{\n\tlong o = 0L;\n"
	                          "\to += (i % 16L) * 1L;\n\ti /= 16L;\n\to += (i % 32L) * 128L;\n"
	                          "\ti /= 32L;\n\to += (i % 8L) * 16L;\n\treturn o;\n}\n"));
	/* a broadcast dimension adds nothing */
	assert_non_null(strstr(m, "AIC_HD long t_map_cos(long i)\n{\n\tlong o = 0L;\n"
	                          "\to += (i % 16L) * 1L;\n\ti /= 16L;\n\ti /= 8L;\n"
	                          "\to += (i % 32L) * 16L;\n\treturn o;\n}\n"));
	free(m);
	char *k = emit(emit_kernel, &g);
	/* one element at a time through the map, no modulo, no alignment check for it; the
	 * launcher holds the recorded size */
	assert_non_null(strstr(k, "aic_to_float(a.in_q[t_map_q(i + j)])"));
	assert_non_null(strstr(k, "aic_to_float(a.in_cos[t_map_cos(i + j)])"));
	assert_null(strstr(k, "m_cos"));
	assert_null(strstr(k, "aic_aligned(a.in_q"));
	assert_non_null(strstr(k, "aic_aligned(a.in_r"));
	assert_non_null(strstr(k, "if (a.n != 4096L)\n\t\treturn cudaErrorInvalidValue;"));
	free(k);
	char *c = emit(emit_cpucheck, &g);
	assert_non_null(strstr(c, "static const long N = 4096L"));
	assert_non_null(strstr(c, "in[0] = in0[t_map_q(i)];"));
	/* the op-by-op reference reads through an odometer over the map's dimensions, or
	 * through the loops' own layouts where the description has them */
	assert_non_null(strstr(c, "static const long sz[3] = {16L, 32L, 8L}, st[3] = {1L, 128L, "
	                          "16L};"));
	assert_non_null(strstr(c, "{ /* cos via the loops' layouts */"));
	assert_non_null(strstr(c, "static const long vz1[3] = {16L, 8L, 32L}, vt1[3] = {1L, 512L, "
	                          "16L};"));
	assert_non_null(strstr(c, "r[1][i] = in1[o];"));
	free(c);
	char *b = emit(emit_bench, &g);
	assert_non_null(strstr(b, "dst[i] = src[t_map_q(i)];"));
	assert_non_null(strstr(b, "const int mis_ok = 1;")); /* no misaligned run */
	free(b);
	struct strbuf cu = STRBUF_INIT;
	assert_int_equal(emit_cupy(&cu, &g), -1);
	strbuf_release(&cu);
	struct fgroup bw;
	int grad_of[64];
	assert_int_equal(fgroup_backward(&g, &bw, grad_of, &err), -1);
	assert_non_null(strstr(err.buf, "input 'q' is read through an index map"));
	strbuf_release(&err);
	fgroup_release(&g);
	/* the rules */
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"sizes\": "
	                    "[8, 4], \"strides\": [1, 8]}}], \"ops\": [{\"op\": \"neg\", \"args\": "
	                    "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "'x': map: its sizes hold 32 elements, not the group's 64");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"offset\": 1, "
	               "\"sizes\": [8, 8], \"strides\": [1, 8]}}], \"ops\": [{\"op\": \"neg\", "
	               "\"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "'x': map: it reads offsets 1 to 64, outside [0, 64)");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"offset\": 6, "
	               "\"sizes\": [8, 8], \"strides\": [-1, 8]}}], \"ops\": [{\"op\": \"neg\", "
	               "\"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "'x': map: it reads offsets -1 to 62, outside [0, 64)");
	parse_text_bad(HEAD
	               "\"inputs\": [{\"name\": \"x\", \"map\": {\"sizes\": [64], \"strides\": "
	               "[1]}}], \"ops\": [{\"op\": \"neg\", \"args\": [\"x\"], \"out\": \"y\"}], "
	               "\"outputs\": [{\"name\": \"y\"}]}",
	               "'x': an input with a map needs its 'numel'");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"sizes\": "
	                    "[64], \"strides\": [1, 2]}}], \"ops\": [{\"op\": \"neg\", \"args\": "
	                    "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "map: 'sizes' and 'strides' must be arrays of one length");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"sizes\": "
	                    "[64], \"strides\": [0.5]}}], \"ops\": [{\"op\": \"neg\", \"args\": "
	                    "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "map: strides[0] must be an integer");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"via\": []}], \"ops\": "
	                    "[{\"op\": \"neg\", \"args\": [\"x\"], \"out\": \"y\"}], \"outputs\": "
	                    "[{\"name\": \"y\"}]}",
	               "'x': 'via' needs a 'map'");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 32, \"map\": {\"sizes\": "
	                    "[32, 2], \"strides\": [1, 0]}, \"via\": [{\"sizes\": [64], "
	                    "\"strides\": [2]}, {\"sizes\": [32, 2], \"strides\": [1, 0]}]}], "
	                    "\"ops\": [{\"op\": \"neg\", \"args\": [\"x\"], \"out\": \"y\"}], "
	                    "\"outputs\": [{\"name\": \"y\"}]}",
	               "'x': via[0]: it reads offsets 0 to 126, outside [0, 64)");
	parse_text_bad(HEAD "\"inputs\": [{\"name\": \"x\", \"numel\": 32, \"map\": {\"sizes\": "
	                    "[32, 2], \"strides\": [1, 0]}, \"via\": [{\"sizes\": [64], "
	                    "\"strides\": [1]}]}], \"ops\": [{\"op\": \"neg\", \"args\": [\"x\"], "
	                    "\"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "'x': via[0]: it reads offsets 0 to 63, outside [0, 32)");
	parse_text_bad(ROWHEAD
	               "\"inputs\": [{\"name\": \"x\", \"numel\": 64, \"map\": {\"sizes\": "
	               "[64], \"strides\": [1]}}], \"ops\": [{\"op\": \"softmax\", \"args\": "
	               "[\"x\"], \"out\": \"y\"}], \"outputs\": [{\"name\": \"y\"}]}",
	               "an index map is for an elementwise chain without rows");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_index_maps),  cmocka_unit_test(test_optable),
	    cmocka_unit_test(test_parse_mlp),   cmocka_unit_test(test_parse_rows),
	    cmocka_unit_test(test_parse_bad),   cmocka_unit_test(test_parse_rules),
	    cmocka_unit_test(test_emit_chain),  cmocka_unit_test(test_emit_rows),
	    cmocka_unit_test(test_write_group), cmocka_unit_test(test_backward),
	    cmocka_unit_test(test_model_ops),   cmocka_unit_test(test_parse_cols),
	    cmocka_unit_test(test_emit_cols),   cmocka_unit_test(test_row_backward),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
