// Package scenario reads the YAML scenario files that the nri command's
// runtime simulator plays: which pods and containers exist, which plugins
// the simulated runtime launches, how it validates their changes, and the
// lifecycle steps it goes through.
//
// A scenario looks like this (every key is optional unless noted):
//
//	name: demo
//	description: one pod, one container, one plugin
//	pods:
//	  - name: web                 # required, unique
//	    namespace: frontend       # default "default"
//	    uid: ...                  # default derived from namespace/name
//	    labels: {app: web}
//	    annotations: {...}
//	    runtimeHandler: runc
//	    overhead: {cpu: 100m, memory: 64Mi}  # pod.spec.overhead
//	containers:
//	  - name: nginx               # required, unique within its pod
//	    pod: web                  # required: a pod above
//	    image: docker.io/library/nginx:1.27
//	    args: [nginx, -g, daemon off;]
//	    env: [PORT=8080]          # KEY=VALUE
//	    mounts:
//	      - {destination: /data, source: /srv/data, type: bind, options: [rbind, ro]}
//	    requests: {cpu: 250m, memory: 256Mi}  # Kubernetes' requests and limits:
//	    limits: {cpu: "1", memory: 512Mi}     # the QoS class, cgroups, resources
//	    resources: {cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000,
//	                cpusetCpus: "0-1", cpusetMems: "0", memoryLimit: 256Mi}
//	    labels: {...}
//	    annotations: {...}
//	node:
//	  cgroupDriver: systemd       # kubelet's: systemd (default) or cgroupfs
//	  memory: 64Gi                # default: this machine's
//	plugins:                      # launched by the simulated runtime
//	  - name: logger              # a sample plugin of the nri binary ...
//	    index: "10"               # required, two digits
//	    args: [-events=all]       # command-line arguments
//	    config: |                 # sent to the plugin in Configure
//	      events: [CreateContainer]
//	    files:                    # written to the plugin's working directory
//	      hooks.d/x.json: "{...}"
//	  - name: mine
//	    index: "50"
//	    path: ./bin/my-plugin     # ... or an executable or a WASM module (relative to the scenario file)
//	  - name: wasm-env
//	    index: "60"
//	    wasmPackage: ./wasm-env   # ... or a Go package built into a WASM module (no args, no files)
//	defaultValidator:             # the default validator (validator.Config)
//	  enable: true
//	  rejectOCIHookAdjustment: true
//	steps:                        # required: exactly one action per step
//	  - runPod: web
//	  - createContainer: nginx    # or web/nginx when the name is not unique
//	  - startContainer: nginx
//	  - updateContainer: nginx
//	    resources: {memoryLimit: 512Mi}
//	  - stopContainer: nginx
//	  - removeContainer: nginx
//	  - stopPod: web
//	  - removePod: web
//	  - createContainer: other
//	    expectError: rejected     # the step must fail, with this text in the error
//	  - createContainer: app
//	    expect:                   # the container's spec afterwards must hold these
//	      env: [WASM_ENV=hello]
//	      annotations: {example.com/key: value}
//	      resources: {cpusetCpus: "2,3"}
//
// Decoding is strict: unknown keys, duplicate keys and values of the wrong
// type are errors, and every error names the file and line, such as
//
//	scenario.yaml:12: container "c1": unknown pod "gpu"
//
// A step without expectError must succeed; one with it must fail with an
// error containing the text. A container step with expect must succeed
// and leave the container's OCI spec with those environment entries,
// annotations and resources. Requests and limits are what the simulator
// turns into the pod's QoS class, cgroups and resources, as kubelet does
// (internal/kubepod); resources are set over what they give. [Scenario.Check] reports other mistakes
// (steps in an impossible order, such as creating a container of a pod
// that is not running) before anything runs.
package scenario
