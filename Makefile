# tagproxy: build, run, test, bench.
#
#   make          build/tagproxy
#   make deps     install the Debian (and npm) packages everything below needs
#   make run      a local 3+3 Redis Cluster and the proxy in the foreground
#   make test     unit, integration and end-to-end tests (own cluster, free ports)
#   make bench    proxy vs direct redis-server, ratios in one run
#   make bench-migrate   tagproxy migrate vs redis-cli --cluster import
#   make chaos    the fault suite: failovers, kills, stops under a verified load
#   make soak     SOAK_MINUTES (60) of mixed load; fails if a resource grows
#
# make SANITIZE=address,undefined test   builds everything with sanitizers;
# any finding stops the process it is in, so the test that ran it fails.

# The user's CFLAGS (make CFLAGS=-O0) set the optimisation and debugging
# only: the project's own flags (the language, the warnings, the include
# path) are kept apart in FINAL_CFLAGS, as Redis's Makefile does.
CC       ?= cc
PKGS      = libevent libevent_pthreads libevent_openssl hiredis openssl liburing
CFLAGS   ?= -O2 -g
FINAL_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Werror=vla -Wshadow \
               -Wmissing-prototypes -Wno-format-truncation \
               -I. $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
ifdef SANITIZE
FINAL_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif

B         = build
# The foundations both sides use (lib/), the cluster and key layout
# libraries, the daemon's own layers (proxy/) and the migration tool:
# scripts/layers ranks them.
SRCS      = $(wildcard lib/base/*.c lib/net/*.c lib/proto/*.c cluster/*.c keylayout/*.c \
                       proxy/config/*.c proxy/core/*.c proxy/families/*.c migrate/*.c \
                       proxy/ops/*.c)
LUA       = $(wildcard keylayout/lua/*.lua)
OBJS      = $(SRCS:%.c=$(B)/%.o) $(B)/gen/keylayout_lua.o $(B)/gen/revision.o
LIB_OBJS  = $(filter-out $(B)/proxy/ops/main.o,$(OBJS))
UNIT      = $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/test_*.c))
INTEG     = $(patsubst tests/integration/%.c,$(B)/tests/integration/%,$(wildcard tests/integration/test_*.c))
TEST_HELP = $(wildcard tests/unit/check_main.c)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
# Each fuzz target's LLVMFuzzerTestOneInput, built with $(CC) and the replay
# main (tests/fuzz/replay.c) over its seeds: run by make test as unit tests.
FUZZ_TARGETS = resp reply layout command rules slots client
REPLAY    = $(FUZZ_TARGETS:%=$(B)/tests/fuzz/replay_%)

.PHONY: all deps run test unit integration e2e bench bench-migrate fuzz chaos soak clean FORCE

all: $(B)/tagproxy

$(B)/tagproxy: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each object depends on the headers it includes (-MMD: build/**/*.d).
$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -MMD -MP -c -o $@ $<

# keylayout/lua/*.lua, embedded as C arrays (keylayout/index_lua.h)
$(B)/gen/keylayout_lua.c: $(LUA) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh $@ $(LUA)

# the git revision and liburing version (lib/base/version.h), rewritten only
# when they change
$(B)/gen/revision.c: FORCE
	@mkdir -p $(dir $@)
	@sh scripts/revision.sh $@

FORCE:

$(B)/gen/%.o: $(B)/gen/%.c
	$(CC) $(FINAL_CFLAGS) -c -o $@ $<

$(B)/tests/unit/%: tests/unit/%.c $(LIB_OBJS) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(CHECK_LIBS) $(LDLIBS)

# The integration tests' shared helpers, compiled once.
HARNESS_OBJ = $(B)/tests/integration/harness.o
$(HARNESS_OBJ): tests/integration/harness.c tests/integration/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -c -o $@ $<

$(B)/tests/integration/%: tests/integration/%.c $(LIB_OBJS) $(HARNESS_OBJ) $(wildcard tests/integration/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(LDFLAGS) -o $@ $< $(HARNESS_OBJ) $(LIB_OBJS) $(CHECK_LIBS) $(LDLIBS)

# The fault suite (tests/chaos): a client of the proxy and the cluster only,
# so it links none of the proxy's objects.
CHAOS_SRCS = $(wildcard tests/chaos/*.c)
$(B)/tests/chaos/chaos: $(CHAOS_SRCS) tests/chaos/chaos.h
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(LDFLAGS) -o $@ $(CHAOS_SRCS) $(LDLIBS)

# The soak (tests/soak): its own cluster and proxy, as the fault suite's.
SOAK_SRCS = tests/soak/soak.c tests/chaos/cluster.c
$(B)/tests/soak/soak: $(SOAK_SRCS) tests/chaos/chaos.h
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(LDFLAGS) -o $@ $(SOAK_SRCS) $(LDLIBS)

# fuzz_slots includes cluster/topology.c itself (its builder is static).
REPLAY_OBJS = $(LIB_OBJS)
$(B)/tests/fuzz/replay_slots: REPLAY_OBJS = $(filter-out $(B)/cluster/topology.o,$(LIB_OBJS))
$(B)/tests/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(LDFLAGS) -DREPLAY_DIR='"tests/fuzz/seeds-$*"' -o $@ $< tests/fuzz/replay.c \
	    $(REPLAY_OBJS) $(LDLIBS)

deps:
	@scripts/deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/run.sh

test: deps
	@$(MAKE) --no-print-directory all $(UNIT) $(INTEG) $(REPLAY) $(B)/tests/chaos/chaos \
	    $(B)/tests/soak/soak
	@scripts/test.sh $(UNIT) $(REPLAY)

unit: all $(UNIT) $(REPLAY)
	@scripts/test.sh --unit-only $(UNIT) $(REPLAY)

# The whole fault suite, with its own 3+3 cluster: one table (tests/chaos).
chaos: deps
	@$(MAKE) --no-print-directory all $(B)/tests/chaos/chaos
	@$(B)/tests/chaos/chaos

# A long run of mixed load with the proxy's resources sampled each minute
# (tests/soak/soak.c): SOAK_MINUTES=N make soak.
soak: deps
	@$(MAKE) --no-print-directory all $(B)/tests/soak/soak
	@$(B)/tests/soak/soak

# tagproxy migrate against redis-cli --cluster import (scripts/bench-migrate.sh).
bench-migrate: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench-migrate.sh

bench: deps
	@$(MAKE) --no-print-directory all $(B)/bench/relay $(B)/bench/trackload
	@scripts/bench.sh

# The cheapest proxy there is, a byte-copying relay: make bench's measure of
# what the extra hop alone costs (tests/bench/relay.c).
$(B)/bench/relay: tests/bench/relay.c
	@mkdir -p $(@D)
	$(CC) -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ $<

# GET load from RESP3 clients with CLIENT TRACKING on or off: make bench's
# tracking rows (tests/bench/trackload.c; redis-benchmark cannot track).
$(B)/bench/trackload: tests/bench/trackload.c
	@mkdir -p $(@D)
	$(CC) -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o $@ $<

# libFuzzer harnesses over the parsers' own sources (clang). FUZZ_SECONDS each.
# New inputs go to build/fuzz/corpus-*; tests/fuzz/seeds-* are the committed
# seeds that make test replays.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c11 -D_GNU_SOURCE -I.
FUZZ_SLOTS_SRCS = tests/fuzz/fuzz_slots.c lib/proto/reply.c cluster/syncconn.c cluster/slot.c \
	lib/base/log.c lib/base/hostport.c lib/proto/resp.c lib/net/tls.c
# fuzz_client runs a whole worker: every daemon source but main.c.
FUZZ_CLIENT_SRCS = tests/fuzz/fuzz_client.c $(filter-out proxy/ops/main.c,$(SRCS)) $(B)/gen/keylayout_lua.c
fuzz: $(B)/gen/keylayout_lua.c
	@mkdir -p $(FUZZ_TARGETS:%=$(B)/fuzz/corpus-%)
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_resp tests/fuzz/fuzz_resp.c lib/proto/resp.c $(shell pkg-config --cflags --libs libevent)
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_reply tests/fuzz/fuzz_reply.c lib/proto/reply.c
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_layout tests/fuzz/fuzz_layout.c keylayout/layout.c keylayout/layoutload.c keylayout/escape.c keylayout/rules.c keylayout/overlap.c cluster/slot.c
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_command tests/fuzz/fuzz_command.c lib/proto/command.c lib/proto/command_table.c
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_rules tests/fuzz/fuzz_rules.c keylayout/layout.c keylayout/layoutload.c keylayout/escape.c keylayout/rules.c keylayout/overlap.c cluster/slot.c
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_slots $(FUZZ_SLOTS_SRCS) \
	    $(shell pkg-config --cflags --libs hiredis libevent openssl)
	clang $(FUZZ_FLAGS) -o $(B)/fuzz/fuzz_client $(FUZZ_CLIENT_SRCS) \
	    $(shell pkg-config --cflags --libs $(PKGS)) -lpthread
	$(B)/fuzz/fuzz_resp -max_total_time=$(FUZZ_SECONDS) -max_len=512 $(B)/fuzz/corpus-resp tests/fuzz/seeds-resp
	$(B)/fuzz/fuzz_reply -max_total_time=$(FUZZ_SECONDS) -max_len=512 $(B)/fuzz/corpus-reply tests/fuzz/seeds-reply
	$(B)/fuzz/fuzz_layout -max_total_time=$(FUZZ_SECONDS) -max_len=256 $(B)/fuzz/corpus-layout tests/fuzz/seeds-layout
	$(B)/fuzz/fuzz_command -max_total_time=$(FUZZ_SECONDS) -max_len=256 $(B)/fuzz/corpus-command tests/fuzz/seeds-command
	$(B)/fuzz/fuzz_rules -max_total_time=$(FUZZ_SECONDS) -max_len=1024 $(B)/fuzz/corpus-rules tests/fuzz/seeds-rules
	$(B)/fuzz/fuzz_slots -max_total_time=$(FUZZ_SECONDS) -max_len=2048 $(B)/fuzz/corpus-slots tests/fuzz/seeds-slots
	$(B)/fuzz/fuzz_client -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(B)/fuzz/corpus-client tests/fuzz/seeds-client

clean:
	rm -rf $(B)

-include $(OBJS:.o=.d)
