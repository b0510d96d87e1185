# make build   .venv/ with cnfperf (editable) + the engine and its static build
# make test    C unit tests, then pytest's unit tests (on every core) and end-to-end ones
#              (one at a time; they need root): the whole suite
# make check   the inner loop (a few minutes): unit tests, the C unit tests, and one
#              end-to-end run per data-plane family (pytest's smoke marker)
# make demo    a quick shoot-out of every usable data plane; prints the report's path
# make docs    rewrites the docs' generated blocks (fields, store schema, CSV columns, plots)
# make deps    Debian and Python packages a fresh Debian 12 needs (idempotent; root)
# make switches  VPP, Snabb, Click, FRR and BESS from their pinned sources (switches/build.sh,
#              switches/sources.lock): a mirror folder's copy (CNFPERF_SOURCES, default
#              ../shared/sources when it exists), else a download (CNFPERF_SOURCES_URL,
#              default the Debian archive apt uses for a source it has, then
#              upstream), checked either way; builds are cached per user
#              (~/.cache/cnfperf), so a second run or clone builds nothing
# make cluster  the test cluster's daemons (Kubernetes, etcd, Multus, crictl) from the Go
#              module proxy at the versions cluster/*/go.sum pin (cluster/build.sh; Go >= 1.24
#              on PATH or in /usr/local/go), cached per user like the switches
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -euo pipefail -c

VENV   := .venv
PYTHON ?= python3
ENGINE := engine/build/cnfperf-engine
# Defined before APT_PACKAGES, which := expands at once. What switches/build.sh
# needs to build VPP, Snabb, Click and FRR (VPP: CMake, its API generator's
# Python modules, OpenSSL, libnuma, libunwind; Click: C++, libpcap, and
# libsystemd for DPDK's static link; FRR: autotools, bison, flex, json-c,
# readline, libcap, pcre2, protobuf-c, Python's headers for its clippy,
# patchelf to point its programs at its library; BESS: gRPC and protobuf with
# their compilers, glog, gflags, zlib, and the gtest and Google benchmark
# headers its build.py insists on), and to download their sources (curl, CA
# certificates; sources.py is python3's).
SWITCH_BUILD_PACKAGES := \
	make patch xz-utils g++ cmake python3 python3-ply python3-jsonschema python3-yaml \
	libssl-dev libnuma-dev libunwind-dev libpcap-dev libsystemd-dev curl ca-certificates \
	autoconf automake libtool bison flex libjson-c-dev libreadline-dev libcap-dev libpcre2-dev \
	protobuf-c-compiler libprotobuf-c-dev python3-dev patchelf \
	libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev libgoogle-glog-dev \
	libgflags-dev zlib1g-dev libgtest-dev libbenchmark-dev
# Every Debian package the code, tests and benchmarks use; cnfperf/host/tools.py names
# the package of each tool they run, and a unit test keeps the two in step.
# The static engine (the network functions' minimal image) links libc.a
# (libc6-dev) and, for AF_XDP, libxdp.a, libbpf.a, libelf.a and libz.a.
# linux-image-amd64 is the VMs' kernel (the vm runtime boots it), not the host's;
# lab/parts.sh adds the lab's parts: a 6.12 guest kernel and QEMU >= 8 (igb, SR-IOV).
# python3-grpcio and python3-protobuf: Debian's python3 drives BESS through
# its Python API (cnfperf/dataplanes/bess_ctl.py).
APT_PACKAGES := \
	meson ninja-build pkg-config gcc libc6-dev python3-venv python3-pip \
	iproute2 nftables util-linux mount procps kmod libc-bin dpkg ethtool \
	runc busybox-static stress-ng podman conmon qemu-system-x86 linux-image-amd64 e2fsprogs \
	dpdk dpdk-dev libdpdk-dev libxdp-dev libbpf-dev libelf-dev zlib1g-dev xdp-tools \
	openvswitch-common openvswitch-switch openvswitch-switch-dpdk \
	tshark tcpdump iperf3 netsniff-ng sockperf linux-perf chromium-headless-shell \
	openssh-server openssh-client git containerd containernetworking-plugins \
	docker-registry skopeo frr python3-grpcio python3-protobuf \
	$(SWITCH_BUILD_PACKAGES)

.PHONY: deps build switches cluster test check demo docs clean

deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || echo $$p; \
	done)
	if [ -n "$$missing" ]; then
		echo "installing:" $$missing
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q
		# no service starts as it is installed (frr's routing daemons, sshd):
		# cnfperf starts its own where it needs them, in a netns
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
			chmod +x /usr/sbin/policy-rc.d
			trap 'rm -f /usr/sbin/policy-rc.d' EXIT
		fi
		apt-get install -y -q --no-install-recommends $(APT_PACKAGES)
	fi
	lab/parts.sh
	$(MAKE) --no-print-directory $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

build: $(VENV)/.installed
	[ -f engine/build/build.ninja ] || meson setup engine/build engine
	ninja -C engine/build

switches: deps
	switches/build.sh

cluster: deps
	cluster/build.sh

# The unit tests run on every core (pytest-xdist): they share no host state.
# The end-to-end ones one at a time: each takes the host lock and fills the cores.
test: deps build switches cluster
	meson test -C engine/build --print-errorlogs
	$(VENV)/bin/pytest -n auto tests/unit
	$(VENV)/bin/pytest tests/e2e

check: deps build switches
	meson test -C engine/build --print-errorlogs
	$(VENV)/bin/pytest -n auto tests/unit
	$(VENV)/bin/pytest -m smoke tests/e2e

demo: deps build
	$(VENV)/bin/cnfperf study shootout --quick

docs: $(VENV)/.installed
	$(VENV)/bin/python -m cnfperf.reference

# .switches stays: its builds take minutes. It links to builds in the per-user
# cache, which other clones share: switches/build.sh --prune removes what this
# checkout would not use; rm -rf ~/.cache/cnfperf .switches rebuilds from scratch.
clean:
	rm -rf $(VENV) engine/build
