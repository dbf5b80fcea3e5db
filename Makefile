# tcopy: top-level build, a PGXS makefile for the extension that also builds
# the rest through the parts' own makefiles.
#
#   make              the extension (tcopy.so), build/tserver, build/tserver-cli
#   make install      the extension, and tserver and tserver-cli into
#                     `pg_config --bindir`
#   make check        every test (unit, sanitizer, fuzzing, integration):
#                     test/run_tests.sh
#   make check-fast   a subset for the inner loop: test/run_tests.sh --fast
#   make installcheck the pg_regress tests of sql/ against an installed server
#   make WERROR=      warnings do not stop the build
#
# src/common (with the protobuf-c code generated from proto/) is compiled
# once, by src/common/Makefile, into build/libtccommon.a; the extension, the
# tserver (src/tserver), tserver-cli (src/cli) and the tests (test/Makefile)
# all link that one library.  No Postgres header reaches it.

PG_CONFIG ?= pg_config
WERROR ?= -Werror

TC_BUILD = build
TC_GEN_H = $(TC_BUILD)/gen/tcopy.pb-c.h
TC_LIB = $(TC_BUILD)/libtccommon.a
# always the normal (not sanitizer) build, whatever the caller's SANITIZE
TC_MAKE = $(MAKE) SANITIZE=0 FUZZ=0 BUILD=$(abspath $(TC_BUILD)) WERROR=$(WERROR)

MODULE_big = tcopy
# the extension's layers, lowest first: each calls only those before it
# (docs/architecture.md; test/tools/check_layers.sh checks the includes)
OBJS = src/ext/tcopy.o \
	$(addprefix src/ext/catalog/,enum_labels.o extension.o option.o table_names.o table_options.o tables.o) \
	$(addprefix src/ext/codec/,batch.o batch_protobuf.o batch_wire.o codec.o codec_cache.o forms.o forms_decode.o keys.o) \
	$(addprefix src/ext/connection/,connection.o errors.o) \
	$(addprefix src/ext/transaction/,backup.o records.o recovery.o recovery_worker.o row_lines.o session_errors.o snapshot.o ssi.o truncated.o writer.o xact.o xact_commit.o xact_drop.o xact_prepared.o) \
	$(addprefix src/ext/fdw/,agg_results.o fdw.o fdw_analyze.o fdw_direct.o fdw_estimate.o fdw_modify.o fdw_parallel.o fdw_point_read.o fdw_row_marks.o fdw_scan.o fdw_upsert.o key_range.o partition_move.o pushdown_agg.o pushdown_order.o pushdown_quals.o row_locks.o) \
	$(addprefix src/ext/copy/,copy.o copy_bad_rows.o copy_chunks.o copy_error_message.o copy_fields.o copy_file_map.o copy_parallel.o copy_parallel_safe.o copy_reader.o copy_ring.o copy_route.o copy_simd.o copy_source.o copy_targets.o copy_typed.o copy_worker.o load_id.o) \
	$(addprefix src/ext/commands/,alter.o alter_rewrite.o check.o hook.o monitor.o rename.o)
PGFILEDESC = "tcopy - foreign-data wrapper for tserver tables"
EXTENSION = tcopy
DATA = src/ext/tcopy--1.0.sql \
	src/ext/tcopy--1.0--1.1.sql src/ext/tcopy--1.1--1.2.sql src/ext/tcopy--1.2--1.3.sql \
	src/ext/tcopy--1.3--1.4.sql src/ext/tcopy--1.4--1.5.sql src/ext/tcopy--1.5--1.6.sql \
	src/ext/tcopy--1.6--1.7.sql src/ext/tcopy--1.7--1.8.sql src/ext/tcopy--1.8--1.9.sql \
	src/ext/tcopy--1.9--1.10.sql src/ext/tcopy--1.10--1.11.sql \
	src/ext/tcopy--1.11--1.12.sql
# regression tests need a tserver: test/pg_tests.sh runs them (make check)

PG_CPPFLAGS = -I$(TC_BUILD)/gen -Isrc/common -Isrc/ext/include
# what -Wextra finds in Postgres' own headers and idioms is turned off
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-sign-compare $(WERROR)
SHLIB_LINK = $(TC_LIB) -lprotobuf-c -lssl -lcrypto

define run_tests
	test/run_tests.sh
endef

# PGXS has a `check` of its own, which refuses to run outside a Postgres
# source tree; ours runs test/run_tests.sh.  Make warns about a replaced
# recipe, so a lone `make check` does not read PGXS at all.
ifeq ($(strip $(MAKECMDGOALS)),check)

.PHONY: check
check:
	$(run_tests)

else ifeq ($(strip $(MAKECMDGOALS)),check-fast)

# the inner loop's subset of check, a few minutes
.PHONY: check-fast
check-fast:
	test/run_tests.sh --fast

else

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifneq ($(filter check,$(MAKECMDGOALS)),)
check:
	$(run_tests)
endif

# The generated header comes first: every extension object includes it.
$(OBJS) $(OBJS:.o=.bc): $(TC_GEN_H) $(wildcard src/ext/include/tcopy/*.h src/ext/*/*.h) \
	$(wildcard src/common/*.h)

# The shared library, made by src/common's rules, once: the daemon's and
# the client's builds below come after it, never alongside it, so that
# parallel makes do not write one file twice.
.PHONY: tc-common tserver install-tserver remove-old-scripts uninstall-tserver clean-tserver
tc-common:
	+$(TC_MAKE) -C src/common

$(TC_LIB) $(TC_GEN_H): | tc-common ;

$(shlib): $(TC_LIB)

all: tserver

tserver: tc-common
	+$(TC_MAKE) -C src/tserver
	+$(TC_MAKE) -C src/cli

install: install-tserver remove-old-scripts

# The full install scripts of 1.1 to 1.6 that an install before 1.7 left:
# CREATE EXTENSION would start from one of them instead of tcopy--1.0.sql.
remove-old-scripts: installdirs
	rm -f $(foreach v,1.1 1.2 1.3 1.4 1.5 1.6,'$(DESTDIR)$(datadir)/$(datamoduledir)/tcopy--$(v).sql')

install-tserver: tserver installdirs
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(TC_BUILD)/tserver $(TC_BUILD)/tserver-cli '$(DESTDIR)$(bindir)/'

uninstall: uninstall-tserver

uninstall-tserver:
	rm -f '$(DESTDIR)$(bindir)/tserver' '$(DESTDIR)$(bindir)/tserver-cli'

clean: clean-tserver

clean-tserver:
	rm -rf $(TC_BUILD) build-asan build-fuzz

endif
