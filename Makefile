# tcopy: top-level build, a PGXS makefile that also builds the tserver.
#
#   make              the extension (tcopy.so), tserver and tserver-cli
#   make install      the extension, and tserver and tserver-cli into
#                     `pg_config --bindir`
#   make check        every test (unit, sanitizer and integration):
#                     test/run_tests.sh
#   make installcheck the pg_regress tests of sql/ against an installed server
#   make WERROR=      warnings do not stop the build
#
# The daemon and the code both halves share (src/common, and the protobuf-c
# code generated from proto/) build through src/tserver/Makefile into
# build/.  The extension links the shared objects from there: they are
# compiled once, by those rules, and no Postgres header reaches them.

PG_CONFIG ?= pg_config
WERROR ?= -Werror

TC_BUILD = build
TC_GEN_H = $(TC_BUILD)/gen/tcopy.pb-c.h
TC_OBJS = $(TC_BUILD)/obj/tcopy.pb-c.o \
	$(addprefix $(TC_BUILD)/obj/,tc_arena.o tc_frame.o tc_client.o tc_wire.o)
# always the normal (not sanitizer) build, whatever the caller's SANITIZE
TC_MAKE = $(MAKE) -C src/tserver SANITIZE=0 BUILD=$(abspath $(TC_BUILD))

MODULE_big = tcopy
OBJS = $(addprefix src/ext/,tcopy.o option.o connection.o xact.o codec.o \
	batch.o batch_wire.o batch_protobuf.o writer.o fdw.o fdw_scan.o \
	fdw_modify.o copy.o copy_fields.o rename.o hook.o)
PGFILEDESC = "tcopy - foreign-data wrapper for tserver tables"
EXTENSION = tcopy
DATA = src/ext/tcopy--1.0.sql
# regression tests need a tserver: test/pg_tests.sh runs them (make check)

PG_CPPFLAGS = -I$(TC_BUILD)/gen -Isrc/common -Isrc/ext
# what -Wextra finds in Postgres' own headers and idioms is turned off
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-sign-compare $(WERROR)
SHLIB_LINK = $(TC_OBJS) -lprotobuf-c -lcrypto

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

else

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifneq ($(filter check,$(MAKECMDGOALS)),)
check:
	$(run_tests)
endif

# The generated header comes first: every extension object includes it.
$(OBJS) $(OBJS:.o=.bc): $(TC_GEN_H) src/ext/tcopy.h $(wildcard src/common/*.h)

# The shared objects, made by src/tserver's rules; these prerequisites
# mirror that makefile's so that both agree on what is out of date.
$(TC_GEN_H): proto/tcopy.proto
	+$(TC_MAKE) $(abspath $@)

$(TC_BUILD)/obj/tcopy.pb-c.o: $(TC_GEN_H)
	+$(TC_MAKE) $(abspath $@)

$(TC_BUILD)/obj/tc_%.o: src/common/tc_%.c $(TC_GEN_H) $(wildcard src/common/*.h)
	+$(TC_MAKE) $(abspath $@)

$(shlib): $(TC_OBJS)

# The daemon is built after the shared objects, never alongside their
# builds above, so that parallel makes do not write one file twice.
.PHONY: tserver install-tserver uninstall-tserver clean-tserver
all: tserver

tserver: $(TC_OBJS)
	+$(TC_MAKE)

install: install-tserver

install-tserver: tserver installdirs
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(TC_BUILD)/tserver $(TC_BUILD)/tserver-cli '$(DESTDIR)$(bindir)/'

uninstall: uninstall-tserver

uninstall-tserver:
	rm -f '$(DESTDIR)$(bindir)/tserver' '$(DESTDIR)$(bindir)/tserver-cli'

clean: clean-tserver

clean-tserver:
	rm -rf $(TC_BUILD) build-asan

endif
