#!/bin/bash
# setup.sh: the sources of docs/ecosystem.md in $ECO_DIR/src, each twice: as
# released (NAME) and with containerd/nri replaced by $NRIKIT's compat/nri
# (NAME-compat). NRIPLUGINS_GIT and NRI_GIT are git repositories of
# containers/nri-plugins and containerd/nri; $ECO_DIR/pods.yaml is the scenario.
set -eu
: "${ECO_DIR:?}" "${NRIKIT:?}" "${NRIPLUGINS_GIT:?}" "${NRI_GIT:?}"
mkdir -p "$ECO_DIR/src" "$ECO_DIR/bin" "$ECO_DIR/logs"
cd "$ECO_DIR/src"
add() { git -C "$1" worktree add --detach "$ECO_DIR/src/$2" "$3" >/dev/null; }
add "$NRIPLUGINS_GIT" np-v0.14.0 v0.14.0; add "$NRIPLUGINS_GIT" np-v0.14.0-compat v0.14.0
add "$NRIPLUGINS_GIT" np-main 0705acc8; add "$NRIPLUGINS_GIT" np-main-compat 0705acc8
add "$NRI_GIT" nri 8ec8b28; add "$NRI_GIT" nri-compat 8ec8b28
replace() { (cd "$1" && go mod edit -replace github.com/containerd/nri="$NRIKIT/compat/nri" -replace github.com/nrikit/nrikit="$NRIKIT"); }
replace np-v0.14.0-compat; replace np-main-compat
for d in nri-compat/plugins/*/; do [ -f "$d/go.mod" ] && replace "$d"; done
# The pods of cmd/nri/examples/qos.yaml, without its plugin and expectations,
# the Guaranteed pod asking for 500m.
sed -e '/^plugins:/,/^steps:/{/^steps:/!d}' -e '/^    expect:/,/^      resources:/d' -e '/memory: 64Gi/d' \
    -e 's/{cpu: "2", memory: 4Gi}/{cpu: 500m, memory: 512Mi}/' "$NRIKIT/cmd/nri/examples/qos.yaml" > "$ECO_DIR/pods.yaml"
cp np-v0.14.0/sample-configs/balloons-config.yaml "$ECO_DIR/balloons.yaml"
cp np-v0.14.0/sample-configs/template-config.yaml "$ECO_DIR/template.yaml"
cp np-v0.14.0/sample-configs/topologyaware-config.yaml "$ECO_DIR/topology-aware.yaml"
