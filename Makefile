# masq - build, test and install.
#
#   make            build/masq and build/libmasq.a
#   make test       unit + golden + REPL tests, then again under ASan+UBSan
#   make demo       build and run the tour (examples/tour.masq)
#   make clean
#
# Generated sources (re2c, Bison) and all objects live in build/.

CC      ?= cc
RE2C    ?= re2c
BISON   ?= bison
PREFIX  ?= /usr/local

WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# -fno-math-errno lets expf/logf/sqrtf vectorize; it changes no IEEE result.
# Never -ffast-math.
BASEFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -fno-math-errno -fvisibility=hidden $(WARN)
OPT     ?= -O2 -g
INC      = -Iinclude -Ivm -I$(GEN) -Ilexer -Iparser
LIBS     = -lm
CLI_LIBS = -lreadline

B        = build
GEN      = $(B)/gen

LIB_SRC  = $(wildcard vm/*.c) $(wildcard runtime/*.c) $(wildcard stdlib/*.c) \
           $(wildcard parser/*.c)
GEN_SRC  = $(GEN)/lexer.c $(GEN)/parser.c
CLI_SRC  = $(wildcard cli/*.c)
UNIT_SRC = $(wildcard tests/unit/*.c)

# One object tree per flavour: normal and sanitized.
objs = $(patsubst %.c,$(1)/obj/%.o,$(LIB_SRC)) $(patsubst $(GEN)/%.c,$(1)/obj/gen/%.o,$(GEN_SRC))

LIB_OBJ  = $(call objs,$(B))
ASAN_DIR = $(B)/asan
ASAN_OBJ = $(call objs,$(ASAN_DIR))
SAN_CC  ?= $(shell command -v clang >/dev/null 2>&1 && echo clang || echo $(CC))
SANFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: all test unit golden repl-test asan-test demo clean install
all: $(B)/masq $(B)/libmasq.a

# --- generated front end ----------------------------------------------------
$(GEN)/parser.c $(GEN)/parser.h &: parser/parser.y
	@mkdir -p $(GEN)
	$(BISON) -Wall -Werror -d -o $(GEN)/parser.c parser/parser.y

$(GEN)/lexer.c: lexer/lexer.re $(GEN)/parser.h
	@mkdir -p $(GEN)
	$(RE2C) -W -Werror --no-generation-date --no-version -i -o $@ $<

HDRS = $(wildcard include/*.h vm/*.h runtime/*.h stdlib/*.h parser/*.h lexer/*.h) $(GEN)/parser.h

# --- normal build -------------------------------------------------------------
$(B)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(OPT) $(INC) -c -o $@ $<

$(B)/obj/gen/%.o: $(GEN)/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(OPT) $(INC) -c -o $@ $<

$(B)/libmasq.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/masq: $(CLI_SRC) $(wildcard cli/*.h) $(B)/libmasq.a
	$(CC) $(BASEFLAGS) $(OPT) -Iinclude -o $@ $(CLI_SRC) $(B)/libmasq.a $(CLI_LIBS) $(LIBS)

$(B)/unit/%: tests/unit/%.c $(B)/libmasq.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(OPT) $(INC) -fvisibility=default -o $@ $< $(B)/libmasq.a $(LIBS)

# --- sanitized build ----------------------------------------------------------
$(ASAN_DIR)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) $(INC) -c -o $@ $<

$(ASAN_DIR)/obj/gen/%.o: $(GEN)/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) $(INC) -c -o $@ $<

$(ASAN_DIR)/libmasq.a: $(ASAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(ASAN_DIR)/masq: $(CLI_SRC) $(wildcard cli/*.h) $(ASAN_DIR)/libmasq.a
	$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) -Iinclude -o $@ $(CLI_SRC) $(ASAN_DIR)/libmasq.a $(CLI_LIBS) $(LIBS)

$(ASAN_DIR)/unit/%: tests/unit/%.c $(ASAN_DIR)/libmasq.a $(HDRS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(BASEFLAGS) $(SANFLAGS) $(INC) -fvisibility=default -o $@ $< $(ASAN_DIR)/libmasq.a $(LIBS)

UNITS      = $(patsubst tests/unit/%.c,$(B)/unit/%,$(UNIT_SRC))
ASAN_UNITS = $(patsubst tests/unit/%.c,$(ASAN_DIR)/unit/%,$(UNIT_SRC))

# --- tests --------------------------------------------------------------------
# Each suite appends "N passed, N failed" to build/results; tests/summary.sh
# adds them up into the closing line and fails if anything failed.
test: all $(UNITS) $(ASAN_DIR)/masq $(ASAN_UNITS)
	@rm -f $(B)/results
	@sh tests/run_units.sh $(B) | tee -a $(B)/results
	@sh tests/run.sh $(B)/masq | tee -a $(B)/results
	@sh tests/repl/repl_test.sh $(B)/masq | tee -a $(B)/results
	@echo "--- again under AddressSanitizer + UndefinedBehaviorSanitizer ($(SAN_CC))"
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run_units.sh $(ASAN_DIR) | tee -a $(B)/results
	@ASAN_OPTIONS=detect_leaks=1 sh tests/run.sh $(ASAN_DIR)/masq | tee -a $(B)/results
	@sh tests/summary.sh $(B)/results

# The new user's first command: install what is missing, build, take the tour.
demo:
	@sh tools/install-deps.sh
	@$(MAKE) --no-print-directory all
	$(B)/masq examples/tour.masq

clean:
	rm -rf $(B)
