# build.mk: the compiler settings shared by every part of tcopy that is built
# without Postgres headers (src/common, src/tserver, src/cli, test/); each of
# their makefiles includes it.  Postgres' PGXS builds the extension itself
# (the top Makefile), linking $(BUILD)/libtccommon.a.
#
#   SANITIZE=1   AddressSanitizer + UBSan, into build-asan/
#   FUZZ=1       clang with coverage for libFuzzer, into build-fuzz/
#   BUILD=DIR    another output directory
#   WERROR=      warnings do not stop the build

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
SANITIZE ?= 0
FUZZ ?= 0
FUZZ_CC ?= clang
ifeq ($(FUZZ),1)
BUILD ?= $(TOP)/build-fuzz
CC = $(FUZZ_CC)
# every object gets coverage instrumentation; only a harness links libFuzzer
SAN_FLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
MALLOC_LIB =
OPT = -O1 -g
else ifeq ($(SANITIZE),1)
BUILD ?= $(TOP)/build-asan
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
MALLOC_LIB =
OPT = -O1 -g
else
BUILD ?= $(TOP)/build
SAN_FLAGS =
# tcmalloc: per-thread caches for the connection threads' arenas and buffers
MALLOC_LIB = -ltcmalloc
OPT = -O2 -g
endif

CC ?= cc
WERROR ?= -Werror
CFLAGS_ALL = -std=gnu11 -D_GNU_SOURCE $(OPT) -fPIC -Wall -Wextra $(WERROR) -Wno-unused-parameter \
	-pthread $(SAN_FLAGS) -I$(BUILD)/gen -I$(TOP)/src/common $(CFLAGS)
LDLIBS_ALL = -lprotobuf-c -lssl -lcrypto -pthread $(LDLIBS)
# The tserver links Debian's static librocksdb.a (librocksdb-dev ships it
# and the -dev packages of its compression libraries): RocksDB's per-key
# perf counters are thread-locals, which in the shared library cost a
# __tls_get_addr call each; static, a scan of 5M rows takes about 15% less
# of the tserver's CPU (docs/scans.md#the-plain-scan)
ROCKSDB_LIB = -Wl,-Bstatic -lrocksdb -Wl,-Bdynamic -lstdc++ -lsnappy -llz4 -lzstd -lz -lbz2 -ldl -lm

GEN_H = $(BUILD)/gen/tcopy.pb-c.h
# the tserver's records in its store (proto/ts_store.proto): generated with
# the rest, compiled into libtserver.a only
STORE_GEN_C = $(BUILD)/gen/ts_store.pb-c.c
STORE_GEN_H = $(BUILD)/gen/ts_store.pb-c.h
COMMON_LIB = $(BUILD)/libtccommon.a
TSERVER_LIB = $(BUILD)/libtserver.a
COMMON_H = $(wildcard $(TOP)/src/common/*.h)
# the tserver's layers, lowest first (docs/architecture.md): each calls only
# those before it (test/tools/check_layers.pl)
TSERVER_LAYERS = storage replication staging registry session server
TSERVER_H = $(foreach l,$(TSERVER_LAYERS),$(wildcard $(TOP)/src/tserver/$(l)/*.h))
TSERVER_INC = $(foreach l,$(TSERVER_LAYERS),-I$(TOP)/src/tserver/$(l))

# the sub-makes' own invocations of each other carry the same settings
SUBMAKE = $(MAKE) SANITIZE=$(SANITIZE) FUZZ=$(FUZZ) BUILD=$(BUILD) WERROR=$(WERROR)
