# tcopy: top-level build.
#
#   make            build the tserver, tserver-cli and the client library
#   make install    install tserver and tserver-cli into `pg_config --bindir`
#   make check      every test (unit, sanitizer and integration): test/run_tests.sh
#
# The daemon and everything without Postgres headers builds through
# src/tserver/Makefile into build/ (and build-asan/ with SANITIZE=1).

PG_CONFIG ?= pg_config
BINDIR := $(shell $(PG_CONFIG) --bindir 2>/dev/null)

.PHONY: all tserver install check clean
all: tserver

tserver:
	$(MAKE) -C src/tserver

install: tserver
	@test -n "$(BINDIR)" || { echo "pg_config not found: set PG_CONFIG"; exit 1; }
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 build/tserver build/tserver-cli $(DESTDIR)$(BINDIR)/

check:
	test/run_tests.sh

clean:
	rm -rf build build-asan
