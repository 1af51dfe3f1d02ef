#!/bin/bash
# build.sh: build every plugin of every source (setup.sh), as released and on compat
# (SOURCES and BUILDS choose fewer). Appends "source build plugin status detail" to $ECO_DIR/builds.tsv.
E=${ECO_DIR:?}
export GOFLAGS=-mod=mod GOWORK=off
NP="balloons memory-policy memory-qos memtierd resctrl-mon sgx-epc template topology-aware"
NPCMD="config-manager mpolset resource-annotator"
UP="device-injector differ hook-injector logger network-device-injector network-logger rdt template ulimit-adjuster v010-adapter wasm writable-cgroups"
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> $E/builds.tsv; }
b() { # source build plugin dir pkg [wasm]
  local src=$1 build=$2 p=$3 dir=$4 pkg=$5 wasm=$6 out=$E/bin/$1/$2/$3 log=$E/logs/build-$1-$2-$3.log
  mkdir -p $(dirname $out)
  if [ -n "$wasm" ]; then
    (cd $dir && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o $out.wasm $pkg) > $log 2>&1
  else
    (cd $dir && go build -o $out $pkg) > $log 2>&1
  fi
  if [ $? = 0 ]; then rec $src $build $p ok ""; else rec $src $build $p FAIL "$(grep -v '^go: downloading' $log | head -3 | tr '\t\n' '  ')"; fi
}
for src in ${SOURCES:-np-v0.14.0 np-main nri}; do
  for build in ${BUILDS:-released compat}; do
    d=$E/src/$src; [ $build = compat ] && d=$E/src/$src-compat
    case $src in
    np-*) for p in $NP; do b $src $build $p $d ./cmd/plugins/$p; done
          for p in $NPCMD; do b $src $build $p $d ./cmd/$p; done ;;
    nri)  for p in $UP; do w=; [ $p = wasm ] && w=1; b $src $build $p $d/plugins/$p . $w; done ;;
    esac
  done
done
