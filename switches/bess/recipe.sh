# BESS, paper 001's switch (switches/build.sh sources this: its recipe_bess
# builds in $work and installs into $out; the stamp covers the function's text).
#
# BESS's build.py builds its DPDK (deps/dpdk-19.11.4, where it looks for it;
# it applies its own deps/*.patch) and then bessd with its modules. Both are
# built for the corei7 baseline (SSE4.2), not -march=native as upstream does,
# as Debian builds its DPDK: a cached build then runs on any x86-64 host of
# this decade, and BESS is compared with the other switches on equal terms.
# bessd links its DPDK statically and Debian's libraries (gRPC, protobuf,
# glog, gflags, libunwind) dynamically: Debian's static libunwind.a is not
# position-independent. Its modules are linked into it too (upstream's
# default). Installed: bessd (core/, where bessctl looks for it), the Python
# API (pybess/, generated for Debian's python3-grpcio and python3-protobuf)
# and bessctl.
SOURCE=bess
ALSO=dpdk-19.11.4
recipe_bess() (
	cd "$work"
	mv _sources/dpdk-19.11.4 deps/
	# (build.py writes CPU as the value of DPDK's CONFIG_RTE_MACHINE)
	CPU='"default"' MAKEFLAGS=-j"$jobs" python3 build.py dpdk
	python3 -c 'import build; build.generate_protobuf_files()'
	make -C core -j"$jobs" CPU=corei7 BESS_LINK_DYNAMIC=1 bessd
	install -D -m 755 core/bessd "$out/core/bessd"
	strip "$out/core/bessd"
	cp -r pybess bessctl "$out/"
	find "$out" -name __pycache__ -prune -exec rm -rf {} +
	install -d "$out/bin"
	ln -s ../bessctl/bessctl "$out/bin/bessctl"
)
