#!/bin/sh
# require.sh GROUP...: fail at once, naming each missing prerequisite and how to get it, before a make
# target starts its work (the Makefile's require-GROUP targets call it; see "Prerequisites" there).
#
#   go       the go command, Go 1.26 or newer, and git
#   node     node and npm, for the JavaScript plugin
#   root     Linux, root, util-linux's unshare and iproute2's ip: the end-to-end suites and the cluster
#   e2e      runc, or apt-get to install it (the containerd suite's harness does)
#   crio     runc, conmon, libseccomp-dev, busybox-static and the CNI plugins, or apt-get to install them
#   cluster  runc and the CNI plugins bridge, host-local and loopback, or apt-get to install them
#
# Exit status 0 if everything is there, 1 (after listing all that is missing) if not.
set -u
missing=""
need() { missing="$missing
  $1"; }
have() { command -v "$1" >/dev/null 2>&1; }

# package NAME FILE: the Debian package NAME, which installs FILE, is there or can be installed.
need_package() {
	if [ ! -e "$2" ] && ! have apt-get; then
		need "$1: $2 is missing, and apt-get is not there to install it (install $1 yourself)"
	fi
}
need_runc() {
	if ! have runc && [ ! -e /usr/sbin/runc ] && [ ! -e /usr/local/sbin/runc ] && ! have apt-get; then
		need "runc: not found, and apt-get is not there to install it (install runc yourself)"
	fi
}
need_cni() {
	for p in bridge host-local loopback; do
		need_package containernetworking-plugins /usr/lib/cni/$p
	done
}

for group in "$@"; do
	case $group in
	go)
		if ! have go; then
			need "go: not on PATH (Go 1.26 or newer: https://go.dev/dl; CI puts /usr/local/go/bin on PATH)"
		else
			v=$(go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
			if [ -z "$v" ] || [ "$v" -lt 26 ]; then
				need "go: $(go env GOVERSION 2>/dev/null || echo 'an unknown version') found, Go 1.26 or newer needed (https://go.dev/dl)"
			fi
		fi
		have git || need "git: not on PATH (Debian: apt-get install git)"
		;;
	node)
		have node || need "node: not on PATH (Debian: apt-get install nodejs)"
		have npm || need "npm: not on PATH (Debian: apt-get install npm)"
		;;
	root)
		[ "$(uname -s)" = Linux ] || need "Linux: this is $(uname -s)"
		[ "$(id -u)" = 0 ] || need "root: running as uid $(id -u) (run it as root, as CI does, or with sudo -E)"
		have unshare || need "unshare: not on PATH (Debian: apt-get install util-linux)"
		have ip || need "ip: not on PATH (Debian: apt-get install iproute2)"
		;;
	e2e)
		need_runc
		;;
	crio)
		need_runc
		need_package conmon /usr/bin/conmon
		need_package libseccomp-dev /usr/include/seccomp.h
		need_package busybox-static /bin/busybox
		need_cni
		;;
	cluster)
		need_runc
		need_cni
		;;
	*)
		echo "require.sh: unknown prerequisite group $group" >&2
		exit 2
		;;
	esac
done

if [ -n "$missing" ]; then
	echo "make ${MAKE_TARGET:-(this target)} cannot start; missing:$missing" >&2
	exit 1
fi
