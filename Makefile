# search_engine -- PGXS build.
#
#   make && make install          build and install the extension
#   make installcheck             pg_regress against a running, preloaded server
#   make check-all                everything CI runs (see test/run_all.sh)

MODULE_big = search_engine
EXTENSION = search_engine
DATA = src/search_engine--0.1.sql

SRCS = $(sort $(wildcard src/*.c src/*/*.c))
OBJS = $(SRCS:.c=.o)
# PGXS keeps one .deps/<basename>.Po per object, so two sources with one
# basename would lose each other's header dependencies (stale objects after a
# header change): refuse that.
DUP_BASENAMES := $(shell printf '%s\n' $(notdir $(SRCS)) | sort | uniq -d)
ifneq ($(DUP_BASENAMES),)
$(error sources share a basename: $(DUP_BASENAMES); rename one (header dependencies are tracked per basename))
endif

PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
SHLIB_LINK = -lzstd -lcurl
# the HTTP server (src/http/): libmicrohttpd, zlib for gzip bodies
SHLIB_LINK += -lmicrohttpd -lz
# client certificates of the HTTP server (src/http/http_auth.c)
SHLIB_LINK += -lgnutls
# CBOR request and response bodies (src/http/http_cbor.c)
SHLIB_LINK += -lcbor
# the transport's peer connections (as postgres_fdw links it)
SHLIB_LINK_INTERNAL = $(libpq)

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --outputdir=test/results

# no LLVM bitcode: it doubles build time and JIT does not reach our code
override with_llvm = no
# track header dependencies (.deps/), so a changed struct rebuilds its users
override autodepend = yes

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

override CFLAGS += -Wno-missing-field-initializers

unit-test:
	$(MAKE) -C test/unit check

check-all:
	test/run_all.sh

.PHONY: unit-test check-all
