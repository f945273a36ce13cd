# aicprof: make (everything), make test, make demo, make deps, make gpu-test, make install PREFIX=
#
# Sources are found by directory: preload/*.c make the shim build/libaicprof.so; aicprof.c (the
# table of subcommands), cli/ (one file per subcommand), lib/ (the shared base), analyzer/,
# report/ and fusion/ make the command build/aicprof.
# Tests: tests/unit/test-*.c (cmocka, built with ASan+UBSan) and tests/func/*.sh, run by
# tests/run.sh, which ends with the line "N passed, N failed".

CC       ?= gcc
PREFIX   ?= /usr/local
CUDA_HOME ?= $(firstword $(wildcard /usr/local/cuda) /usr/local/cuda)
CUDA_INC := $(CUDA_HOME)/include $(CUDA_HOME)/targets/x86_64-linux/include $(CUDA_HOME)/extras/CUPTI/include
VERSION  := 0.1.0
B        := build

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter $(if $(WERROR),-Werror)
CFLAGS   ?= -O2 -g
ALLCFLAGS = $(CFLAGS) -MMD -MP -std=gnu11 $(WARN) -D_GNU_SOURCE -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -DAICPROF_VERSION='"$(VERSION)"' -I. $(if $(HAVE_LIBDW),,-DAICPROF_NO_LIBDW) $(EXTRA_CFLAGS)
# libdw (elfutils) names native sites' lines; on the device (NO_DEPS=1) without it, sites keep
# module+offset (analyzer/symbolize.c built with AICPROF_NO_LIBDW)
HAVE_LIBDW := $(if $(NO_DEPS),$(shell pkg-config --exists libdw 2>/dev/null && echo 1),1)
PKGS     := libcjson libcgraph libgvc zlib $(if $(HAVE_LIBDW),libdw)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lcgraph -lgvc -lz $(if $(HAVE_LIBDW),-ldw -lelf))
LDLIBS   := -lm -lpthread -lstdc++ $(EXTRA_LDFLAGS)

# the shim links one file of lib/: rangemap.c, pure C on libc (nothing there exits or prints)
SHIM_SRC := $(wildcard preload/*.c) lib/rangemap.c
CORE_SRC := $(wildcard lib/*.c cli/*.c analyzer/*.c report/*.c fusion/*.c)
SHIM_OBJ := $(SHIM_SRC:%.c=$(B)/pic/%.o)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o)
SAN_OBJ  := $(sort $(CORE_SRC:%.c=$(B)/san/%.o) $(SHIM_SRC:%.c=$(B)/san/%.o))
SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined
UNIT_SRC := $(wildcard tests/unit/test-*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
SHIM_INC := $(addprefix -I,$(CUDA_INC))

.PHONY: all deps test demo gpu-test install clean format check-format tools fuzz
all: $(B)/libaicprof.so $(B)/aicprof

# make deps: install what is missing from Debian's packages, then find CUDA and CUPTI.
DEB_PKGS := libcjson-dev zlib1g-dev libunwind-dev libdw-dev libgraphviz-dev libcmocka-dev pkg-config graphviz python3 python3-dev chromium clang libclang-rt-14-dev valgrind time
deps: $(B)/.deps
# NO_DEPS=1 (the device machine, which has no package registry): trust the caller's flags.
$(B)/.deps: Makefile
	@mkdir -p $(B)
	@if [ -n "$(NO_DEPS)" ]; then touch $@; exit 0; fi; \
	missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null \
	    || { echo "deps: apt-get install$$missing failed" >&2; exit 1; }; \
	fi
	@found=; for d in $(CUDA_INC); do [ -f $$d/cupti.h ] && found=$$d; done; \
	if [ -z "$$found" ]; then echo "deps: no CUPTI headers under $(CUDA_HOME) (set CUDA_HOME to the CUDA toolkit)" >&2; exit 1; fi; \
	echo "deps: CUDA toolkit $(CUDA_HOME), CUPTI headers $$found"
	@touch $@

$(B)/pic/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -fvisibility=hidden $(SHIM_INC) -c $< -o $@
$(B)/obj/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(PKG_CFLAGS) $(SHIM_INC) -c $< -o $@
$(B)/san/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -O1 $(PKG_CFLAGS) $(SHIM_INC) -c $< -o $@

# The shim links nothing but libc: CUPTI, the driver, libunwind and Python are found at run time
# (dlopen/dlsym), so it loads into any program, and libunwind's _Unwind_* never shadow libgcc's.
$(B)/libaicprof.so: $(SHIM_OBJ)
	$(CC) -shared -o $@ $^ -ldl -lpthread -Wl,--no-undefined -Wl,-z,nodelete
$(B)/aicprof: $(B)/obj/aicprof.o $(CORE_OBJ)
	$(CC) -o $@ $^ $(PKG_LIBS) $(LDLIBS)
$(B)/san/core.a: $(SAN_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/tests/%: tests/unit/%.c $(B)/san/core.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -O1 $(PKG_CFLAGS) $(SHIM_INC) $< $(B)/san/core.a -o $@ -lcmocka -ldl $(PKG_LIBS) $(LDLIBS) $(EXTRA_TEST)

# a CUPTI of a few hundred lines for the multiplexer's test (never in the shim or core.a)
MOCK_CUPTI := $(B)/mock/libcupti.so.13
$(MOCK_CUPTI): tests/mock/libcupti_mock.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -shared -fvisibility=hidden $(SHIM_INC) -Wl,-soname,libcupti.so.13 $< -o $@
$(B)/tests/test-cuptimux: $(MOCK_CUPTI)
# the driver as far as the shim's start needs it (test-window: the window's close through cupti.c)
MOCK_CUDA := $(B)/mock/libcuda.so.1
$(MOCK_CUDA): tests/mock/libcuda_mock.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -shared -fvisibility=hidden $(SHIM_INC) -Wl,-soname,libcuda.so.1 $< -o $@
$(B)/tests/test-window $(B)/tests/test-capture $(B)/tests/test-capture-pause $(B)/tests/test-finalize: $(MOCK_CUPTI) $(MOCK_CUDA)
# a library whose imports test-gotpatch redirects (-z now: its GOT is read-only, as in PyTorch's)
GOT_VICTIM := $(B)/mock/libgotvictim.so
$(GOT_VICTIM): tests/mock/gotvictim.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -shared -Wl,-z,now -Wl,-z,relro $< -o $@
$(B)/tests/test-gotpatch: $(GOT_VICTIM)
# PyTorch's libc10.so and libc10_cuda.so as far as test-poolhook needs them
MOCK_C10 := $(B)/mock/libc10.so $(B)/mock/libc10_cuda.so
$(B)/mock/libc10.so: tests/mock/c10.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -fPIC -shared $< -o $@
$(B)/mock/libc10_cuda.so: tests/mock/c10_cuda.c $(B)/mock/libc10.so
	$(CC) $(ALLCFLAGS) -fPIC -shared -Wl,-z,now -Wl,-z,relro $< -o $@ -L$(B)/mock -l:libc10.so -Wl,-rpath,'$$ORIGIN'
$(B)/tests/test-poolhook: $(MOCK_C10)

# the attribution test embeds Debian's Python
PY_EMBED := $(shell pkg-config --cflags --libs python3-embed 2>/dev/null)
$(B)/tests/test-sites: EXTRA_TEST = $(PY_EMBED)

tools: $(B)/tools/gen-trace $(B)/tools/period-check $(B)/tools/stepwin-sim
$(B)/tools/gen-trace: tests/tools/gen-trace.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -O2 $< -o $@ $(LDLIBS)
$(B)/tools/period-check: tests/tools/period-check.c analyzer/period.c lib/util.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -O2 $(filter %.c,$^) -o $@ $(LDLIBS)
# (the sources named: periodfind.c includes analyzer/period.c, which -MMD adds to the prerequisites)
STEPWIN_SIM_SRC := tests/tools/stepwin-sim.c preload/stepwin.c preload/periodfind.c
$(B)/tools/stepwin-sim: $(STEPWIN_SIM_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -O2 $(STEPWIN_SIM_SRC) -o $@ $(LDLIBS)

# Fuzz targets: tests/fuzz/fuzz-<name>.c. make test replays tests/fuzz/{seeds,regress}/<name>/
# through build/tests/replay-<name> (the target with replay.c's main, ASan+UBSan, gcc);
# make fuzz builds build/fuzz/fuzz-<name> with clang's libFuzzer and runs each FUZZ_SECONDS,
# new inputs into build/fuzz/corpus-<name>, crashes as build/fuzz/crash-<name>-*.
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz-%.c,%,$(wildcard tests/fuzz/fuzz-*.c))
REPLAY_BIN := $(FUZZ_NAMES:%=$(B)/tests/replay-%)
FUZZ_CC  ?= clang
FUZZ_SECONDS ?= 10
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_OBJ := $(sort $(CORE_SRC:%.c=$(B)/fuzz/%.o) $(SHIM_SRC:%.c=$(B)/fuzz/%.o))
$(B)/tests/replay-%: tests/fuzz/fuzz-%.c tests/fuzz/replay.c tests/fuzz/scratch.c tests/fuzz/fuzz.h $(B)/san/core.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -O1 $(PKG_CFLAGS) $(filter %.c,$^) $(B)/san/core.a -o $@ -ldl $(PKG_LIBS) $(LDLIBS)
$(B)/fuzz/%.o: %.c | $(B)/.deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(ALLCFLAGS) -Wno-unknown-warning-option $(FUZZ_SAN) -fsanitize=fuzzer-no-link -O1 $(PKG_CFLAGS) $(SHIM_INC) -c $< -o $@
$(B)/fuzz/core.a: $(FUZZ_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/fuzz/fuzz-%: tests/fuzz/fuzz-%.c tests/fuzz/scratch.c tests/fuzz/fuzz.h $(B)/fuzz/core.a
	$(FUZZ_CC) $(ALLCFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -O1 $(PKG_CFLAGS) $(filter %.c,$^) $(B)/fuzz/core.a -o $@ -ldl $(PKG_LIBS) $(LDLIBS)
fuzz: $(FUZZ_NAMES:%=$(B)/fuzz/fuzz-%)
	@for n in $(FUZZ_NAMES); do mkdir -p $(B)/fuzz/corpus-$$n; \
	  echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
	  $(B)/fuzz/fuzz-$$n -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
	    -artifact_prefix=$(B)/fuzz/crash-$$n- $(B)/fuzz/corpus-$$n tests/fuzz/seeds/$$n tests/fuzz/regress/$$n \
	    2>&1 | grep -E '^(#[0-9]+ +DONE|==[0-9]+==ERROR|SUMMARY|Done)' || true; \
	  ! ls $(B)/fuzz/crash-$$n-* >/dev/null 2>&1 || { echo "fuzz: $$n found a crash" >&2; exit 1; }; \
	done

test: all $(UNIT_BIN) $(REPLAY_BIN) $(if $(wildcard tests/tools/*.c),tools)
	@sh tests/run.sh $(UNIT_BIN)

demo: all
	@sh samples/demo.sh

gpu-test: $(B)/libaicprof.so
	@sh tests/gpu/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(B)/aicprof $(DESTDIR)$(PREFIX)/bin/aicprof
	install -m 755 $(B)/libaicprof.so $(DESTDIR)$(PREFIX)/lib/libaicprof.so
	[ ! -f docs/aicprof.1 ] || install -m 644 docs/aicprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/aicprof.1

format:
	clang-format -i $(wildcard aicprof.c */*.c */*.h tests/*/*.c)
check-format:
	clang-format --dry-run --Werror $(wildcard aicprof.c */*.c */*.h tests/*/*.c)

clean:
	rm -rf $(B)

# header dependencies, written by -MMD beside each object
-include $(shell find $(B) -name '*.d' 2>/dev/null)
