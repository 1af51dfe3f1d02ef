#!/bin/bash
# run.sh SOURCE BUILD PLUGIN...: nri check plugin, nri run and nri serve on each
# built plugin; appends "source build plugin mode result detail" to $ECO_DIR/results.tsv; logs in $ECO_DIR/logs.
E=${ECO_DIR:?}
NRI=${NRI:-nri}
src=$1 build=$2; shift 2
rec() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$src" "$build" "$1" "$2" "$3" "$4" >> $E/results.tsv; }
resmgr() { [ "$1" = topology-aware ] || [ "$1" = balloons ] || { [ "$1" = template ] && [ "${src#np}" != "$src" ]; }; }
# args P MODE STATE SOCK: the plugin's arguments (MODE launched or external)
args() {
  local p=$1 mode=$2 st=$3 sock=$4
  if resmgr $p; then
    echo "-nri-socket $sock -config-file $E/$p.yaml -state-dir $st/state -pid-file $st/pid -nri-plugin-index 90 -nri-plugin-name $p"
    return
  fi
  [ $mode = launched ] && return
  case $p in
  template) [ $src = nri ] && echo "-idx 90 -name $p -socket $sock" || echo "-idx 90 -name $p";;
  network-device-injector|network-logger|ulimit-adjuster|v010-adapter) echo "-idx 90 -socket $sock";;
  device-injector|hook-injector|logger|writable-cgroups) echo "-idx 90 -socket-path $sock";;
  differ) echo "-indices 10,90 -socket-path $sock";;
  rdt) echo "-idx 90";;
  *) echo "-idx 90 -name $p";;
  esac
}
for p in "$@"; do
  case $p in config-manager|mpolset|resource-annotator) continue;; esac # not NRI plugins
  bin=$E/bin/$src/$build/$p
  [ -f $bin.wasm ] && bin=$bin.wasm
  [ -e $bin ] || { rec $p all "not built" ""; continue; }
  st=$(mktemp -d /tmp/eco-XXXXXX); log=$E/logs/$src-$build-$p
  # check
  if resmgr $p; then
    rm -f $st/nri.sock
    ( timeout 120 $NRI check plugin --socket $st/nri.sock --timeout 10s > $log-check.txt 2>&1 ) &
    ck=$!; sleep 1
    timeout 90 $bin $(args $p external $st $st/nri.sock) > $log-check-plugin.txt 2>&1
    wait $ck
  elif [[ $bin == *.wasm ]]; then
    timeout 300 $NRI check plugin --name 90-$p --timeout 10s $bin > $log-check.txt 2>&1
  else
    timeout 120 $NRI check plugin --name 90-$p --timeout 10s -- $bin $(args $p launched $st) > $log-check.txt 2>&1
  fi
  rec $p check "$(tail -1 $log-check.txt | cut -c1-60)" "$(grep '^FAIL' $log-check.txt | cut -c1-62,67- | sed 's/  */ /g' | tr '\n' ';' | cut -c1-400)"
  # run: launched by the simulated runtime as 90-NAME
  mkdir -p $st/plugins
  if [[ $bin == *.wasm ]]; then cp $bin $st/plugins/90-$p
  else printf '#!/bin/sh\nexec %s %s\n' "$bin" "$(args $p launched $st $st/run.sock)" > $st/plugins/90-$p; chmod +x $st/plugins/90-$p; fi
  timeout 180 $NRI run $E/pods.yaml --plugin $st/plugins/90-$p --timeout 60s > $log-run.txt 2> $log-run.err
  rec $p run "$(tail -1 $log-run.txt | cut -c1-70)" "$(grep -h 'not registered\|^  step' $log-run.txt $log-run.err | head -3 | tr '\n' ';' | cut -c1-300)"
  # serve: the plugin connects on its own (WASM: loaded by nri serve)
  if [[ $bin == *.wasm ]]; then
    timeout 180 $NRI serve --socket $st/serve.sock --scenario $E/pods.yaml --wait-plugins 0 --plugin $st/plugins/90-$p --timeout 60s > $log-serve.txt 2>&1
  else
    rm -rf $st/state
    timeout 200 unshare -m bash -c "mkdir -p /run/nri && mount -t tmpfs -o mode=0755 tmpfs /run/nri && cd $st &&
      { $NRI serve --socket /run/nri/nri.sock --scenario $E/pods.yaml --wait-plugins $( [ $p = differ ] && echo 2 || echo 1) --timeout 60s > $log-serve.txt 2>&1 & s=\$!; sleep 0.5;
        $bin $(args $p external $st /run/nri/nri.sock) > $log-serve-plugin.txt 2>&1 & b=\$!; wait \$s; sleep 1; kill \$b 2>/dev/null; wait \$b; }"
  fi
  rec $p serve "$(tail -1 $log-serve.txt | cut -c1-70)" "$(grep -h 'not registered\|^  step' $log-serve.txt | head -3 | tr '\n' ';' | cut -c1-300)"
  rm -rf $st
done
