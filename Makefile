# masq - build, test and install.
#
#   make            build/masq, build/libmasq.a and build/libmasq.so
#   make test       install what the tests need and the machine lacks
#                   (tools/install-deps.sh), then unit + API + golden + REPL +
#                   install tests and the layer check, then again under
#                   ASan+UBSan
#   make unit, make golden [T=NAME]   the C unit tests, the golden scripts
#   make layers     check that the source folders, and the rooms of runtime/
#                   and stdlib/, call and include only the layers below them
#                   (tools/layercheck; part of make test)
#   make demo       install what the build lacks, build, and run the tours
#                   (examples/tour.masq, explore.masq)
#   make install    PREFIX=/usr/local DESTDIR= : the CLI, the header, both
#                   libraries, masq.pc, the man page masq(1) and the editor
#                   syntax files (Vim, TextMate)
#   make uninstall
#   make clean
#
# Generated sources (re2c, Bison) and all objects live in build/.
# make runs as many jobs as there are cores unless given -j (make -j1: one);
# it prints one short line per step ("CC runtime/nn/nn.c"); make V=1 prints the
# commands.

# Only the top make sets -j: a sub-make shares its parent's job slots, and
# a -j given on the command line wins over this one.
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
# $(call say,WHAT,FILE) before a command prints "WHAT FILE" instead of it
# (and nothing with V=1, where make prints the command); the compilers'
# warnings and errors show either way.
ifneq ($(V),1)
say = @printf '  %-6s %s\n' '$(1)' '$(2)';
endif

CC      ?= cc
RE2C    ?= re2c
BISON   ?= bison
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR       = $(PREFIX)/bin
LIBDIR       = $(PREFIX)/lib
INCLUDEDIR   = $(PREFIX)/include
MANDIR       = $(PREFIX)/share/man
DATADIR      = $(PREFIX)/share
VIMDIR       = $(DATADIR)/vim/vimfiles
PKGCONFIGDIR = $(LIBDIR)/pkgconfig
LDCONFIG    ?= ldconfig

# -Wno-missing-field-initializers: a table row spells only the fields it
# needs; the rest are zero (a builtin row's kind and op, vm/builtin.h).
WARN     = -Wall -Wextra -Wformat=2 -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter \
           -Wno-missing-field-initializers
# -fno-math-errno lets expf/logf/sqrtf vectorize; it changes no IEEE result.
# Never -ffast-math. -ffp-contract=off: a * b + c is two roundings with
# clang too (gcc's default in ISO C mode), as the SIMD paths compute it.
BASEFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -fno-math-errno -ffp-contract=off -fvisibility=hidden -pthread $(WARN)
OPT     ?= -O2 -g
INC      = -Iinclude -I$(GEN) -Ilexer -Iparser
LIBS     = -lm -lz -pthread
CLI_LIBS = -lreadline

B        = build
GEN      = $(B)/gen

# The library's folders, one layer each (docs/HACKING.md; tools/layercheck
# checks that calls and includes only go down). runtime/ and stdlib/ keep
# their sources in rooms, one sub-folder each, layered the same way.
LAYERS   = core runtime vm parser stdlib api
LIB_SRC  = $(foreach d,$(LAYERS),$(wildcard $(d)/*.c $(d)/*/*.c))
GEN_SRC  = $(GEN)/lexer.c $(GEN)/parser.c
CLI_SRC  = $(wildcard cli/*.c)
UNIT_SRC = $(wildcard tests/unit/*.c)

# One object tree per flavour: normal and sanitized.
objs = $(patsubst %.c,$(1)/obj/%.o,$(LIB_SRC)) $(patsubst $(GEN)/%.c,$(1)/obj/gen/%.o,$(GEN_SRC))

LIB_OBJ  = $(call objs,$(B))
ASAN_DIR = $(B)/asan
ASAN_OBJ = $(call objs,$(ASAN_DIR))
SAN_CC  ?= $(shell command -v clang >/dev/null 2>&1 && echo clang || echo $(CC))
# -DMQ_CHECKS: the contracts (MQ_ASSERT, core/assert.h) run in the checked
# trees: ASan (and the fuzzers and replays built on it) and TSan; release
# and coverage builds compile them away.
CHECKS   = -DMQ_CHECKS
SANFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(CHECKS)

# The shared library's version comes from the header; the soname carries
# the major number only.
VERSION := $(shell sed -n 's/^\#define MASQ_VERSION_STRING "\(.*\)"/\1/p' include/masq.h)
SONAME   = libmasq.so.$(firstword $(subst ., ,$(VERSION)))
SHLIB    = libmasq.so.$(VERSION)

.PHONY: all test unit golden demo clean install uninstall layers tsan
EDITORS = $(B)/editors/vim/syntax/masq.vim $(B)/editors/vim/ftdetect/masq.vim \
          $(B)/editors/masq.tmLanguage.json
all: $(B)/masq $(B)/libmasq.a $(B)/libmasq.so $(B)/$(SONAME) $(EDITORS)

# Editor syntax files (Vim, TextMate), generated from the keyword list and
# the builtin table so they cannot drift (tools/editors/gen.py).
$(EDITORS) &: tools/editors/gen.py lexer/keywords.h $(B)/masq
	$(call say,GEN,$(B)/editors)python3 tools/editors/gen.py lexer/keywords.h $(B)/masq $(B)/editors

# --- generated front end ----------------------------------------------------
$(GEN)/parser.c $(GEN)/parser.h &: parser/parser.y
	@mkdir -p $(GEN)
	$(call say,BISON,parser/parser.y)$(BISON) -Wall -Werror -d -o $(GEN)/parser.c parser/parser.y

$(GEN)/lexer.c: lexer/lexer.re $(GEN)/parser.h
	@mkdir -p $(GEN)
	$(call say,RE2C,$<)$(RE2C) -W -Werror --no-generation-date --no-version -i -o $@ $<

# --- object trees -------------------------------------------------------------
# Each compile also writes NAME.d beside its output: the headers it includes
# (-MMD -MP), read back below, so touching a header rebuilds only what
# includes it. An output whose .d is missing (built before there were .d
# files) is rebuilt; clang writes the .d after the object, so the object is
# touched to stay the newer of the two.
DEPFLAGS = -MMD -MP
compile  = $(call say,CC,$<)$($(1)) $(BASEFLAGS) $($(2)) $(INC) $(DEPFLAGS)
DEPS     = $(patsubst %.o,%.d,$(LIB_OBJ) $(ASAN_OBJ) $(TSAN_OBJ) $(FUZZ_OBJ) $(COV_OBJ)) \
           $(addsuffix .d,$(UNITS) $(ASAN_UNITS) $(COV_UNITS))

# $(call tree,DIR,COMPILER,FLAGS) (variable names): the objects of one tree,
# and its libmasq.a. Each object waits for the generated parser.h (order
# only: before a first build no .d says which objects include it).
define tree
$(1)/obj/%.o: %.c $(1)/obj/%.d | $(GEN)/parser.h
	@mkdir -p $$(@D)
	$$(call compile,$(2),$(3)) -c -o $$@ $$< && touch $$@

$(1)/obj/gen/%.o: $(GEN)/%.c $(1)/obj/gen/%.d | $(GEN)/parser.h
	@mkdir -p $$(@D)
	$$(call compile,$(2),$(3)) -c -o $$@ $$< && touch $$@

$(1)/libmasq.a: $$(call objs,$(1))
	@rm -f $$@
	$$(call say,AR,$$@)ar rcs $$@ $$^
endef

# --- normal build -------------------------------------------------------------
# One set of objects serves both libraries, so they are position independent.
LIBFLAGS = $(OPT) -fPIC
$(eval $(call tree,$(B),CC,LIBFLAGS))

# Only MASQ_API symbols are exported: everything is compiled with
# -fvisibility=hidden (tests/api/install_test.sh checks with nm -D).
# -z defs: every library the code needs must be named here.
$(B)/$(SHLIB): $(LIB_OBJ)
	$(call say,LD,$@)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,-z,defs -o $@ $^ $(LIBS)

$(B)/$(SONAME) $(B)/libmasq.so: $(B)/$(SHLIB)
	@ln -sf $(SHLIB) $@

# The CLI links the static library, so it runs uninstalled.
$(B)/masq: $(CLI_SRC) $(wildcard cli/*.h) $(B)/libmasq.a
	$(call say,CC,$@)$(CC) $(BASEFLAGS) $(OPT) -Iinclude -o $@ $(CLI_SRC) $(B)/libmasq.a $(CLI_LIBS) $(LIBS)

$(B)/unit/%: tests/unit/%.c $(B)/unit/%.d $(B)/libmasq.a
	@mkdir -p $(@D)
	$(call compile,CC,OPT) -fvisibility=default -o $@ $< $(B)/libmasq.a $(LIBS) && touch $@

# --- sanitized build ----------------------------------------------------------
$(eval $(call tree,$(ASAN_DIR),SAN_CC,SANFLAGS))

$(ASAN_DIR)/masq: $(CLI_SRC) $(wildcard cli/*.h) $(ASAN_DIR)/libmasq.a
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -o $@ $(CLI_SRC) $(ASAN_DIR)/libmasq.a $(CLI_LIBS) $(LIBS)

$(ASAN_DIR)/unit/%: tests/unit/%.c $(ASAN_DIR)/unit/%.d $(ASAN_DIR)/libmasq.a
	@mkdir -p $(@D)
	$(call compile,SAN_CC,SANFLAGS) -fvisibility=default -o $@ $< $(ASAN_DIR)/libmasq.a $(LIBS) && touch $@

UNITS      = $(patsubst tests/unit/%.c,$(B)/unit/%,$(UNIT_SRC))
ASAN_UNITS = $(patsubst tests/unit/%.c,$(ASAN_DIR)/unit/%,$(UNIT_SRC))

# --- API tests and the embedding example -----------------------------------
# Hosts see only include/masq.h. The normal flavour links the shared
# library (a function missing from its exports fails the link); the
# sanitized one the sanitized static library.
API_SRC   = $(wildcard tests/api/test_*.c)
APIS      = $(patsubst tests/api/%.c,$(B)/api/%,$(API_SRC))
ASAN_APIS = $(patsubst tests/api/%.c,$(ASAN_DIR)/api/%,$(API_SRC))
EMBED     = $(B)/examples/embed $(ASAN_DIR)/examples/embed
SHARED    = -L$(B) -lmasq -Wl,-rpath,$(abspath $(B))

$(B)/api/%: tests/api/%.c tests/api/check.h include/masq.h $(B)/libmasq.so $(B)/$(SONAME)
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(BASEFLAGS) $(OPT) -Iinclude -pthread -o $@ $< $(SHARED)

$(ASAN_DIR)/api/%: tests/api/%.c tests/api/check.h include/masq.h $(ASAN_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -pthread -o $@ $< $(ASAN_DIR)/libmasq.a $(LIBS)

$(B)/examples/embed: examples/embed/embed.c include/masq.h $(B)/libmasq.so
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(BASEFLAGS) $(OPT) -Iinclude -o $@ $< $(SHARED)

$(ASAN_DIR)/examples/embed: examples/embed/embed.c include/masq.h $(ASAN_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -o $@ $< $(ASAN_DIR)/libmasq.a $(LIBS)

# --- ThreadSanitizer: the worker pool and the kernels on it ------------------
# gcc's runtime (libtsan2, which gcc depends on); the API tests that run
# kernels on several threads, interrupt them, and states on threads.
TSAN_DIR  = $(B)/tsan
TSAN_CC  ?= $(CC)
TSANFLAGS = -O1 -g -fsanitize=thread $(CHECKS)
TSAN_APIS = $(TSAN_DIR)/api/test_threads $(TSAN_DIR)/api/test_limits $(TSAN_DIR)/api/test_sparse_threads \
            $(TSAN_DIR)/api/test_host_race

TSAN_OBJ  = $(call objs,$(TSAN_DIR))
$(eval $(call tree,$(TSAN_DIR),TSAN_CC,TSANFLAGS))

$(TSAN_DIR)/api/%: tests/api/%.c tests/api/check.h include/masq.h $(TSAN_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(TSAN_CC) $(BASEFLAGS) $(TSANFLAGS) -Iinclude -pthread -o $@ $< $(TSAN_DIR)/libmasq.a $(LIBS)

tsan: $(TSAN_APIS)
	@TSAN_OPTIONS="halt_on_error=1 die_after_fork=0" MASQ_NUM_THREADS=3 sh tests/run_units.sh $(TSAN_DIR) api

# --- tests --------------------------------------------------------------------
# make test first installs what the tests need and the machine lacks (only
# that: it is silent and quick when nothing is missing), then builds and runs
# the suites (test-run). Each suite appends "N passed, N failed" to
# build/results; tests/summary.sh adds them up into the closing line and
# fails if anything failed. The builds run in parallel, the suites one after
# the other, in the order of the recipe.
.PHONY: test-run
test:
	@sh tools/install-deps.sh
	@$(MAKE) --no-print-directory test-run

test-run: all $(UNITS) $(APIS) $(EMBED) $(ASAN_DIR)/masq $(ASAN_UNITS) $(ASAN_APIS) $(TSAN_APIS)
	@rm -f $(B)/results
	@sh tests/run_units.sh $(B) | tee -a $(B)/results
	@sh tests/run_units.sh $(B) api | tee -a $(B)/results
	@sh tests/api/example_test.sh $(B) | tee -a $(B)/results
	@CC="$(CC)" sh tests/api/install_test.sh $(B) | tee -a $(B)/results
	@python3 tools/layercheck $(B)/obj | tee -a $(B)/results
	@sh tests/run.sh $(B)/masq | tee -a $(B)/results
	@sh tests/repl/repl_test.sh $(B)/masq | tee -a $(B)/results
	@sh tests/repl/newcomer_test.sh $(B)/masq | tee -a $(B)/results
	@sh tests/repl/cli_test.sh $(B)/masq | tee -a $(B)/results
	@sh tests/repl/transcript.sh $(B)/masq | tee -a $(B)/results
	@sh tests/check_docs.sh $(B)/masq | tee -a $(B)/results
	@sh tests/editors/check.sh $(B)/masq | tee -a $(B)/results
	@sh tests/io/check_numpy.sh $(B)/masq | tee -a $(B)/results
	@sh tests/io/check_half.sh $(B)/masq | tee -a $(B)/results
	@sh tests/io/check_csv.sh $(B)/masq | tee -a $(B)/results
	@sh tests/io/check_tables.sh $(B)/masq | tee -a $(B)/results
	@sh tests/io/check_scipy.sh $(B)/masq | tee -a $(B)/results
	@sh tests/pictures/check_svg.sh $(B)/masq | tee -a $(B)/results
	@sh tools/conformance/run.sh $(B)/masq | tee -a $(B)/results
	@sh tools/conformance/run.sh $(B)/masq tests/conformance/upstream | tee -a $(B)/results
	@if [ -f "$(PY_INC)/Python.h" ]; then $(MAKE) --no-print-directory python >/dev/null; fi
	@PYTHON=$(PYTHON) sh python/tests/run.sh $(B) | tee -a $(B)/results
	@echo "--- again under AddressSanitizer + UndefinedBehaviorSanitizer ($(SAN_CC))"
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run_units.sh $(ASAN_DIR) | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run_units.sh $(ASAN_DIR) api | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tests/api/example_test.sh $(ASAN_DIR) | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run.sh $(ASAN_DIR)/masq | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tests/crashes/run.sh $(ASAN_DIR)/masq | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tools/conformance/run.sh $(ASAN_DIR)/masq | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tools/conformance/run.sh $(ASAN_DIR)/masq tests/conformance/upstream | tee -a $(B)/results
	@echo "--- the threaded API tests under ThreadSanitizer ($(TSAN_CC))"
	@TSAN_OPTIONS="halt_on_error=1 die_after_fork=0" MASQ_NUM_THREADS=3 sh tests/run_units.sh $(TSAN_DIR) api | tee -a $(B)/results
	@$(MAKE) --no-print-directory fuzz-test
	@sh tests/summary.sh $(B)/results

# The quick subsets while working: the C unit tests, the golden scripts
# (make golden T=NAME runs those whose path contains NAME).
unit: $(UNITS)
	@sh tests/run_units.sh $(B)

golden: $(B)/masq
	@sh tests/run.sh $(B)/masq $(T)

# The folders, and the rooms inside runtime/ and stdlib/, are one-way layers
# (docs/HACKING.md): tools/layercheck reads the objects' symbols and the
# sources' includes and fails on an upward edge.
layers: $(B)/libmasq.a
	@python3 tools/layercheck $(B)/obj

# The new user's first command: install what the build lacks (only that), build,
# take the tour, then explore a table with missing cells (examples/explore.masq).
# The second is make test.
demo:
	@sh tools/install-deps.sh build
	@$(MAKE) --no-print-directory all
	$(B)/masq examples/tour.masq
	$(B)/masq examples/explore.masq

# --- install --------------------------------------------------------------------
# GNU conventions: PREFIX for the layout, DESTDIR for staging (packages).
# masq.pc is written here, with the real prefix; ldconfig refreshes the
# loader's cache only for a real (root, unstaged) install.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) \
	  $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(B)/masq $(DESTDIR)$(BINDIR)/masq
	install -m 644 include/masq.h $(DESTDIR)$(INCLUDEDIR)/masq.h
	install -m 644 $(B)/libmasq.a $(DESTDIR)$(LIBDIR)/libmasq.a
	install -m 755 $(B)/$(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB)
	ln -sf $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmasq.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@LIBS_PRIVATE@|$(LIBS)|' masq.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/masq.pc
	install -m 644 docs/masq.1 $(DESTDIR)$(MANDIR)/man1/masq.1
	install -d $(DESTDIR)$(VIMDIR)/syntax $(DESTDIR)$(VIMDIR)/ftdetect $(DESTDIR)$(DATADIR)/masq
	install -m 644 $(B)/editors/vim/syntax/masq.vim $(DESTDIR)$(VIMDIR)/syntax/masq.vim
	install -m 644 $(B)/editors/vim/ftdetect/masq.vim $(DESTDIR)$(VIMDIR)/ftdetect/masq.vim
	install -m 644 $(B)/editors/masq.tmLanguage.json $(DESTDIR)$(DATADIR)/masq/masq.tmLanguage.json
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v $(LDCONFIG) >/dev/null; then \
	  $(LDCONFIG); fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/masq $(DESTDIR)$(INCLUDEDIR)/masq.h \
	  $(DESTDIR)$(LIBDIR)/libmasq.a $(DESTDIR)$(LIBDIR)/$(SHLIB) \
	  $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libmasq.so \
	  $(DESTDIR)$(PKGCONFIGDIR)/masq.pc $(DESTDIR)$(MANDIR)/man1/masq.1 \
	  $(DESTDIR)$(VIMDIR)/syntax/masq.vim $(DESTDIR)$(VIMDIR)/ftdetect/masq.vim \
	  $(DESTDIR)$(DATADIR)/masq/masq.tmLanguage.json

# --- conformance with torch.masked (tools/conformance, tests/conformance) ------
# make conformance: masq against the committed cases (no torch needed); also
# part of make test. make conformance-regen SEED=n: draw the cases again and
# compute their expected results with torch 1.13 (/usr/bin/python3 with
# python3-torch and python3-numpy), then run them.
.PHONY: conformance conformance-regen
SEED ?= 1
conformance: $(B)/masq
	@sh tools/conformance/run.sh $(B)/masq
	@sh tools/conformance/run.sh $(B)/masq tests/conformance/upstream

conformance-regen: $(B)/masq
	/usr/bin/python3 tools/conformance/gen.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_index.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_newops.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_csc.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_spindex.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_upstream.py
	/usr/bin/python3 tools/conformance/gen_layouts.py --seed $(SEED)
	/usr/bin/python3 tools/conformance/gen_dtypes.py
	/usr/bin/python3 tools/conformance/gen_inplace.py --seed $(SEED)
	@sh tools/conformance/run.sh $(B)/masq
	@sh tools/conformance/run.sh $(B)/masq tests/conformance/upstream

# --- benchmarks: make bench (bench/run.sh; docs/PERFORMANCE.md) --------------
# masq_bench times masq in-process through include/masq.h; baseline is the
# hand-written C loop, built with the same flags (plus -fopenmp-simd, which
# only honours its `omp simd` pragmas) and glibc's vector math if present.
.PHONY: bench
MVEC = $(shell printf 'int main(void){return 0;}\n' | $(CC) -x c - -lmvec -lm -o /dev/null 2>/dev/null && echo -lmvec)
# ROWS picks the rows (bench/run.sh: masked, dense, steps, padding, dask (issue 32, out of core; not in all), all, smoke; default all);
# install-deps.sh bench puts the peers on OpenBLAS (make test does not).
ROWS ?= all
bench: $(B)/masq $(B)/bench/masq_bench $(B)/bench/baseline
	@sh tools/install-deps.sh bench
	@if [ -f "$(PY_INC)/Python.h" ]; then $(MAKE) --no-print-directory python; fi
	BENCH_ROWS="$(ROWS)" sh bench/run.sh $(B)

$(B)/bench/masq_bench: bench/masq_bench.c bench/bench_util.h bench/peer_rows.h bench/pad_rows.h include/masq.h $(B)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(BASEFLAGS) $(OPT) -Iinclude -o $@ $< $(B)/libmasq.a $(LIBS)

$(B)/bench/baseline: bench/baseline.c bench/bench_util.h
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) $(BASEFLAGS) $(OPT) -fopenmp-simd -o $@ $< $(MVEC) -lm

# --- the Python module: make python (python/, docs/PYTHON.md) -----------------
# build/python/masq/: the package's Python files (python/masq/*.py) and its
# extension _masq.<abi>.so, on include/masq.h and libmasq.a; needs
# python3-dev. make test runs python/tests with pytest when it is built.
.PHONY: python
PYTHON ?= /usr/bin/python3
PY_INC  = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_EXT  = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_SRC  = $(wildcard python/src/*.c)
PY_MOD  = $(B)/python/masq/_masq$(PY_EXT)
PY_PKG  = $(patsubst python/%,$(B)/python/%,$(wildcard python/masq/*.py))
python: $(PY_MOD) $(PY_PKG)

$(PY_MOD): $(PY_SRC) python/src/pymasq.h include/masq.h $(B)/libmasq.a
	@test -f "$(PY_INC)/Python.h" || { echo "make python: no Python.h for $(PYTHON) (apt-get install python3-dev)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@rm -f $(B)/python/masq$(PY_EXT) # the extension before masq was a package: no stale copy beside it
	$(call say,CC,$@)$(CC) -std=c11 -fPIC -shared -fvisibility=hidden $(WARN) $(OPT) -Iinclude -I$(PY_INC) -o $@ $(PY_SRC) $(B)/libmasq.a $(LIBS)

$(B)/python/masq/%.py: python/masq/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# the type stubs beside the package (PEP 561)
python: $(B)/python/masq/__init__.pyi $(B)/python/masq/py.typed
$(B)/python/masq/__init__.pyi $(B)/python/masq/py.typed: $(B)/python/masq/%: python/masq/%
	@mkdir -p $(dir $@)
	cp $< $@

# --- fuzzing: make fuzz (tests/fuzz/run.sh) -----------------------------------
# Four libFuzzer harnesses (tests/fuzz/fuzz_*.c) over a third object tree
# built with -fsanitize=fuzzer-no-link,address,undefined. make fuzz runs each
# for FUZZ_SECONDS on its corpus in build/fuzz/corpus (seeded from
# tests/fuzz/corpus and the golden scripts, and kept between runs); make
# test runs a short smoke of each (fuzz-test), and replays
# tests/crashes/<harness>/ with the plain replay builds (tests/fuzz/replay.c,
# ASan+UBSan, no libFuzzer).
.PHONY: fuzz fuzz-test fuzzers
FUZZERS      = fuzz_eval fuzz_dis fuzz_npy fuzz_api fuzz_host
FUZZ_DIR     = $(B)/fuzz
FUZZ_OBJ     = $(call objs,$(FUZZ_DIR))
FUZZ_BINS    = $(patsubst %,$(FUZZ_DIR)/bin/%,$(FUZZERS))
FUZZ_REPLAYS = $(patsubst %,$(FUZZ_DIR)/replay/%,$(FUZZERS))
FUZZ_DICTS   = $(FUZZ_DIR)/masq.dict tests/fuzz/npy.dict
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20
FUZZFLAGS    = $(SANFLAGS) -fsanitize=fuzzer-no-link

$(eval $(call tree,$(FUZZ_DIR),SAN_CC,FUZZFLAGS))

$(FUZZ_DIR)/bin/%: tests/fuzz/%.c tests/fuzz/fuzz.h include/masq.h $(FUZZ_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -fsanitize=fuzzer -Iinclude -o $@ $< $(FUZZ_DIR)/libmasq.a $(LIBS)

$(FUZZ_DIR)/replay/%: tests/fuzz/%.c tests/fuzz/replay.c tests/fuzz/fuzz.h include/masq.h $(ASAN_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -o $@ $< tests/fuzz/replay.c $(ASAN_DIR)/libmasq.a $(LIBS)

# The language's dictionary: its syntax (committed), every keyword from
# lexer/keywords.h and every builtin name from `masq --builtins`, so it
# follows the language without anyone editing it.
$(FUZZ_DIR)/masq.dict: tests/fuzz/masq.dict lexer/keywords.h $(B)/masq
	@mkdir -p $(dir $@)
	$(call say,GEN,$@){ cat tests/fuzz/masq.dict; \
	  sed -n 's/^ *X("\([a-z_]*\)".*/"\1"/p' lexer/keywords.h; \
	  $(B)/masq --builtins | sed -n 's/^- `\([A-Za-z_0-9]*\).*/"\1"/p'; \
	  $(B)/masq --builtins | sed -n 's/^Constants://p' | tr ',' '\n' | sed -n 's/.*`\(.*\)`.*/"\1"/p'; \
	} > $@.tmp && mv $@.tmp $@

fuzzers: $(FUZZ_BINS) $(FUZZ_REPLAYS) $(FUZZ_DICTS)

fuzz: fuzzers
	@sh tests/fuzz/run.sh $(B) $(FUZZ_SECONDS) $(FUZZERS)

fuzz-test: fuzzers
	@sh tests/fuzz/run.sh $(B) $(FUZZ_SMOKE_SECONDS) $(FUZZERS) | tee -a $(B)/results
	@sh tests/fuzz/replay.sh $(B) $(FUZZERS) | tee -a $(B)/results

clean:
	rm -rf $(B)

# --- soak: make soak (tests/soak/soak.c; not part of make test) ----------------
# SOAK_THREADS states (default 8) under the sanitizers, each with a memory
# cap and a deadline, on a random mix of scripts for SOAK_SECONDS.
.PHONY: soak
SOAK_SECONDS ?= 60
SOAK_THREADS ?= 8
$(ASAN_DIR)/soak: tests/soak/soak.c include/masq.h $(ASAN_DIR)/libmasq.a
	$(call say,CC,$@)$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -o $@ $< $(ASAN_DIR)/libmasq.a $(LIBS)

# A small quarantine, so that the resident set measures masq, not ASan.
soak: $(ASAN_DIR)/soak
	ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16 SOAK_SECONDS=$(SOAK_SECONDS) \
	  SOAK_THREADS=$(SOAK_THREADS) $(ASAN_DIR)/soak

# --- coverage: make coverage (gcc --coverage -O0, objects in build/cov) -------
# Builds the library, the CLI and the C tests with coverage counters, runs
# every suite against them (failures are shown, not fatal: this measures),
# and prints line and branch coverage of the library per folder, room and file
# (tools/coverage/summary.py over gcov's JSON, which says what it counts).
# Fails when the library's branch coverage is below COVERAGE_MIN percent.
# -DMQ_NO_WIDE: one copy of each MQ_WIDE kernel (runtime/tensor/internal.h), not an AVX2
# clone and a default one of which this CPU runs only one. re2c without
# -i: its #line directives attribute the lexer's actions to lexer.re.
.PHONY: coverage
COV_DIR   = $(B)/cov
COV_OBJ   = $(call objs,$(COV_DIR))
COV_CC   ?= gcc
COVFLAGS  = -O0 -g --coverage -DMQ_NO_WIDE
COVERAGE_MIN ?= 85
COV_UNITS = $(patsubst tests/unit/%.c,$(COV_DIR)/unit/%,$(UNIT_SRC))
COV_APIS  = $(patsubst tests/api/%.c,$(COV_DIR)/api/%,$(API_SRC))

$(eval $(call tree,$(COV_DIR),COV_CC,COVFLAGS))

$(COV_DIR)/gen/lexer.c: lexer/lexer.re $(GEN)/parser.h
	@mkdir -p $(dir $@)
	$(call say,RE2C,$<)$(RE2C) -W -Werror --no-generation-date --no-version -o $@ $<

$(COV_DIR)/obj/gen/lexer.o: $(COV_DIR)/gen/lexer.c $(COV_DIR)/obj/gen/lexer.d | $(GEN)/parser.h
	@mkdir -p $(dir $@)
	$(call compile,COV_CC,COVFLAGS) -c -o $@ $< && touch $@

$(COV_DIR)/masq: $(CLI_SRC) $(wildcard cli/*.h) $(COV_DIR)/libmasq.a
	$(call say,CC,$@)$(COV_CC) $(BASEFLAGS) $(COVFLAGS) -Iinclude -o $@ $(CLI_SRC) $(COV_DIR)/libmasq.a $(CLI_LIBS) $(LIBS)

$(COV_DIR)/unit/%: tests/unit/%.c $(COV_DIR)/unit/%.d $(COV_DIR)/libmasq.a
	@mkdir -p $(@D)
	$(call compile,COV_CC,COVFLAGS) -fvisibility=default -o $@ $< $(COV_DIR)/libmasq.a $(LIBS) && touch $@

$(COV_DIR)/api/%: tests/api/%.c tests/api/check.h include/masq.h $(COV_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(COV_CC) $(BASEFLAGS) $(COVFLAGS) -Iinclude -o $@ $< $(COV_DIR)/libmasq.a $(LIBS)

$(COV_DIR)/examples/embed: examples/embed/embed.c include/masq.h $(COV_DIR)/libmasq.a
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(COV_CC) $(BASEFLAGS) $(COVFLAGS) -Iinclude -o $@ $< $(COV_DIR)/libmasq.a $(LIBS)

coverage: $(COV_DIR)/masq $(COV_UNITS) $(COV_APIS) $(COV_DIR)/examples/embed
	@find $(COV_DIR) -name '*.gcda' -delete
	-@sh tests/run_units.sh $(COV_DIR)
	-@sh tests/run_units.sh $(COV_DIR) api
	-@sh tests/api/example_test.sh $(COV_DIR)
	-@sh tests/run.sh $(COV_DIR)/masq
	-@sh tests/repl/repl_test.sh $(COV_DIR)/masq
	-@sh tests/repl/newcomer_test.sh $(COV_DIR)/masq
	-@sh tests/repl/cli_test.sh $(COV_DIR)/masq
	-@sh tests/repl/transcript.sh $(COV_DIR)/masq
	-@sh tests/check_docs.sh $(COV_DIR)/masq
	-@sh tests/io/check_numpy.sh $(COV_DIR)/masq
	-@sh tests/io/check_half.sh $(COV_DIR)/masq
	-@sh tests/io/check_csv.sh $(COV_DIR)/masq
	-@sh tests/io/check_scipy.sh $(COV_DIR)/masq
	-@sh tests/pictures/check_svg.sh $(COV_DIR)/masq
	-@sh tools/conformance/run.sh $(COV_DIR)/masq
	-@sh tests/crashes/run.sh $(COV_DIR)/masq
	@python3 tools/coverage/summary.py $(COV_DIR)/obj --min-branches $(COVERAGE_MIN)

# --- header dependencies (DEPFLAGS) ---------------------------------------------
# A .d file not made yet is made by this empty rule, which rebuilds its output.
$(DEPS): ;
include $(wildcard $(DEPS))
