package scenario

// The cgroup drivers of Node.CgroupDriver.
const (
	CgroupDriverSystemd  = "systemd"
	CgroupDriverCgroupfs = "cgroupfs"
)

// checkKube checks what the scenario says of Kubernetes: the node's
// cgroup driver, and that no container requests more than its limit, as
// the API server refuses.
func (c *checker) checkKube() {
	if n := c.s.Node; n != nil {
		switch n.CgroupDriver {
		case "", CgroupDriverSystemd, CgroupDriverCgroupfs:
		default:
			c.errorf(c.line("node", "cgroupDriver"), "node: unknown cgroupDriver %q (systemd or cgroupfs)", n.CgroupDriver)
		}
		if n.Memory != nil && *n.Memory == 0 {
			c.errorf(c.line("node", "memory"), "node: memory must be more than 0")
		}
	}
	for i, ctr := range c.s.Containers {
		if ctr == nil || ctr.Requests == nil || ctr.Limits == nil {
			continue
		}
		req, lim := ctr.Requests, ctr.Limits
		if req.CPU != nil && lim.CPU != nil && *req.CPU > *lim.CPU {
			c.errorf(c.line("containers", i, "requests", "cpu"), "container %q: CPU request %s is more than its limit %s", ctr.Name, req.CPU, lim.CPU)
		}
		if req.Memory != nil && lim.Memory != nil && *req.Memory > *lim.Memory {
			c.errorf(c.line("containers", i, "requests", "memory"), "container %q: memory request %s is more than its limit %s", ctr.Name, req.Memory, lim.Memory)
		}
	}
}
