# FRR, the routing daemons of `frr:static` (switches/build.sh sources this: its
# recipe_frr builds in $work and installs into $out; the stamp covers the
# function's text).

# Debian 12's FRR (8.4) has no BFD on static routes (staticd's `bfd`, FRR
# 8.5 on): FRR 10.3 is built for them, with the libyang it needs (>= 2.1.128;
# Debian 12 has 2.1.30) built first and linked into libfrr. Only the daemons
# `frr:static` runs, and vtysh: zebra, mgmtd (FRR 10 configures staticd
# through it), staticd, bfdd. libfrr stays a shared library: a static link
# leaves out the YANG modules nothing calls into (each registers itself as
# the library loads), which mgmtd then looks for on disk. The programs find
# it beside them ($ORIGIN), so the build runs from the cache.
# Compiled-in paths, none of which a run uses as it is: the configuration
# directory does not exist (each daemon is given its file, and mgmtd, which
# reads its back-ends' files from that directory alone, is configured through
# vtysh instead); the state directory (run and lib state alike) is where a
# daemon started with `-N PATHSPACE` keeps its sockets and mgmtd its commit
# files: /run/cnfperf/routing/lib/frr/PATHSPACE, which cnfperf makes a link to
# the NF's own directory (nfs/frr.py). (A --localstatedir ending in /frr has
# that part dropped by FRR's configure: hence `routing`.)
ALSO=libyang
recipe_frr() (
	export PATH=/usr/bin:$PATH
	local yang=$work/_sources/libyang
	cmake -G Ninja -S "$yang" -B "$yang/build" -DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_INSTALL_PREFIX="$work/_libyang" -DBUILD_SHARED_LIBS=OFF \
		-DCMAKE_POSITION_INDEPENDENT_CODE=ON -DENABLE_TESTS=OFF -DENABLE_TOOLS=OFF
	ninja -C "$yang/build" -j"$jobs" install
	cd "$work"
	./bootstrap.sh
	local off="" d
	for d in bgpd ripd ripngd ospfd ospf6d ldpd nhrpd eigrpd babeld isisd pimd pim6d pbrd \
		fabricd vrrpd pathd; do off+=" --disable-$d"; done
	# libyang.a's own needs (pcre2, libm) follow it on every link
	# shellcheck disable=SC2086
	PKG_CONFIG_PATH="$work/_libyang/lib/pkgconfig" CPPFLAGS="-I$work/_libyang/include" \
		LDFLAGS="-L$work/_libyang/lib" LIBS="-lpcre2-8 -lm" \
		./configure --prefix=/usr --sysconfdir=/nonexistent/cnfperf-frr \
		--localstatedir=/run/cnfperf/routing --runstatedir=/run/cnfperf/routing/lib \
		--enable-user=frr --enable-group=frr --enable-vty-group=frrvty \
		--disable-static --disable-doc --disable-snmp --disable-scripting --disable-fpm \
		--disable-irdp $off
	make -j"$jobs"
	make install DESTDIR="$work/_install"
	for d in zebra mgmtd staticd bfdd; do
		install -D -m 755 "$work/_install/usr/sbin/$d" "$out/sbin/$d"
	done
	install -D -m 755 "$work/_install/usr/bin/vtysh" "$out/bin/vtysh"
	for d in libfrr.so.0 libmgmt_be_nb.so.0; do
		install -D -m 644 "$(readlink -f "$work/_install/usr/lib/$d")" "$out/lib/$d"
	done
	strip "$out"/sbin/* "$out/bin/vtysh" "$out"/lib/*
	for d in "$out"/sbin/* "$out/bin/vtysh" "$out"/lib/*; do
		patchelf --set-rpath '$ORIGIN/../lib' "$d"
	done
)
