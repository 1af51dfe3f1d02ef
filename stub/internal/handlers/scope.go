package handlers

import "github.com/nrikit/nrikit/api"

// InScope returns the pods and containers of a Synchronize snapshot that
// a scope admits: the pods matchPod accepts, and the containers
// matchContainer accepts with their pod (nil if the snapshot lacks it).
// The stub and stub/wasmguest pass their scope's matchers.
func InScope(pods []*api.PodSandbox, ctrs []*api.Container,
	matchPod func(*api.PodSandbox) bool, matchContainer func(*api.PodSandbox, *api.Container) bool) ([]*api.PodSandbox, []*api.Container) {
	byID := make(map[string]*api.PodSandbox, len(pods))
	var inPods []*api.PodSandbox
	for _, p := range pods {
		byID[p.GetId()] = p
		if matchPod(p) {
			inPods = append(inPods, p)
		}
	}
	var inCtrs []*api.Container
	for _, c := range ctrs {
		if matchContainer(byID[c.GetPodSandboxId()], c) {
			inCtrs = append(inCtrs, c)
		}
	}
	return inPods, inCtrs
}
